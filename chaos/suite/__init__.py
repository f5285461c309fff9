"""Suites: many cells (target variant x scenario x seed) run as one job, in parallel and in shards,
each judged against the verdict it must give, and reported as one (suite.json, junit.xml, summary.md)."""
