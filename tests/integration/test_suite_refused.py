"""`chaos suite` refuses what it cannot run before anything runs: one paragraph, exit 2, no traceback and
no --out made. The suite file itself (its encoding, its pyproject table, its bounds, its chain of
includes, its list of correct targets), and, for each cell, what `chaos run` refuses of where it runs (an
external server without a URL, a Docker engine that does not answer, a worker image the engine lacks)."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos.doctor import docker_skip_reason
from tests.integration.runner import CliResult, chaos

CELL = '[[cell]]\ntarget = "pg_lease"\nscenario = "no_faults"\n'
NO_ENGINE = {"DOCKER_HOST": "unix:///nonexistent/queue-chaos-docker.sock"}


def suite(tmp_path: Path, text: str | bytes, *args: str, env: dict[str, str] | None = None,
          name: str = "chaos.toml") -> CliResult:
    """`chaos suite FILE` on a file of `text`, its reports in tmp_path/out."""
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return chaos("suite", str(path), "--out", str(tmp_path / "out"), *args, runs_dir=tmp_path, env=env, timeout=60)


def assert_refused(tmp_path: Path, result: CliResult, *phrases: str) -> None:
    assert result.code == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("chaos: ") and result.stderr.count("\n") == 1, "one paragraph: " + result.stderr
    for phrase in phrases:
        assert phrase in result.stderr, result.stderr
    assert not (tmp_path / "out").exists(), "nothing ran"


def test_a_chain_of_1500_includes_is_refused_at_its_bound(tmp_path: Path) -> None:
    for number in range(1500):
        (tmp_path / f"part{number}.toml").write_text(f'include = ["part{number + 1}.toml"]\n' if number < 1499
                                                     else CELL)
    result = chaos("suite", str(tmp_path / "part0.toml"), "--out", str(tmp_path / "out"), runs_dir=tmp_path)
    assert_refused(tmp_path, result, "part31.toml, the last of a chain of 32 files", "includes",
                   "a chain may be 32 files long")


@pytest.mark.parametrize(("text", "args", "phrases"), [
    ('seeds = "1-100000000"\n' + CELL, [], ["seeds = '1-100000000' is 100,000,000 seeds", "100,000 runs at most"]),
    (CELL, ["--seeds", "0-100000"], ["--seeds: seeds = '0-100000' is 100,001 seeds"]),
    ("repeat = 100000000\n" + CELL, [], ["plans 100,000,000 runs", "repeat 100000000"]),
])
def test_a_suite_too_big_to_run_is_refused_at_once(tmp_path: Path, text: str, args: list[str],
                                                   phrases: list[str]) -> None:
    """Refused before a seed is listed: the range is never built in memory (60 s is the bound here)."""
    assert_refused(tmp_path, suite(tmp_path, text, *args), *phrases)


@pytest.mark.parametrize(("text", "phrase"), [
    ("[tool]\nchaos = 5\n", "pyproject.toml: tool.chaos = 5; expected a [tool.chaos] table"),
    ("tool = 5\n", "pyproject.toml: tool = 5; expected a [tool.chaos] table"),
])
def test_a_pyproject_whose_tool_chaos_is_no_table(tmp_path: Path, text: str, phrase: str) -> None:
    assert_refused(tmp_path, suite(tmp_path, text, name="pyproject.toml"), phrase)


def test_a_pyproject_found_in_the_current_directory_is_checked_as_a_named_one(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool]\nchaos = 5\n")
    result = chaos("suite", "--out", str(tmp_path / "out"), runs_dir=tmp_path, cwd=tmp_path)
    assert_refused(tmp_path, result, "tool.chaos = 5")
    (tmp_path / "pyproject.toml").write_text("tool = 5\n")  # no [tool.chaos] table: no suite here
    result = chaos("suite", "--out", str(tmp_path / "out"), runs_dir=tmp_path, cwd=tmp_path)
    assert_refused(tmp_path, result, "No suite file here")


def test_a_suite_file_that_is_not_utf8(tmp_path: Path) -> None:
    result = suite(tmp_path, b'[[cell]]\ntarget = "pg_lease\xff"\nscenario = "no_faults"\n')
    assert_refused(tmp_path, result, "is not UTF-8 text", "Save it as UTF-8")


def test_a_suite_file_nested_too_deep_to_read(tmp_path: Path) -> None:
    assert_refused(tmp_path, suite(tmp_path, "x = " + "[" * 5000 + "]" * 5000 + "\n" + CELL), "nests",
                   "too deep")


def test_a_cell_whose_contract_contradicts_its_params(tmp_path: Path) -> None:
    cell = ('[[cell]]\ntarget = "beanstalkd_ttr"\nscenario = "no_faults"\nparams = { ttr = 5 }\n'
            'contract = { reservation_s = 3 }\n')
    assert_refused(tmp_path, suite(tmp_path, cell), "-p ttr=5 and -c reservation_s=3 contradict each other")


def test_a_target_listed_twice_as_correct(tmp_path: Path) -> None:
    result = suite(tmp_path, 'correct = ["pg_lease", "redis_reliable", "pg_lease"]\n')
    assert_refused(tmp_path, result, "correct lists pg_lease more than once")


def test_an_external_backend_without_a_url(tmp_path: Path) -> None:
    result = suite(tmp_path, 'backend = "external"\n' + CELL, env={"CHAOS_POSTGRES_URL": ""})
    assert_refused(tmp_path, result, "Suite cell pg_lease --backend external x no_faults",
                   "neither --backend-url nor CHAOS_POSTGRES_URL is set")


def test_the_docker_provider_without_an_engine(tmp_path: Path) -> None:
    result = suite(tmp_path, CELL + 'backend = "docker"\n', env=NO_ENGINE)
    assert_refused(tmp_path, result, "Suite cell pg_lease --backend docker x no_faults",
                   "Expected a Docker engine at unix:///nonexistent/queue-chaos-docker.sock")


def test_workers_in_containers_without_an_engine(tmp_path: Path) -> None:
    result = suite(tmp_path, CELL + 'worker_image = "queue-chaos/python"\n', env=NO_ENGINE)
    assert_refused(tmp_path, result, "--worker-image queue-chaos/python x no_faults", "Expected a Docker engine")


@pytest.mark.skipif(docker_skip_reason() is not None, reason=docker_skip_reason() or "")
def test_a_worker_image_the_engine_lacks(tmp_path: Path) -> None:
    result = suite(tmp_path, CELL + 'worker_image = "queue-chaos/no-such-image:1"\n')
    assert_refused(tmp_path, result, "worker image 'queue-chaos/no-such-image:1' is not in the Docker engine")
