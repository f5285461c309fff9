"""The run's network: one Toxiproxy proxy per worker in front of the backend, so that one worker can be
partitioned while the others, the control's own connections and the sink are not.

A worker's proxy is made the first time the worker asks for its endpoint and kept for the whole run (a
restarted worker gets the same one; a backend restart keeps the upstream port, so the proxies stay
right). At the end every proxy of the run is deleted, which also removes whatever a fault left on it.
Each proxy is journaled before it is created, so the proxies of a runner killed outright can be deleted
by `chaos clean` from a server that outlives it (the user's TOXIPROXY_URL); a server the run started
dies with it. A proxy carries no marker object, so its name does: the run's id and random marker
(`chaos.ownership`), and clean deletes only names of exactly that form.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chaos import events, ports
from chaos.backends.base import Backend, Endpoint, EventSink
from chaos.errors import ChaosError, HarnessError
from chaos.ownership import is_marker, new_marker
from chaos.toxiproxy.client import ToxiproxyControl
from chaos.toxiproxy.provider import ToxiproxyServer, start_toxiproxy
from chaos.toxiproxy.proxy import split_address


def proxy_prefix(run_id: str, marker: str) -> str:
    """How every proxy name of the run begins; the worker's name follows."""
    return f"{run_id}-{marker}-"


class WorkerLink:
    """One worker's proxy, as fault kinds act on it (`chaos.faults.base.NetworkLink`)."""

    def __init__(self, control: ToxiproxyControl, proxy: str, listen: str, port: int) -> None:
        self.control = control
        self.proxy = proxy
        self.listen = listen
        self.port = port  # reserved for it (chaos.ports): a heal re-listens on it

    def enabled(self, enabled: bool) -> None:
        self.control.enabled(self.proxy, enabled)

    def add_toxic(self, name: str, kind: str, stream: str, attributes: dict[str, int], toxicity: float = 1.0) -> None:
        self.control.add_toxic(self.proxy, name, kind, stream, attributes, toxicity)

    def remove_toxic(self, name: str) -> None:
        self.control.remove_toxic(self.proxy, name)


class Network:
    """The run's Toxiproxy (`chaos.toxiproxy.provider`) and a proxy per worker on it."""

    def __init__(self, backend: Backend, log_dir: Path, run_id: str, journal: EventSink) -> None:
        self.backend = backend
        self.marker = new_marker()
        self.prefix = proxy_prefix(run_id, self.marker)  # the run's proxies on a shared server are told apart by it
        self.journal = journal
        self.links: dict[str, WorkerLink] = {}
        self.server: ToxiproxyServer = start_toxiproxy(log_dir, self._seen)
        journal(events.network_start(self.server.kind, self.server.control.url, self.marker))

    def _seen(self, what: str, proxy: str, data: dict[str, Any]) -> None:
        """What the embedded server saw happen on a worker's proxy, into the ledger (the proof of a cut)."""
        if not proxy.startswith(self.prefix):
            return
        worker = proxy.removeprefix(self.prefix)
        if what == "disabled" and data.get("connections_closed"):
            self.journal(events.network_cut(worker, int(data["connections_closed"])))
        elif what == "held":
            self.journal(events.network_held(worker, int(data["bytes"])))

    def endpoint_for(self, worker: str) -> Endpoint:
        link = self.links.get(worker)
        if link is None:
            upstream = self.backend.endpoint
            name = self.prefix + worker
            # A reserved port: a partition closes the listener, and healing must find its port still free.
            port = ports.reserve()
            try:
                self.journal(events.network_proxy(worker, name, self.server.control.url))
                listen = self.server.control.create(name, f"{upstream.host}:{upstream.port}",
                                                    listen=f"{ports.HOST}:{port}")
            except BaseException:
                ports.release(port)
                raise
            link = self.links[worker] = WorkerLink(self.server.control, name, listen, port)
        host, port = split_address(link.listen)
        return self.backend.endpoint_at(host, port)

    def link(self, worker: str) -> WorkerLink:
        link = self.links.get(worker)
        if link is None:
            raise HarnessError(f"worker {worker} has no proxy: it was never started in this run")
        return link

    def close(self) -> None:
        """Delete every proxy of the run (and with it any toxic or disabled state), then stop the server."""
        try:
            for link in self.links.values():
                self.server.control.delete(link.proxy)
        finally:
            try:
                self.server.close()
            finally:
                ports.release(*(link.port for link in self.links.values()))


def clean_after_killed_run(run_id: str, started: dict[str, Any], proxies: Sequence[dict[str, Any]]) -> tuple[bool, str]:
    """Delete the proxies a killed run journaled (`network.proxy`) from the server it used (`network.start`),
    when that server outlives the runner: only the user's (external); the binary and the embedded server
    died with it. Only names of the run's own form (its id and the marker `network.start` journaled, then a
    worker's name) are touched. (done, what was deleted or what is left and how to delete it)."""
    url, marker = str(started.get("url") or ""), str(started.get("marker") or "")
    journaled = sorted({str(p.get("name") or "") for p in proxies if p.get("url") == url})
    if started.get("kind") != "external" or not journaled:
        return True, ""
    names = [name for name in journaled if is_marker(marker) and name.startswith(proxy_prefix(run_id, marker))
             and name != proxy_prefix(run_id, marker)]
    if foreign := [name for name in journaled if name not in names]:
        return False, (f"its proxies {', '.join(foreign)} on the Toxiproxy at {url} are not touched: their names are "
                       "not of the form the suite gives this run's")
    try:
        control = ToxiproxyControl(url)
        deleted = [name for name in names if control.delete_if_present(name)]
    except ChaosError as exc:
        return False, (f"its proxies {', '.join(names)} may be left on the Toxiproxy at {url}, which did not answer "
                       f"({exc}); run `chaos clean` again once it is up, or delete them with "
                       f"`curl -X DELETE {url}/proxies/NAME`")
    return True, f"deleted its proxies {', '.join(deleted)} from the Toxiproxy at {url}" if deleted else ""
