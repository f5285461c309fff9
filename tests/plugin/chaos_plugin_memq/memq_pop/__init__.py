"""The memq_pop target: its folder (target.toml, control.py, worker.py) ships as this package's data."""
