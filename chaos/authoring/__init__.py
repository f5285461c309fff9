"""For target authors: `chaos target new` writes a target that runs green at once, and `chaos target check`
proves a target's seams (toml, setup, enqueue, snapshot, one worker's probes) before any fault runs."""
