"""The external NATS provider: your server (--backend-url or CHAOS_NATS_URL, a nats:// URL) with JetStream
enabled; the run's streams (named from the run id) are its own, deleted at the run's end. Their description
is their marker object: the run's marker, which the control gives each stream as it creates it."""

from __future__ import annotations

from typing import ClassVar

import nats.js.errors

from chaos.backends.external import ExternalServer, mask_password
from chaos.backends.nats import ENV_URL
from chaos.errors import ConfigError, HarnessError
from chaos.worker.nats import TRANSIENT, JetStream, Names, stream_for

API_TIMEOUT_S = 5.0


class ExternalNats(ExternalServer):
    kind: ClassVar[str] = "nats"
    name: ClassVar[str] = "NATS"
    env_url: ClassVar[str] = ENV_URL
    example_url: ClassVar[str] = "nats://127.0.0.1:4222"
    schemes: ClassVar[tuple[str, ...]] = ("nats", "tls")

    namespace_for = staticmethod(stream_for)

    def create_namespace(self) -> None:
        """The control creates the run's streams: check the server answers and has JetStream."""
        try:
            client = JetStream(self.url, "chaos-control")
        except TRANSIENT as exc:
            raise ConfigError(f"Expected a reachable NATS server at {mask_password(self.url)} (from --backend-url "
                              f"or {ENV_URL}), but got: {exc!r}. Check the address, or drop --backend external to "
                              "let the suite start its own server.") from exc
        try:
            client.run(client.js.account_info(), API_TIMEOUT_S)
        except TRANSIENT as exc:
            raise ConfigError(f"Expected JetStream on the NATS server {mask_password(self.url)}, but its account "
                              f"info said: {exc!r}. Start the server with -js (or jetstream {{}} in its "
                              "configuration), or drop --backend external.") from exc
        finally:
            client.close()

    def namespace_marker(self) -> str | None:
        """The jobs stream's description (the control creates it first)."""
        try:
            client = JetStream(self.url, "chaos-control")
            try:
                info = client.run(client.js.stream_info(Names(self.namespace).stream), API_TIMEOUT_S)
            except nats.js.errors.NotFoundError:
                return None
            finally:
                client.close()
        except TRANSIENT as exc:
            raise HarnessError(f"could not look for the stream {self.namespace} on {mask_password(self.url)}; delete "
                               f"it by hand (nats stream rm) if it is left: {exc!r}") from exc
        return str(info.config.description or "")

    def drop_namespace(self) -> None:
        """Delete the run's streams (the consumer goes with its stream)."""
        names = Names(self.namespace)
        try:
            client = JetStream(self.url, "chaos-control")
            try:
                for stream in (names.stream, names.dead_stream):
                    try:
                        client.run(client.js.delete_stream(stream), API_TIMEOUT_S)
                    except nats.js.errors.NotFoundError:
                        pass
            finally:
                client.close()
        except TRANSIENT as exc:
            raise HarnessError(f"could not delete the streams {names.stream} and {names.dead_stream} on "
                               f"{mask_password(self.url)}; delete them by hand (nats stream rm): {exc!r}") from exc

    def url_at(self, host: str, port: int) -> str:
        return self.parts._replace(netloc=self.netloc_at(host, port)).geturl()
