"""The run's environment: it owns the backend, and gives each worker its own endpoint.

Without network faults an endpoint is the backend's own address (a pass-through); a scenario with network
faults gets a proxy per worker (`chaos.runtime.network`), so one worker can be cut off while the others,
the control and the sink are not. The control builds a worker's connection settings from the endpoint it
is handed, never from the backend's address.
"""

from __future__ import annotations

from pathlib import Path

from chaos.backends.base import Backend, BackendSettings, Endpoint
from chaos.backends.registry import Provider
from chaos.errors import HarnessError
from chaos.runtime.network import Network, WorkerLink


class Environment:
    def __init__(self, provider: Provider, settings: BackendSettings, network_dir: Path | None = None) -> None:
        """`network_dir`: where the run's Toxiproxy may write (its log), when the scenario needs proxies."""
        self.backend: Backend = provider.open(settings)
        self.network: Network | None = None
        if network_dir is not None:
            try:
                self.network = Network(self.backend, network_dir, settings.run_id, settings.on_event or _ignore)
            except BaseException:
                self.backend.close()
                raise

    def endpoint_for(self, worker: str) -> Endpoint:
        """Where `worker` reaches the backend."""
        if self.network is None:
            return self.backend.endpoint
        return self.network.endpoint_for(worker)

    def link(self, worker: str) -> WorkerLink:
        if self.network is None:
            raise HarnessError("this run has no per-worker proxies: its scenario declares no network fault")
        return self.network.link(worker)

    def close(self) -> None:
        try:
            if self.network is not None:
                self.network.close()
        finally:
            self.backend.close()


def _ignore(record: object) -> None:
    """No ledger to journal into (a backend opened outside a run)."""
