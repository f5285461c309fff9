"""Backends (PostgreSQL, ...) that a scenario runs its queue against, from a local, docker or external provider."""
