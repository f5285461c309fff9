"""A target of one's own, through the CLI: `chaos target new` writes one that runs green at once for every
backend kind, `chaos target check` proves its seams before any fault and names each one that does not hold
(exit 2, a paragraph each), and the scaffold gives verdicts under the kill and the stop scenarios."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from chaos.backends.registry import KINDS
from tests.integration.runner import chaos


def new(tmp_path: Path, name: str, kind: str) -> Path:
    result = chaos("target", "new", name, "--backend", kind, "--dir", str(tmp_path / "targets"), runs_dir=tmp_path)
    assert result.code == 0, result.stdout + result.stderr
    folder = tmp_path / "targets" / name
    assert tomllib.loads((folder / "target.toml").read_text())["name"] == name
    assert not (folder / "README.md").exists(), "the template's README tells its own findings, not the new target's"
    return folder


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_new_target_of_every_kind_passes_its_check(tmp_path: Path, kind: str) -> None:
    folder = new(tmp_path, f"mine_{kind}", kind)
    result = chaos("target", "check", str(folder), "--runs-dir", str(tmp_path / "runs"))
    assert result.code == 0, result.stdout + result.stderr
    assert "every seam held" in result.stdout
    for seam in ("claimed job-0001", "while w1 held job-0001", "reported the job's effect", "the queue accepted it",
                 "the verdict on the fault-free job-0001: completed", "after w1 was SIGKILLed holding job-0002",
                 "carried its claim's token", "gave up the failing job-0003"):
        assert seam in result.stdout, result.stdout


@pytest.mark.parametrize("scenario", ["kill_after_effect_before_ack", "stop_past_deadline"])
def test_the_scaffold_gives_verdicts_under_faults(tmp_path: Path, scenario: str) -> None:
    folder = new(tmp_path, "mine", "postgres")
    result = chaos("run", "--target", str(folder), "--scenario", scenario, "--seed", "1",
                   "--runs-dir", str(tmp_path / "runs"))
    assert result.code == 0, result.stdout + result.stderr
    assert result.verdict["verdict"] == "pass" and all(f["exercised"] for f in result.verdict["faults"])


def test_new_never_overwrites_and_refuses_a_bad_name(tmp_path: Path) -> None:
    folder = new(tmp_path, "mine", "redis")
    (folder / "worker.py").write_text("my own work\n")
    again = chaos("target", "new", "mine", "--backend", "postgres", "--dir", str(tmp_path / "targets"),
                  runs_dir=tmp_path)
    assert again.code == 2 and "already exists" in again.stderr and "Traceback" not in again.stderr
    assert (folder / "worker.py").read_text() == "my own work\n"
    bad = chaos("target", "new", "../out", "--backend", "redis", "--dir", str(tmp_path / "targets"), runs_dir=tmp_path)
    assert bad.code == 2 and "target name '../out'" in bad.stderr
    assert not (tmp_path / "out").exists()


def test_a_name_with_quotes_is_written_escaped_and_checks_green(tmp_path: Path) -> None:
    folder = new(tmp_path, 'x"y\'s', "redis")
    assert 'name = "x\\"y\'s"' in (folder / "target.toml").read_text()
    result = chaos("target", "check", str(folder), "--runs-dir", str(tmp_path / "runs"))
    assert result.code == 0 and "every seam held" in result.stdout, result.stdout + result.stderr


def test_a_name_too_long_for_a_file_name_is_refused(tmp_path: Path) -> None:
    (tmp_path / "targets").mkdir()
    result = chaos("target", "new", "q" * 300, "--backend", "redis", "--dir", str(tmp_path / "targets"),
                   runs_dir=tmp_path)
    assert result.code == 2 and "Traceback" not in result.stderr, result.stderr
    assert "The target name 'qqqq" in result.stderr and "is 300 bytes long" in result.stderr, result.stderr
    assert "at most 100 bytes" in result.stderr and result.stderr.count("\n") == 1, result.stderr
    assert not list((tmp_path / "targets").iterdir())


def test_check_names_a_worker_that_never_reports_its_effect(tmp_path: Path) -> None:
    folder = new(tmp_path, "mute", "postgres")
    worker = folder / "worker.py"
    worker.write_text(worker.read_text().replace("    probe.effect(job, token)\n", "    pass  # no effect probe\n"))
    result = chaos("target", "check", str(folder), "--runs-dir", str(tmp_path / "runs"))
    assert result.code == 2, result.stdout + result.stderr
    assert "chaos: No effect probe for job-0001" in result.stderr and "Traceback" not in result.stderr
    assert "ok: w1 claimed job-0001" in result.stdout, "what held is said too"


def test_check_names_a_snapshot_that_does_not_list_the_enqueued_job(tmp_path: Path) -> None:
    folder = new(tmp_path, "blind", "postgres")
    control = folder / "control.py"
    text = control.read_text()
    assert "    ORDER BY j.id" in text
    control.write_text(text.replace("    ORDER BY j.id", "    WHERE j.id <> 'job-0001' ORDER BY j.id", 1))
    result = chaos("target", "check", str(folder), "--runs-dir", str(tmp_path / "runs"))
    assert result.code == 2, result.stdout + result.stderr
    assert "snapshot() shows job-0001 as absent, not pending" in result.stderr


def test_check_of_a_malformed_target_toml_is_one_paragraph(tmp_path: Path) -> None:
    folder = new(tmp_path, "typo", "postgres")
    (folder / "target.toml").write_text((folder / "target.toml").read_text() + "\n[server]\nfsync = true\n")
    result = chaos("target", "check", str(folder), "--runs-dir", str(tmp_path / "runs"))
    assert result.code == 2 and "no postgres provider takes" in result.stderr and "Traceback" not in result.stderr


def test_check_names_a_control_that_fails_with_its_own_error_in_one_paragraph(tmp_path: Path) -> None:
    folder = new(tmp_path, "typo_sql", "postgres")
    control = folder / "control.py"
    control.write_text(control.read_text().replace("    ORDER BY j.id", "    ORDER BY j.nonexistent", 1))
    result = chaos("target", "check", str(folder), "--runs-dir", str(tmp_path / "runs"))
    assert result.code == 2, result.stdout + result.stderr
    assert "before the control's first snapshot" in result.stderr and "nonexistent" in result.stderr
    assert "Traceback" not in result.stderr, "the user's error is named; the traceback stays in the run dir"


def test_check_sees_the_observers_record_of_the_claim_and_the_completion(tmp_path: Path) -> None:
    result = chaos("target", "check", "pg_lease", "--runs-dir", str(tmp_path / "runs"))
    assert result.code == 0, result.stdout + result.stderr
    assert "the observer recorded the queue's claim of job-0001 by w1" in result.stdout
    assert "the observer recorded the queue's completion of job-0001 by w1" in result.stdout


def test_a_control_whose_setup_raises_is_the_targets_error_not_the_suites(tmp_path: Path) -> None:
    folder = new(tmp_path, "raises", "postgres")
    control = folder / "control.py"
    control.write_text(control.read_text() + "\n\ndef _broken(self: object) -> None:\n"
                       "    raise ValueError('my setup is wrong')\n\n\nControl.setup = _broken  # type: ignore\n")
    result = chaos("run", "--target", str(folder), "--scenario", "no_faults", "--runs-dir", str(tmp_path / "runs"))
    assert result.code == 3, result.stdout + result.stderr
    assert "raised ValueError in its control's setup(): my setup is wrong" in result.stderr
    assert "a bug in queue-chaos" not in result.stderr
    assert result.verdict["verdict"] == "error"
    checked = chaos("target", "check", str(folder), "--runs-dir", str(tmp_path / "runs"))
    assert checked.code == 2 and "ValueError: my setup is wrong" in checked.stderr, checked.stderr
    assert "Traceback" not in checked.stderr
