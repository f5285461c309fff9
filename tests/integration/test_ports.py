"""Ports for the suite's listeners: outside the kernel's ephemeral range, and never the same one for two
processes of the suite while one holds it, whatever way that process ends."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import chaos
from chaos import ports

HOLDER = textwrap.dedent("""
    import sys, time
    from chaos import ports
    print(ports.reserve(), flush=True)
    time.sleep(60)
""")
TAKER = textwrap.dedent("""
    import sys
    from chaos import ports
    print(ports._lock(int(sys.argv[1])))
""")
ENV = {**os.environ, "PYTHONPATH": str(Path(chaos.__file__).parent.parent)}


def ephemeral() -> range:
    low, high = (int(part) for part in ports.EPHEMERAL_RANGE_FILE.read_text().split())
    return range(low, high + 1)


def lockable_elsewhere(port: int) -> bool:
    done = subprocess.run([sys.executable, "-c", TAKER, str(port)], env=ENV, capture_output=True, text=True,
                          timeout=30, check=True)
    return done.stdout.strip() == "True"


def test_reserved_ports_are_outside_the_ephemeral_range_and_distinct() -> None:
    taken = [ports.reserve() for _ in range(20)]
    try:
        assert len(set(taken)) == len(taken)
        assert not [port for port in taken if port in ephemeral()]
        assert all(ports._bindable(ports.HOST, port) for port in taken)
    finally:
        ports.release(*taken)


def test_a_reserved_port_is_refused_to_another_process_until_released() -> None:
    port = ports.reserve()
    try:
        assert not lockable_elsewhere(port)
    finally:
        ports.release(port)
    assert lockable_elsewhere(port)


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_a_holder_that_dies_gives_its_ports_back(how: signal.Signals) -> None:
    holder = subprocess.Popen([sys.executable, "-c", HOLDER], env=ENV, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        port = int(holder.stdout.readline())
        assert not ports._lock(port)  # the holder has it
    finally:
        holder.send_signal(how)
        holder.wait(10)
    assert ports._lock(port)
    ports._unlock(port)
