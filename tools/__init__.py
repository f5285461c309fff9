"""Maintainers' tools that are no part of the installed package: the docs' example outputs."""
