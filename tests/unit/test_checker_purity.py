"""The checker is a pure function of ledger and contract: loading it must not load fault or process code."""

from __future__ import annotations

import subprocess
import sys

FORBIDDEN = ("chaos.nemesis", "chaos.supervisor", "chaos.sink", "chaos.backends")


def test_checker_imports_no_fault_or_process_code() -> None:
    # A fresh interpreter: this one may already hold those modules from other tests.
    code = "import sys, chaos.checker; print(' '.join(sorted(m for m in sys.modules if m.startswith('chaos'))))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert "chaos.checker" in loaded
    assert [m for m in loaded if m.startswith(FORBIDDEN)] == []
