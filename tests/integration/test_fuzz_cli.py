"""Fuzzed target.toml files and `-p` values through the real CLI: every run ends with an exit code of
0 to 4, never a traceback, never a hang, never NaN or Infinity in a report."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chaos.discovery import bundled
from chaos.leftovers import run_processes
from tests.fuzz_inputs import target_tomls
from tests.integration.runner import chaos

NOTHING = '"""Does nothing: the run is the backend, the sink and the snapshot."""\n\nFAULTS = ()\n\n\ndef run(ctx):\n' \
          "    ctx.enqueue(1)\n"


def refuse_constant(name: str) -> None:
    raise AssertionError(f"a report holds {name}")


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(target_tomls(), st.lists(st.tuples(st.sampled_from(["heartbeat", "poll_s", "ack", "zz"]),
                                          st.text("abcinf0.-= ", max_size=6)), max_size=2))
def test_any_target_toml_and_p_value_ends_with_an_exit_code_not_a_traceback(toml: str,
                                                                           params: list[tuple[str, str]]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        target = root / "fuzzed"
        shutil.copytree(bundled("targets") / "pg_lease", target, ignore=shutil.ignore_patterns("__pycache__"))
        (target / "target.toml").write_text(toml)
        (root / "nothing.py").write_text(NOTHING)
        argv = ["run", "--target", str(target), "--scenario", str(root / "nothing.py"), "--runs-dir",
                str(root / "runs"), "--deadline", "60"]
        for key, value in params:
            argv += ["-p", f"{key}={value}"]
        result = chaos(*argv, timeout=120)
        assert result.code in (0, 1, 2, 3, 4), result.stdout + result.stderr
        assert "Traceback" not in result.stderr, result.stderr
        if result.code == 2:
            assert result.stderr.startswith("chaos: ") and result.stderr.count("\n") == 1, result.stderr
        if result.run_dir is not None and (result.run_dir / "verdict.json").exists():
            json.loads((result.run_dir / "verdict.json").read_text(), parse_constant=refuse_constant)
            assert not run_processes(result.run_dir)
