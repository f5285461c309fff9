"""Containers asked for where they cannot be had: no Docker engine, a worker fault on a target whose
workers run in no container, a backend fault on a provider without one, an image key that is no image.
Each is one paragraph, exit 2, no traceback, before anything starts (no engine is needed to see it)."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.integration.runner import REPO, chaos
from tests.integration.test_bad_input import assert_usage_error

NO_ENGINE = {"DOCKER_HOST": "unix:///nonexistent/queue-chaos-docker.sock"}


def test_the_docker_provider_without_an_engine(tmp_path: Path) -> None:
    result = chaos("run", "--target", "redis_reliable", "--scenario", "no_faults", "--backend", "docker",
                   "--runs-dir", str(tmp_path), env=NO_ENGINE)
    assert_usage_error(result, "Expected a Docker engine at unix:///nonexistent/queue-chaos-docker.sock",
                       "ci/setup.sh", "--backend local")


def test_workers_in_containers_without_an_engine(tmp_path: Path) -> None:
    result = chaos("run", "--target", "pg_lease", "--scenario", "no_faults", "--worker-image", "queue-chaos/python",
                   "--runs-dir", str(tmp_path), env=NO_ENGINE)
    assert_usage_error(result, "Expected a Docker engine")


def test_a_pause_needs_workers_in_containers(tmp_path: Path) -> None:
    result = chaos("run", "--target", "pg_lease", "--scenario", "pause_past_deadline", "--runs-dir", str(tmp_path))
    assert_usage_error(result, "the pause fault acts on a worker's container, and its workers run in none",
                       "--worker-image queue-chaos/python")
    assert not tmp_path.exists() or not list(tmp_path.iterdir()), "refused before the run dir is made"


def test_a_disconnect_needs_the_backend_in_a_container(tmp_path: Path) -> None:
    result = chaos("run", "--target", "redis_reliable", "--scenario", "disconnect_backend_during_recovery",
                   "--runs-dir", str(tmp_path))
    assert_usage_error(result, "the disconnect fault needs the backend capability container")


def test_an_image_key_that_names_no_image(tmp_path: Path) -> None:
    target = tmp_path / "queue"
    shutil.copytree(REPO / "targets" / "pg_lease", target)
    toml = target / "target.toml"
    toml.write_text("image = 5\n" + toml.read_text())
    result = chaos("run", "--target", str(target), "--scenario", "no_faults", "--runs-dir", str(tmp_path / "runs"))
    assert_usage_error(result, "image = 5; expected the name of a Docker image")
