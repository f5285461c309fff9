"""A queue-chaos plugin, as a third party writes one: its entry points (pyproject.toml) add the memq backend
kind (`kind`), the freeze fault kind (`freeze`) and the memq_pop target (`memq_pop/`)."""
