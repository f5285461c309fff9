"""The docker PostgreSQL provider: the host's own PostgreSQL binaries in an image built here, started
through testcontainers-python's Postgres module (its POSTGRES_USER/DB settings and its psql readiness
check are honoured by the image's entrypoint), with the cluster in the container's volume and the same
server settings as the local provider's."""

from __future__ import annotations

import glob
import os
from typing import TYPE_CHECKING, Any, ClassVar

import psycopg
from psycopg.conninfo import make_conninfo

from chaos.backends.docker_server import HOST, DockerServer
from chaos.backends.postgres.base import PostgresBackend
from chaos.backends.postgres.cluster import DATABASE, SUPERUSER
from chaos.backends.postgres.local import SERVER_SETTINGS
from chaos.containers.images import ImageSpec, passwd, shell
from chaos.errors import ConfigError

if TYPE_CHECKING:
    from testcontainers.core.container import DockerContainer

PORT = 5432
UID = 999  # the image's postgres user: the server refuses to run as root
ENTRYPOINT = "/usr/local/bin/queue-chaos-postgres"
# Makes the cluster on the first start only (a restart finds it in the volume), then runs the server.
ENTRYPOINT_SCRIPT = """#!/bin/sh
set -e
export PATH="{bindir}:$PATH"
PGDATA=/data/pgdata
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    initdb -D "$PGDATA" -A trust -U "$POSTGRES_USER" -N -E UTF8 --locale=C --wal-segsize=1 >/dev/null
    echo "host all all 0.0.0.0/0 trust" >> "$PGDATA/pg_hba.conf"
    echo "CREATE DATABASE \\"$POSTGRES_DB\\";" | postgres --single -D "$PGDATA" -j postgres >/dev/null
fi
exec postgres -D "$PGDATA" "$@"
"""


def _bindir() -> str:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))
    if not found:
        raise ConfigError("The docker PostgreSQL provider builds its image from the host's PostgreSQL binaries, which "
                          "are not installed. Install them (Debian: apt-get install postgresql, or run ci/setup.sh).")
    return os.path.dirname(found[-1])


class DockerPostgres(DockerServer, PostgresBackend):
    kind: ClassVar[str] = "postgres"
    name: ClassVar[str] = "PostgreSQL"
    container_ports: ClassVar[dict[str, int]] = {"client": PORT}
    python_modules: ClassVar[tuple[str, ...]] = (*DockerServer.python_modules, "testcontainers.community.postgres")

    @property
    def dsn(self) -> str:  # type: ignore[override]  # known once the port is
        return make_conninfo(host=HOST, port=str(self.port), dbname=DATABASE, user=SUPERUSER)

    def image(self) -> ImageSpec:
        bindir = _bindir()
        version = os.path.basename(os.path.dirname(bindir))
        return ImageSpec(
            "postgres", (bindir, os.path.join(os.path.dirname(bindir), "lib"), f"/usr/share/postgresql/{version}",
                         "/usr/share/zoneinfo", *shell()),
            files={**passwd(("postgres", UID)), ENTRYPOINT: ENTRYPOINT_SCRIPT.format(bindir=bindir)},
            executables=(ENTRYPOINT,), owned_dirs={"/data": UID},
            changes=(f'ENTRYPOINT ["{ENTRYPOINT}"]', f"USER {UID}", f"ENV PATH={bindir}:/usr/bin"))

    def wrapper(self, image: str) -> DockerContainer:
        from testcontainers.community.postgres import PostgresContainer

        container = PostgresContainer(image, port=PORT, username=SUPERUSER, password="unused", dbname=DATABASE,
                                      driver=None)
        settings = {**SERVER_SETTINGS, "listen_addresses": "*"}
        container.with_command([arg for key, value in settings.items() for arg in ("-c", f"{key}={value}")])
        return container

    def ready(self) -> bool:
        try:
            with psycopg.connect(self.dsn, connect_timeout=2) as conn:
                conn.execute("SELECT 1")
            return True
        except psycopg.Error:
            return False

    def url_at(self, host: str, port: int) -> str:
        return make_conninfo(self.dsn, host=host, hostaddr="", port=str(port))

    def describe(self) -> dict[str, Any]:
        return {"dsn": self.dsn}
