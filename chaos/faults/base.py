"""A fault kind is one name with two halves that meet only in the ledger, as nemesis and checker do in
Jepsen:

- the checker's half (pure): what the fault does to ownership (whose executions it reaches, whether
  it takes their jobs from them or ends them, whether it excuses a reclaim), and its proof from the
  ledger that it landed, which reads the checker's records through `FaultView` and `RunView` (so a fault
  kind never imports the checker either);
- the runtime half: `inject` (and `heal`, run in `finally`), driven by `chaos.runtime.nemesis` against
  a `FaultWorld`, so a fault kind never imports the supervisor or a backend.

A kind without a proof is never counted as exercised, so a run that relies on it is inconclusive.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from chaos.events import Event

# Which processes a signal reaches: the worker's own process, its whole tree, or (a kill of a held probe)
# only the process of the tree that sent the probe: a library's pool child or work-horse, which its parent
# may replace while the worker itself lives on.
Scope = Literal["process", "tree", "sender"]
Params = dict[str, Any]


class FaultView(Protocol):
    """What a proof (and a probe watcher) may read of one fault, as the checker's scan of the ledger
    gathers it (`chaos.check.history.FaultHistory`). Declared here, so a fault kind imports nothing of
    the checker: the checker hands its own records to the proof, and mypy checks they fit."""

    @property
    def target(self) -> str | None: ...

    @property
    def seq(self) -> int:
        """Its journal entry's: the fault is under way from here on."""

    @property
    def data(self) -> Mapping[str, Any]:
        """The parameters it was journaled with."""

    @property
    def applied(self) -> Event | None: ...

    @property
    def healed(self) -> Event | None: ...

    @property
    def victims(self) -> Sequence[object]:
        """The executions it reached."""

    @property
    def observed(self) -> dict[str, Any]:
        """What its kind's `watch_probe` saw: the watcher writes it, the proof reads it."""


class RunView(Protocol):
    """What a proof may read of the whole run (`chaos.check.history.RunHistory`): process exits and
    starts by process name, the backend's restart reports, and each worker's faults and process events."""

    @property
    def exits(self) -> Mapping[str, Sequence[Event]]: ...

    @property
    def starts(self) -> Mapping[str, Sequence[Event]]: ...

    @property
    def backend_restarts(self) -> Sequence[Event]: ...

    @property
    def context(self) -> Mapping[str, Sequence[Event]]: ...

    def at(self, event: Event) -> str:
        """The event's time since the run's first event, as messages show it."""


Proof = Callable[[FaultView, RunView], tuple[bool, str]]


class NetworkLink(Protocol):
    """One worker's proxy in front of the backend (`chaos.runtime.network`)."""

    proxy: str

    def enabled(self, enabled: bool) -> None:
        """Enable the proxy, or disable it: its connections close and new ones are refused."""

    def add_toxic(self, name: str, kind: str, stream: str, attributes: dict[str, int], toxicity: float = 1.0) -> None:
        """Add a Toxiproxy toxic to one direction (upstream: worker to backend)."""

    def remove_toxic(self, name: str) -> None: ...


class FaultWorld(Protocol):
    """What the runtime half may act on: the run's processes, its backend, and how it starts workers."""

    def signal(self, name: str, sig: signal.Signals, scope: Scope = "tree", pid: int | None = None) -> list[int]:
        """Send `sig` to a supervised process (or its tree, or its tree's process `pid`); the pids that received it."""

    def reap(self, name: str, pids: list[int] | None = None) -> None:
        """Wait until the exit of a killed process (of those of `pids` that were its own) is in the ledger."""

    def restart_process(self, name: str) -> tuple[list[int], int]:
        """SIGKILL a process tree, reap it, start it again: (pids killed, new pid)."""

    def restart_backend(self, mode: str) -> None:
        """Restart the backend server on the same data and address."""

    def start_worker(self, name: str, extra_env: dict[str, str]) -> int:
        """Start a worker of the target with extra environment; its pid."""

    def network(self, name: str) -> NetworkLink:
        """The worker's proxy (only in runs whose scenario declares a network fault)."""

    def pause_container(self, name: str, paused: bool) -> list[int]:
        """Freeze (or thaw) a worker's container through the cgroup freezer; the host pids it holds."""

    def kill_container(self, name: str) -> list[int]:
        """SIGKILL a worker's container (every process in it); the host pids it held."""

    def connect_backend(self, connected: bool) -> list[str]:
        """Cut the backend's container off its network, or connect it again; the networks it is on."""


