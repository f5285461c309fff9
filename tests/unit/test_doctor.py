"""`chaos doctor` on this machine: its rows agree with the checks a run makes (the engine's status, each
kind's server package, each fault kind's preflight), it never raises, and the text a test skips with for
want of Docker is the engine row's, word for word. Environments it cannot change in-process (another
DOCKER_HOST: the engine's client is one per process) run in a fresh interpreter."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chaos import doctor
from chaos.backends import registry
from chaos.containers import engine
from chaos.errors import ConfigError
from chaos.faults import KINDS as FAULT_KINDS


@pytest.fixture(scope="module")
def rows() -> dict[tuple[str, str], doctor.DoctorRow]:
    return {(row.what, row.name): row for row in doctor.doctor_rows()}


def test_the_redis_local_provider_is_ok_because_redis_server_is_installed(
        rows: dict[tuple[str, str], doctor.DoctorRow]) -> None:
    installed = shutil.which("redis-server")
    assert installed, "ci/setup.sh installs redis-server; the suite's own tests need it"
    assert rows[("binary", "redis-server")].status == "ok"
    assert installed in rows[("binary", "redis-server")].detail
    local = rows[("provider", "redis/local")]
    assert local.status == "ok" and "kill" in local.detail and "restart" in local.detail


def test_each_local_provider_is_ok_exactly_when_its_server_package_is_present(
        rows: dict[tuple[str, str], doctor.DoctorRow]) -> None:
    for kind, package in registry.KINDS.items():
        server = importlib.import_module(package).SERVER_PACKAGE
        assert rows[("binary", server.name)].ok == server.present(), kind
        if "local" in registry.providers(kind):
            row = rows[("provider", f"{kind}/local")]
            assert row.ok == server.present(), row
            assert row.ok or f"apt-get install {server.name}" in row.fix


def test_every_provider_has_a_row_listing_its_capabilities(rows: dict[tuple[str, str], doctor.DoctorRow]) -> None:
    for kind in registry.KINDS:
        for name, provider in registry.providers(kind).items():
            row = rows[("provider", f"{kind}/{name}")]
            listed = row.detail.split("capabilities: ")[1]
            assert listed == (", ".join(sorted(provider.capabilities)) or "none"), row
            if name == "docker":
                assert row.ok == engine.status().available, row


def test_every_fault_kind_has_a_row_that_agrees_with_its_preflight(
        rows: dict[tuple[str, str], doctor.DoctorRow]) -> None:
    assert {name for what, name in rows if what == "fault kind"} == set(FAULT_KINDS)
    for name, kind in FAULT_KINDS.items():
        row = rows[("fault kind", name)]
        try:
            if kind.preflight is not None:
                kind.preflight()
            passes = True
        except ConfigError:
            passes = False
        assert row.ok == passes, row
        for capability in kind.needs:
            assert f"needs backend capability {capability}" in row.detail, row
    assert "needs backend capability restart" in rows[("fault kind", "backend_restart")].detail
    assert "Toxiproxy" in rows[("fault kind", "partition")].detail


def test_the_engine_row_and_the_skip_reason_agree_with_the_engine(
        rows: dict[tuple[str, str], doctor.DoctorRow]) -> None:
    status = engine.status()
    row = rows[("engine", "docker")]
    assert row.ok == status.available
    assert doctor.docker_skip_reason() == (None if status.available else row.detail)
    if status.available:
        assert row.detail == status.detail and row.detail.startswith("Docker engine ")


def test_without_an_engine_the_row_says_why_and_how_and_tests_skip_with_its_words(tmp_path: Path) -> None:
    code = ("import json; from chaos import doctor; rows = doctor.doctor_rows(); "
            "print(json.dumps({'rows': [[r.what, r.name, r.status, r.detail, r.fix] for r in rows], "
            "'skip': doctor.docker_skip_reason(), 'main': doctor.main()}))")
    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock"}
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    engine_row = next(row for row in found["rows"] if row[:2] == ["engine", "docker"])
    assert engine_row[2] == "missing" and engine_row[4] == engine.HOW_TO_START
    assert f"{tmp_path}/no-engine.sock" in engine_row[3] and engine.HOW_TO_START not in engine_row[3]
    assert found["skip"] == engine_row[3] and found["main"] == 0
    assert engine_row[3] in done.stdout  # the table main() printed shows the same words
    for what, name, status, _, fix in found["rows"]:
        if what == "provider" and name.endswith("/docker"):
            assert status == "missing" and fix == engine.HOW_TO_START
    assert time.monotonic() - began < 60


def test_an_external_provider_is_ok_with_its_url_set_and_hides_the_password(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CHAOS_REDIS_URL", raising=False)
    unset = {row.name: row for row in doctor.doctor_rows() if row.what == "provider"}["redis/external"]
    assert unset.status == "missing" and "$CHAOS_REDIS_URL" in unset.detail and "--backend-url" in unset.fix
    monkeypatch.setenv("CHAOS_REDIS_URL", "redis://queue:s3cret@127.0.0.1:6399/2")
    found = {row.name: row for row in doctor.doctor_rows() if row.what == "provider"}["redis/external"]
    assert found.status == "ok", found
    assert "redis://queue:***@127.0.0.1:6399/2" in found.detail and "s3cret" not in found.detail


def test_a_check_that_raises_becomes_a_missing_row_with_its_text() -> None:
    def broken() -> doctor.DoctorRow:
        int("no such number")
        raise AssertionError("int() parsed it")

    row = doctor._guarded("binary", "broken", broken)
    assert row.status == "missing" and "ValueError" in row.detail and "no such number" in row.detail and row.fix

    def refused() -> doctor.DoctorRow:
        raise ConfigError("Expected a frob (in /x.y). Install it: apt-get install frob.")

    row = doctor._guarded("binary", "frob", refused)
    assert (row.detail, row.fix) == ("Expected a frob (in /x.y).", "Install it: apt-get install frob.")


def test_render_is_an_aligned_table_naming_every_row(capsys: pytest.CaptureFixture[str]) -> None:
    found = doctor.doctor_rows()
    text = doctor.render(found)
    lines = text.splitlines()
    assert lines[0].split() == ["what", "name", "status", "detail", "how", "to", "fix"]
    name_at, status_at = lines[0].index("name"), lines[0].index("status")
    for row in found:
        assert row.name in text and row.detail in text and row.fix in text
        line = next(line for line in lines if line.startswith(row.what) and line[name_at:].split(" ")[0] == row.name)
        assert line[status_at:].startswith(row.status + " "), line
    missing = sum(1 for row in found if row.status == "missing")
    assert lines[-1] == f"{len(found) - missing} of {len(found)} ok; {missing} missing."
    assert doctor.main() == 0
    assert capsys.readouterr().out.strip() == text.strip()


def test_doctor_is_fast_because_it_starts_no_server() -> None:
    began = time.monotonic()
    doctor.doctor_rows()
    assert time.monotonic() - began < 10
