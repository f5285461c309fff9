"""Exploration: Hypothesis searches fault schedules against a target, shrinks a violation to its smallest
schedule, and writes that schedule out as a scenario file that replays it (`chaos explore`)."""