@dataclass(frozen=True)
class FaultKind:
    name: str
    # What it does, for a reader (explore's step descriptions, the docs): a phrase in which "{worker}" names
    # its target, e.g. "SIGKILL {worker}".
    action: str = ""
    # What a report says of it once applied, and once healed (chaos.reports.proof): sentences in which
    # "{who}" names its target, "{pids}" the pids it touched, and any other field one of its records' data.
    applied_words: str = ""
    healed_words: str = ""
    # -- the checker's half ---------------------------------------------------------------------------
    # Whose executions it reaches: its target worker's, or every worker's (the backend is shared).
    reach: Literal["target", "everyone"] = "target"
    # The executions it reaches lose their job: the job's recovery clock starts when it is applied.
    takes_owner: bool = False
    # The executions it reaches end at its journal entry (the process is gone).
    ends_executions: bool = False
    # What it ends, it starts again at once (the process under the same name, or the backend server).
    restarts: bool = False
    # A reclaim from an owner this fault reached is not premature: "since_claim" when the fault came
    # after the owner's claim, "always" when the owner ran under it from the start (a skewed clock).
    excuses: Literal["since_claim", "always", "never"] = "never"
    # Its target is frozen while it lasts (journal to heal): a probe the target had in flight, or was
    # about to send, reaches the ledger late. So a claim reported meanwhile may have been made before it,
    # and the times of the target's reports are only upper bounds.
    suspends: bool = False
    # When the recovery of the jobs it took starts: at its application, or (for a fault that keeps every
    # worker from the server, so that nobody can recover anything while it lasts) at its heal.
    recovery_from: Literal["applied", "healed"] = "applied"
    prove: Proof | None = None
    # Looks at each probe of its target while the run is scanned (a skewed clock shows on probes).
    watch_probe: Callable[[FaultView, Event], None] | None = None
    # -- the runtime half ---------------------------------------------------------------------------
    needs: frozenset[str] = frozenset()  # backend capabilities (chaos.backends.base) it requires
    network: bool = False  # acts on the workers' proxies: a run whose scenario declares it gets one per worker
    containers: bool = False  # acts on the workers' containers: a target whose workers run in none is refused
    # Raises ConfigError when this machine cannot inject it (a missing library); run before anything starts.
    preflight: Callable[[], None] | None = None
    # Applies the fault; returns what it touched, for `fault.applied`.
    inject: Callable[[FaultWorld, str, Params], Params] | None = None
    # Runs once `fault.applied` is in the ledger (a kill then waits for the reaped exit).
    settle: Callable[[FaultWorld, str, Params], None] | None = None
    # Undoes the fault, in `finally`; returns what it touched, for `fault.healed`.
    heal: Callable[[FaultWorld, str, Params], Params] | None = None


    def says(self, worker: str) -> str:
        """Its action, for `worker` ("its owner", "w1")."""
        return (self.action or f"apply a {self.name} fault to {{worker}}").format(worker=worker)


def not_exercised_without_proof(kind: str) -> tuple[bool, str]:
    return False, f"fault kind {kind!r} has no registered proof, so the ledger cannot show it landed"


def signalled(fault: FaultView) -> list[Any]:
    """The pids a signal fault reached, as its `fault.applied` entry records them."""
    return list(fault.applied.data.get("pids") or []) if fault.applied is not None else []
