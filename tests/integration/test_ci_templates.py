"""The CI templates under ci/ run as written: their own shell steps, read from the files, are executed here
against a small suite, shard by shard, with the artifacts handed from the shard jobs to the merge job as
the CI would; the merged report must equal an unsharded run of the same suite. So a template cannot
drift from the CLI."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.runner import REPO, chaos

SUITE = """
[[cell]]
target = "redis_reliable"
scenarios = ["no_faults", "kill_after_effect_before_ack"]

[[cell]]
target = "redis_basic"
scenario = "kill_after_claim_before_effect"
verdict = "fail"
violation = "lost"

[[cell]]
target = "beanstalkd_ttr"
scenario = "no_faults"
"""
SETUP_STEPS = ("bash ci/setup.sh", "python3 -m pip install -e .")  # this machine is set up already
EXPRESSION = re.compile(r"\$\{\{\s*([a-z]+)\.([A-Za-z_]+)\s*\}\}")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A user's repository: the suite file at its root."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "chaos.toml").write_text(SUITE)
    return root


def sh(command: str, cwd: Path, env: dict[str, str]) -> int:
    """One template step, as the CI runs it: bash, the step's environment, the repository as cwd."""
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=cwd, env=dict(os.environ, **env),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 1), f"{command}\n{done.stdout}{done.stderr}"  # 1: the suite's own FAIL
    return done.returncode


def github(text: str, values: dict[str, dict[str, Any]]) -> str:
    """A workflow's ${{ context.name }} filled in; any other expression is drift this test must see."""
    def fill(found: re.Match[str]) -> str:
        context, name = found.group(1), found.group(2)
        assert context in values and name in values[context], f"unexpected expression {found.group(0)}"
        return str(values[context][name])
    return EXPRESSION.sub(fill, text)


@pytest.fixture(scope="module")
def unsharded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str]]:
    """The suite run whole on one machine, once for the three templates: each run's verdict and status."""
    root = tmp_path_factory.mktemp("unsharded")
    (root / "chaos.toml").write_text(SUITE)
    whole = chaos("suite", str(root / "chaos.toml"), "-j", "2", "--out", str(root / "whole"), runs_dir=root)
    assert whole.code == 0, whole.stdout + whole.stderr
    return statuses(root / "whole")


def statuses(out: Path) -> dict[str, tuple[str, str]]:
    cells = json.loads((out / "suite.json").read_text())["cells"]
    return {cell["key"]: (cell["verdict"], cell["status"]) for cell in cells}


def merged_equals_unsharded(merged: Path, unsharded: dict[str, tuple[str, str]]) -> None:
    assert statuses(merged) == unsharded and len(unsharded) == 4
    assert json.loads((merged / "suite.json").read_text())["exit_code"] == 0
    assert (merged / "junit.xml").is_file()
    assert (merged / "summary.md").read_text().startswith("## queue-chaos suite: PASS")


def test_the_github_actions_template_runs_its_shards_and_merges_them(project: Path, tmp_path: Path,
                                                                   unsharded: dict[str, tuple[str, str]]) -> None:
    workflow = yaml.safe_load((REPO / "ci" / "github-actions.yml").read_text())
    env = {name: str(value) for name, value in workflow["env"].items()}
    shard_job, merge_job = workflow["jobs"]["shard"], workflow["jobs"]["merge"]
    artifacts = tmp_path / "artifacts"
    for shard in shard_job["strategy"]["matrix"]["shard"]:
        values = {"matrix": {"shard": shard}, "env": env}
        for step in shard_job["steps"]:
            if "run" in step and step["run"] not in SETUP_STEPS:
                sh(github(step["run"], values), project, env)
            elif str(step.get("uses", "")).startswith("actions/upload-artifact"):
                name, path = github(step["with"]["name"], values), github(step["with"]["path"], values)
                shutil.copytree(project / path, artifacts / name)
    assert sorted(p.name for p in artifacts.iterdir()) == [f"chaos-shard-{k}" for k in (1, 2, 3, 4)]
    for step in merge_job["steps"]:
        if str(step.get("uses", "")).startswith("actions/download-artifact"):
            pattern, into = step["with"]["pattern"], project / step["with"]["path"]
            for artifact in artifacts.glob(pattern):  # v4 with a pattern: each artifact in a folder of its name
                shutil.copytree(artifact, into / artifact.name)
        elif "run" in step and step["run"] not in SETUP_STEPS:
            summary = tmp_path / "step-summary.md"
            sh(github(step["run"], {"env": env}), project, {**env, "GITHUB_STEP_SUMMARY": str(summary)})
            assert summary.read_text().startswith("## queue-chaos suite: PASS (exit 0)")
    merged_equals_unsharded(project / "suite", unsharded)


def test_the_gitlab_template_runs_its_parallel_jobs_and_merges_them(project: Path,
                                                                   unsharded: dict[str, tuple[str, str]]) -> None:
    pipeline = yaml.safe_load((REPO / "ci" / "gitlab-ci.yml").read_text())
    job, merge_job = pipeline["queue-chaos"], pipeline["queue-chaos-merge"]
    total = int(job["parallel"])
    for index in range(1, total + 1):  # GitLab numbers parallel jobs from 1
        for command in job["script"]:
            sh(command, project, {"CI_NODE_INDEX": str(index), "CI_NODE_TOTAL": str(total)})
    for command in merge_job["script"]:
        if command not in SETUP_STEPS:
            sh(command, project, {})
    merged_equals_unsharded(project / "suite", unsharded)


def test_the_kubernetes_indexed_job_runs_a_shard_per_index(project: Path, tmp_path: Path,
                                                             unsharded: dict[str, tuple[str, str]]) -> None:
    manifest = yaml.safe_load((REPO / "ci" / "kubernetes-indexed-job.yaml").read_text())
    spec = manifest["spec"]
    assert spec["completionMode"] == "Indexed" and spec["completions"] == spec["parallelism"]
    (container,) = spec["template"]["spec"]["containers"]
    results = tmp_path / "results"  # the shared volume, here a folder
    mount = container["volumeMounts"][0]["mountPath"]
    for index in range(spec["completions"]):  # Kubernetes numbers completions from 0
        command = container["args"][0].replace(mount, str(results))
        sh(command, project, {"JOB_COMPLETION_INDEX": str(index)})
    assert sorted(p.name for p in results.iterdir()) == [f"shard-{k}" for k in range(spec["completions"])]
    merged = chaos("merge", *map(str, sorted(results.iterdir())), "--out", str(tmp_path / "merged"), runs_dir=tmp_path)
    assert merged.code == 0, merged.stdout + merged.stderr
    merged_equals_unsharded(tmp_path / "merged", unsharded)
