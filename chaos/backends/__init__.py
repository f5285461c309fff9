"""Backends a queue runs against (PostgreSQL, ...): one package per kind, each with providers
(local, external, ...) registered in `chaos.backends.registry`, all behind `chaos.backends.base.Backend`."""
