"""Containers asked for where they cannot be had: no Docker engine, no docker extra installed, a worker
fault on a target whose workers run in no container, a backend fault on a provider without one, an image
key that is no image. Each is one paragraph, exit 2, no traceback, before anything starts (no engine is
needed to see it)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from tests.integration.runner import REPO, chaos
from tests.integration.test_bad_input import assert_usage_error

NO_ENGINE = {"DOCKER_HOST": "unix:///nonexistent/queue-chaos-docker.sock"}


def test_the_docker_provider_without_an_engine(tmp_path: Path) -> None:
    result = chaos("run", "--target", "redis_reliable", "--scenario", "no_faults", "--backend", "docker",
                   "--runs-dir", str(tmp_path), env=NO_ENGINE)
    assert_usage_error(result, "Expected a Docker engine at unix:///nonexistent/queue-chaos-docker.sock",
                       "ci/setup.sh", "--backend local")


def without_packages(tmp_path: Path, *packages: str) -> dict[str, str]:
    """An environment where these packages do not import, as where the docker extra is not installed: a
    directory first on PYTHONPATH holds a package of each name whose import raises ImportError."""
    shim = tmp_path / "shim"
    for package in packages:
        (shim / package).mkdir(parents=True)
        (shim / package / "__init__.py").write_text(f'raise ImportError("No module named {package!r}")\n')
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(shim), os.environ.get("PYTHONPATH")]))}


@pytest.mark.parametrize("packages", [("testcontainers",), ("testcontainers", "docker")])
def test_the_docker_provider_without_the_docker_extra(tmp_path: Path, packages: tuple[str, ...]) -> None:
    """The engine may answer (doctor's engine row needs only the SDK): the provider's own packages are
    what is missing, and doctor and the run both say which extra to install."""
    env = without_packages(tmp_path, *packages)
    doctor = chaos("doctor", runs_dir=tmp_path, env=env)
    assert doctor.code == 0 and "Traceback" not in doctor.stderr, doctor.stderr
    for kind in ("postgres", "redis", "beanstalkd", "rabbitmq", "nats"):
        row = re.search(rf"^provider +{kind}/docker +missing +(.*)$", doctor.stdout, re.M)
        assert row, doctor.stdout
        assert row[1].startswith(f"The {kind} docker provider needs the docker extra of queue-chaos, and "), row[1]
        assert all(f"{package} (ImportError" in row[1] for package in packages), row[1]
    assert "pip install 'queue-chaos[docker]'" in doctor.stdout
    runs = tmp_path / "runs"
    result = chaos("run", "--target", "pg_lease", "--scenario", "no_faults", "--backend", "docker",
                   "--runs-dir", str(runs), env=env)
    assert_usage_error(result, "The postgres docker provider needs the docker extra of queue-chaos",
                       *(f"{package} (ImportError: No module named '{package}')" for package in packages),
                       "pip install 'queue-chaos[docker]'", "--backend local")
    assert not runs.exists(), "refused before the run dir is made"


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
