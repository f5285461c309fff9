"""A worker under a clock fault (libfaketime) sees its wall clock shifted and can still sleep: the
worker helpers' waits must not go through Python 3.11's time.sleep, whose absolute-deadline
clock_nanosleep the preloaded library shifts into an invalid time (EINVAL)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import chaos
from chaos.faults.clock import faketime_env

SLEEPER = """
import json, time
from chaos.worker import pause, run_handler
started_wall, started = time.time(), time.monotonic()
run_handler({"handler_s": 0.3})
pause(0.2)
print(json.dumps({"wall": started_wall, "slept": time.monotonic() - started}))
"""


@pytest.mark.parametrize("offset_s", [-3.0, 600.0])
def test_a_clock_faulted_worker_sleeps_its_handler_time_on_a_shifted_clock(offset_s: float) -> None:
    env = {**os.environ, **faketime_env(offset_s), "PYTHONPATH": str(Path(chaos.__file__).parent.parent)}
    before = time.time()
    done = subprocess.run([sys.executable, "-c", SLEEPER], env=env, capture_output=True, text=True, timeout=30,
                          check=False)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert abs(seen["wall"] - before - offset_s) < 2.0  # the fault took: the process's wall clock is shifted
    assert 0.5 <= seen["slept"] < 2.0  # handler time and pause both slept, neither failed nor hung
