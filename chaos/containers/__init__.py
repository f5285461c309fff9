"""Containers: the Docker engine the docker provider and container faults act through, the images the
suite builds locally (no registry is needed), and the labels by which nothing of a run outlives it."""
