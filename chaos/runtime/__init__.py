"""The runtime: run, scenario context, sink and gates, supervisor, nemesis, environment."""
