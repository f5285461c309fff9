"""Package discovery, the one thing pyproject.toml cannot say: every package under chaos/ is found (a new
backend kind's package ships without an edit here), and the repository's top-level targets/ and
scenarios/ join them as chaos.bundled.* (their folders and data files: pyproject.toml's package-dir and
package-data)."""

from setuptools import find_packages, setup

setup(packages=[*find_packages(include=["chaos", "chaos.*"]), "chaos.bundled.targets", "chaos.bundled.scenarios"])
