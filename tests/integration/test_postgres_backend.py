"""The PostgreSQL providers against a real server: start, survive restarts, clean up, refuse bad input."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil  # type: ignore[import-untyped, unused-ignore]
import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from chaos.backends.base import Backend, BackendSettings
from chaos.backends.external import mask_password
from chaos.backends.postgres import binaries as pg_binaries
from chaos.backends.postgres import cluster as pg_cluster
from chaos.backends.postgres import external as pg_external
from chaos.backends.postgres import local as pg_local
from chaos.backends.postgres.local import LocalPostgres
from chaos.backends.postgres.observer import TriggerObserver
from chaos.backends.registry import provider
from chaos.contract import Contract
from chaos.errors import ConfigError, HarnessError
from chaos.events import Record

Events = list[tuple[str, dict[str, object]]]


def open_postgres(name: str, url: str | None, run_id: str) -> Backend:
    """Open a PostgreSQL backend through the registry, as a run does."""
    return provider("postgres", name).open(BackendSettings(Path("/nonexistent"), run_id, url))


def recorder(events: Events) -> Callable[[Record], None]:
    return lambda record: events.append((record.kind, record.data))


def _have_server_binaries() -> bool:
    try:
        pg_binaries.find_binaries()
    except ConfigError:
        return False
    return True


needs_server = pytest.mark.skipif(not _have_server_binaries(), reason="PostgreSQL server binaries not installed")


@pytest.fixture
def run_dir() -> Iterator[Path]:
    """A run dir the unprivileged server user can reach (pytest's tmp_path is 0700 when we are root)."""
    path = Path(tempfile.mkdtemp(prefix="chaos-pg-test-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def events() -> Events:
    return []


@pytest.fixture
def local(run_dir: Path, events: Events) -> Iterator[LocalPostgres]:
    with LocalPostgres(run_dir / "pg", on_event=recorder(events)) as backend:
        yield backend


def _processes_of(backend: LocalPostgres) -> list[psutil.Process]:
    """Live (non-zombie) processes of this server: the postmaster names the data dir on its command line,
    its children (which setsid() away from its process group) carry the instance's cluster_name in their title."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            cmdline = " ".join(proc.info["cmdline"] or [])
            ours = str(backend.pgdata) in cmdline or f"postgres: {backend.cluster_name}:" in cmdline
            if ours and proc.info["status"] != psutil.STATUS_ZOMBIE and proc.pid != os.getpid():
                found.append(proc)
        except psutil.Error:
            continue
    return found


def _gone(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return True


@needs_server
def test_local_start_accepts_queries(local: LocalPostgres, events: Events) -> None:
    with psycopg.connect(local.dsn) as conn:
        assert conn.execute("select 1").fetchone() == (1,)
        assert conn.execute("select current_user, current_database()").fetchone() == ("postgres", "chaos")
    assert f"port={local.port}" in local.dsn and "host=127.0.0.1" in local.dsn
    assert local.pid is not None and psutil.pid_exists(local.pid)
    assert [kind for kind, _ in events] == ["backend.prepare", "backend.start"]
    assert events[0][1]["pgdata"] == events[1][1]["pgdata"] == str(local.pgdata), "the data dir, journaled first"
    assert events[1][1]["pid"] == local.pid and events[1][1]["port"] == local.port
    assert events[0][1]["provider"] == "local"


@needs_server
@pytest.mark.parametrize("mode", ["immediate", "fast"])
def test_data_survives_restart_same_port_new_pid(local: LocalPostgres, events: Events, mode: str) -> None:
    with psycopg.connect(local.dsn, autocommit=True) as conn:
        conn.execute("create table jobs (id int primary key, body text)")
        # Each insert is its own acknowledged commit; the last one lands just before the crash.
        for i in range(50):
            conn.execute("insert into jobs values (%s, %s)", (i, f"job {i}"))
    old_pid, old_port = local.pid, local.port

    local.restart(mode)

    assert local.port == old_port
    assert local.pid is not None and local.pid != old_pid
    assert old_pid is not None and _gone(old_pid)
    with psycopg.connect(local.dsn) as conn:
        assert conn.execute("select count(*), max(id) from jobs").fetchone() == (50, 49)
    kind, data = events[-1]
    assert kind == "backend.restart"
    assert data["mode"] == mode and data["old_pid"] == old_pid and data["new_pid"] == local.pid
    assert isinstance(data["down_s"], float) and data["down_s"] > 0


@needs_server
def test_restart_rejects_unknown_mode(local: LocalPostgres) -> None:
    with pytest.raises(ConfigError, match="immediate"):
        local.restart("graceful")


@needs_server
def test_close_leaves_no_process_and_removes_pgdata(run_dir: Path) -> None:
    events: Events = []
    backend = LocalPostgres(run_dir / "pg", on_event=recorder(events)).start()
    pid = backend.pid
    assert pid is not None
    with psycopg.connect(backend.dsn, autocommit=True) as conn:  # an open session must not block shutdown
        conn.execute("select 1")
        backend.close()
    assert _gone(pid)
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert _processes_of(backend) == []
    assert not backend.pgdata.exists()
    assert backend.log_path.exists() and "database system is shut down" in backend.log_path.read_text()
    assert events[-1][0] == "backend.exit" and events[-1][1]["pid"] == pid
    backend.close()  # idempotent
    assert backend.pid is None


@needs_server
def test_kill_takes_down_every_server_process_and_restart_revives(local: LocalPostgres, events: Events) -> None:
    with psycopg.connect(local.dsn, autocommit=True) as conn:
        conn.execute("create table t (i int)")
        conn.execute("insert into t values (1)")
    pid = local.pid
    assert pid is not None
    session = psycopg.connect(local.dsn, autocommit=True)  # a client backend busy in a query during the kill
    session.execute("select 1")
    children = psutil.Process(pid).children()
    assert len(children) >= 4
    # PostgreSQL children setsid() away from the postmaster's group: a killpg alone would orphan them.
    assert all(os.getpgid(child.pid) != pid for child in children)
    # _processes_of recognises the postmaster and every child still running (short-lived ones, such as
    # the backend of the connection closed above, may come and go between the two listings).
    found = {p.pid for p in _processes_of(local)}
    assert pid in found and {c.pid for c in children if c.is_running()} <= found

    local.kill()

    assert local.pid is None
    assert _gone(pid) and all(_gone(child.pid) for child in children)
    assert _processes_of(local) == []
    assert events[-1][0] == "backend.exit" and events[-1][1]["reason"] == "kill"
    with pytest.raises(psycopg.OperationalError):
        session.execute("select 1")
    session.close()

    local.restart("immediate")
    with psycopg.connect(local.dsn) as conn:
        assert conn.execute("select count(*) from t").fetchone() == (1,)


@needs_server
def test_second_start_copies_the_template(run_dir: Path) -> None:
    if not pg_cluster.USE_TEMPLATE:
        pytest.skip("template cache disabled")
    with LocalPostgres(run_dir / "a"), LocalPostgres(run_dir / "b") as second:
        assert second.init_method == "template"
        with psycopg.connect(second.dsn) as conn:
            assert conn.execute("select current_database()").fetchone() == ("chaos",)


@needs_server
def test_without_template_initdb_works(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pg_cluster, "USE_TEMPLATE", False)
    with LocalPostgres(run_dir / "pg") as backend:
        assert backend.init_method == "initdb"
        with psycopg.connect(backend.dsn) as conn:
            assert conn.execute("select current_database()").fetchone() == ("chaos",)


@needs_server
def test_failed_start_cleans_up(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(pg_local.SERVER_SETTINGS, "no_such_setting", "1")
    backend = LocalPostgres(run_dir / "pg")
    with pytest.raises(HarnessError, match="no_such_setting"), backend:
        pytest.fail("must not get here")
    assert not backend.pgdata.exists()
    assert backend.pid is None
    assert _processes_of(backend) == []


@needs_server
def test_failing_event_sink_during_start_cleans_up(run_dir: Path) -> None:
    def sink(record: Record) -> None:
        raise RuntimeError("sink broke")

    backend = LocalPostgres(run_dir / "pg", on_event=sink)
    with pytest.raises(RuntimeError, match="sink broke"), backend:
        pytest.fail("must not get here")
    assert backend.pid is None
    assert not backend.pgdata.exists()
    assert _processes_of(backend) == []


@needs_server
def test_existing_pgdata_is_refused_and_kept(run_dir: Path) -> None:
    (run_dir / "pg" / "pgdata").mkdir(parents=True)
    (run_dir / "pg" / "pgdata" / "keep").write_text("x")
    with pytest.raises(ConfigError, match="already exists"):
        LocalPostgres(run_dir / "pg").start()
    assert (run_dir / "pg" / "pgdata" / "keep").exists()


@needs_server
@pytest.mark.skipif(os.geteuid() != 0, reason="only root drops to an unprivileged user")
def test_run_dir_the_server_user_cannot_reach(run_dir: Path) -> None:
    private = run_dir / "private"
    private.mkdir(mode=0o700)
    private.chmod(0o700)
    backend = LocalPostgres(private / "pg").start()
    try:
        assert not backend.pgdata.is_relative_to(private), "the cluster moves where the server user can reach it"
        with psycopg.connect(backend.dsn, autocommit=True) as conn:
            assert conn.execute("select 1").fetchone() == (1,)
        assert backend.log_path.is_relative_to(private), "the log stays in the run dir"
    finally:
        backend.close()
    assert not backend.pgdata.parent.exists()


@needs_server
def test_external_creates_and_drops_its_schema(local: LocalPostgres) -> None:
    external = open_postgres("external", local.dsn, "Run 42/α")
    assert isinstance(external, pg_external.ExternalPostgres)
    schema = external.namespace
    assert schema == "chaos_run_42"
    with psycopg.connect(external.dsn, autocommit=True) as conn:
        assert conn.execute("show search_path").fetchone() == (schema,)
        conn.execute("create table jobs (id int)")
    with psycopg.connect(local.dsn) as conn:
        found = conn.execute("select table_schema from information_schema.tables where table_name = 'jobs'").fetchall()
        assert found == [(schema,)]
    with pytest.raises(ConfigError, match="control of the server"):
        external.restart("immediate")
    with pytest.raises(ConfigError, match="control of the server"):
        external.kill()

    external.close()
    external.close()  # idempotent

    with psycopg.connect(local.dsn) as conn:
        assert conn.execute("select 1 from pg_namespace where nspname = %s", (schema,)).fetchone() is None
    assert local.pid is not None  # the "external" server itself was not touched


@needs_server
def test_external_url_from_environment(local: LocalPostgres, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAOS_POSTGRES_URL", local.dsn)
    with (
        open_postgres("external", None, "env") as external,
        psycopg.connect(external.endpoint.url) as conn,
    ):
        assert conn.execute("show search_path").fetchone() == ("chaos_env",)


def test_bad_external_url_is_a_config_error() -> None:
    url = "postgresql://nobody:s3cret@127.0.0.1:1/x"
    with pytest.raises(ConfigError) as info:
        pg_external.ExternalPostgres(url, "run").start()
    message = str(info.value)
    assert "postgresql://nobody:***@127.0.0.1:1/x" in message
    assert "s3cret" not in message
    assert "refused" in message.lower() or "failed" in message.lower()
    assert "\n" not in message


def test_unparsable_external_url_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="cannot be parsed"):
        pg_external.ExternalPostgres("host=127.0.0.1 password=s3cret bogus", "run").start()


def test_external_without_url_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CHAOS_POSTGRES_URL", raising=False)
    with pytest.raises(ConfigError, match="CHAOS_POSTGRES_URL"):
        open_postgres("external", None, "run")


def test_unknown_provider_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="among docker, external, local, but got 'cloud'"):
        open_postgres("cloud", None, "run")


def test_missing_binaries_is_a_config_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", "")
    monkeypatch.setattr(pg_binaries, "PG_LIB_ROOT", tmp_path / "no-postgresql-here")
    backend = LocalPostgres(tmp_path / "pg")
    with pytest.raises(ConfigError) as info:
        backend.start()
    message = str(info.value)
    assert "initdb" in message and "postgres" in message
    assert "--backend external --backend-url" in message and "CHAOS_POSTGRES_URL" in message
    assert not (tmp_path / "pg").exists()


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("postgresql://u:pw@h:5432/db", "postgresql://u:***@h:5432/db"),
        ("postgres://u@h/db?password=pw&sslmode=require", "postgres://u@h/db?password=***&sslmode=require"),
        ("host=h user=u password=pw dbname=d", "host=h user=u password=*** dbname=d"),
        ("host=h password='p w' dbname=d", "host=h password=*** dbname=d"),
        ("postgresql://u@h/db", "postgresql://u@h/db"),
    ],
)
def test_mask_password(url: str, masked: str) -> None:
    assert mask_password(url) == masked


def test_schema_name_is_a_safe_identifier() -> None:
    assert pg_external.schema_name("2024-05-01T12:00 run#1") == "chaos_2024_05_01t12_00_run_1"
    assert pg_external.schema_name("???") == "chaos_run"
    assert len(pg_external.schema_name("x" * 200)) == 63


@needs_server
def test_an_endpoint_is_the_same_server_at_another_address(local: LocalPostgres) -> None:
    direct = local.endpoint
    assert (direct.host, direct.port) == ("127.0.0.1", local.port)
    with psycopg.connect(direct.url) as conn:
        assert conn.execute("select current_database()").fetchone() == ("chaos",)
    moved = conninfo_to_dict(local.endpoint_at("127.0.0.2", 6543).url)
    assert (moved["host"], moved["port"], moved["dbname"]) == ("127.0.0.2", "6543", "chaos")
    external = open_postgres("external", local.dsn, "endpoint")
    try:
        via = conninfo_to_dict(external.endpoint_at("127.0.0.3", 7000).url)
        assert (via["host"], via["port"]) == ("127.0.0.3", "7000")
        assert "search_path=chaos_endpoint" in str(via["options"])
    finally:
        external.close()


class DeletingQueueObserver(TriggerObserver):
    """A library that claims by UPDATE and completes by removing the row (as pgqueuer does)."""

    KIND = "CASE WHEN NEW.status = 'claimed' THEN 'claim' END"
    TOKEN = "NEW.token"
    DELETE_KIND = "CASE WHEN OLD.status = 'claimed' THEN 'complete' END"
    DELETE_TOKEN = "OLD.token"


@needs_server
def test_the_trigger_observer_records_completions_by_delete(local: LocalPostgres) -> None:
    with psycopg.connect(local.dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE jobs (id text PRIMARY KEY, status text, token text)")
        observer = DeletingQueueObserver(local, {}, Contract(recovery_bound_s=1.0))
        try:
            observer.install()
            conn.execute("INSERT INTO jobs VALUES ('job-1', 'pending', NULL), ('job-2', 'pending', NULL)")
            conn.execute("SET application_name = 'w1'")
            conn.execute("UPDATE jobs SET status = 'claimed', token = 't1' WHERE id = 'job-1'")
            conn.execute("DELETE FROM jobs WHERE id = 'job-1'")
            conn.execute("DELETE FROM jobs WHERE id = 'job-2'")  # never claimed: a delete that records nothing
            records = [(r.kind, r.job, r.actor, r.token) for r in observer.read()]
        finally:
            observer.close()
    assert records == [("claim", "job-1", "w1", "t1"), ("complete", "job-1", "w1", "t1")]
