"""The run's environment: it owns the backend, and gives each worker its own endpoint.

Today an endpoint is the backend's own address (a pass-through); a network fault puts a proxy there,
so one worker can be cut off while the others, the control and the sink are not. The control builds a
worker's connection settings from the endpoint it is handed, never from the backend's address.
"""

from __future__ import annotations

from chaos.backends.base import Backend, BackendSettings, Endpoint
from chaos.backends.registry import Provider


class Environment:
    def __init__(self, provider: Provider, settings: BackendSettings) -> None:
        self.backend: Backend = provider.open(settings)

    def endpoint_for(self, worker: str) -> Endpoint:
        """Where `worker` reaches the backend."""
        return self.backend.endpoint

    def close(self) -> None:
        self.backend.close()
