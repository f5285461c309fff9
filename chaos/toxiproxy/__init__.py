"""Toxiproxy: an embedded server that speaks the Toxiproxy HTTP API, and the suite's client of any
Toxiproxy (the embedded one, a `toxiproxy-server` binary, or one at TOXIPROXY_URL).

The embedded server exists so that partitions need nothing outside the suite; it follows the reference
in ../shared/reference/toxiproxy-api.md (Toxiproxy v2.12.0), with the deviations its README section
lists. Modules: `toxics` (the toxic types: attributes and what each does to a stream of chunks),
`proxy` (listeners, connections, the data path), `api` (the HTTP API over the proxies), `server`
(the asyncio loop that runs them, in a thread or in the foreground), `client` (the control the suite
uses, through toxiproxy-python), `provider` (which Toxiproxy a run uses: TOXIPROXY_URL, a binary, or
the embedded one).
"""
