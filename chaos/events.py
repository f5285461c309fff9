"""The ledger's vocabulary, in one leaf module: event kinds and their typed constructors, the probe
points, the sink's token header and every `CHAOS_*` variable name.

Producers (sink, nemesis, supervisor, run, context, backends) build events only through the
constructors below, and consumers (checker, reports) compare against the kind constants, so a renamed
kind or key cannot drift between the two. Workers import it too, so it keeps to the standard library
and to Python 3.8 syntax, like the rest of `chaos.worker`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

# -- the worker probe protocol -----------------------------------------------------------------------

POINTS = ("claim", "effect", "heartbeat", "ack", "abandon")
CLAIM, EFFECT, HEARTBEAT, ACK, ABANDON = POINTS
# A worker's own points, of no job: `ready` says it has started and polled the queue once with nothing to
# take (a scenario's `-s warmup=true` enqueues only once every worker said so). Gates never hold them.
READY = "ready"
WORKER_POINTS = (READY,)
TOKEN_HEADER = "X-Chaos-Token"
PROBE_PATH = "/probe/"

# -- environment variables -------------------------------------------------------------------------

ENV_SINK_URL = "CHAOS_SINK_URL"
ENV_RUN_TOKEN = "CHAOS_RUN_TOKEN"
ENV_WORKER_ID = "CHAOS_WORKER_ID"
ENV_TARGET_PARAMS = "CHAOS_TARGET_PARAMS"
ENV_CONTRACT = "CHAOS_CONTRACT"
ENV_POSTGRES_DSN = "CHAOS_POSTGRES_DSN"  # what TableQueueControl hands a PostgreSQL worker
ENV_POSTGRES_BIN = "CHAOS_POSTGRES_BIN"  # the local provider's binaries
ENV_POSTGRES_TEMPLATE_DIR = "CHAOS_POSTGRES_TEMPLATE_DIR"  # where the local provider keeps its initdb template
# What a worker of the other backend kinds gets: its endpoint's URL (a proxy when the network is faulted)
# and the run's namespace on that server (a Redis key prefix, a beanstalkd tube).
ENV_BACKEND_URL = "CHAOS_BACKEND_URL"
ENV_NAMESPACE = "CHAOS_NAMESPACE"
# Each kind's external provider names its own URL variable (ENV_URL in the kind's package).
ENV_SERVER_MARKER = "CHAOS_SERVER_ID"  # in the environment of every process of a local server (not PostgreSQL)
ENV_RUN_MARKER = "CHAOS_RUN_MARKER"  # in the environment of every worker and reconciler, inherited by their descendants
ENV_TARGETS_PATH = "CHAOS_TARGETS_PATH"
ENV_SCENARIOS_PATH = "CHAOS_SCENARIOS_PATH"
ENV_RUNS_DIR = "CHAOS_RUNS_DIR"
ENV_DOCS_URL = "CHAOS_DOCS_URL"  # the built docs site's base URL, which reports link violations to

# -- who writes events -------------------------------------------------------------------------------

CONTROLLER, SINK, NEMESIS, SUPERVISOR, BACKEND = "controller", "sink", "nemesis", "supervisor", "backend"
NETWORK = "network"  # the per-worker proxies (Toxiproxy)
OBSERVER = "observer"  # a target's observer: the queue's own record of who claimed and completed a job
# BACKEND is also the target the nemesis names for faults of the backend server.

# -- event kinds -------------------------------------------------------------------------------------

RUN_START, RUN_END = "run.start", "run.end"
ENQUEUE = "enqueue"
SNAPSHOT, SNAPSHOT_TAKEN = "snapshot", "snapshot.taken"
DRAINED, DRAIN_TIMEOUT = "drained", "drain.timeout"
PROBE_PREFIX = "probe."
PROBE_CLAIM, PROBE_EFFECT, PROBE_HEARTBEAT, PROBE_ACK, PROBE_ABANDON = (PROBE_PREFIX + p for p in POINTS)
PROBE_DROPPED, PROBE_REFUSED = "probe.dropped", "probe.refused"
PROBE_READY = PROBE_PREFIX + READY
GATE_ARMED, GATE_MATCHED, GATE_RELEASED = "gate.armed", "gate.matched", "gate.released"
FAULT, FAULT_APPLIED, FAULT_HEALED = "fault", "fault.applied", "fault.healed"
FAULT_WAIVED = "fault.waived"  # a fault kind the scenario declares but does not need against this target
PROCESS_START, PROCESS_EXIT = "process.start", "process.exit"
CONTAINMENT = "process.containment"  # how the run finds its processes (marker, cgroup), before the first starts
BACKEND_START, BACKEND_RESTART, BACKEND_EXIT = "backend.start", "backend.restart", "backend.exit"
BACKEND_PREPARE = "backend.prepare"  # what a local server is about to create, journaled before it is
# The per-worker proxies: which Toxiproxy serves them, and what the embedded one saw a partition do
NETWORK_START, NETWORK_CUT, NETWORK_HELD = "network.start", "network.cut", "network.held"
NETWORK_PROXY = "network.proxy"  # a proxy the run is about to create, journaled before it is
# The queue's own record, as a target's observer reads it (its order, its clock, the actor it names):
# a claim it committed, a completion it accepted, a job it took back (a release or a revocation), a
# job it recorded failed or dead.
QUEUE_PREFIX = "queue."
QUEUE_CLAIM, QUEUE_COMPLETE, QUEUE_RELEASE, QUEUE_FAIL = "queue.claim", "queue.complete", "queue.release", "queue.fail"
QUEUE_KINDS = (QUEUE_CLAIM, QUEUE_COMPLETE, QUEUE_RELEASE, QUEUE_FAIL)
OBSERVER_START = "observer.start"  # a target's observer installed: what it is and which record kinds it covers
# The control's answer, for an ack its worker reported with ok null (a library completes jobs out of the
# handler's sight), whether the queue took that completion: accepted, refused or unknown; or done: the
# queue completed the job, by this execution's ack or another's (it does not record whose).
COMPLETION = "control.completion"
COMPLETIONS = ("accepted", "refused", "done", "unknown")
# Where a piece of completion evidence comes from (an ack probe's and a control answer's `source`):
# "worker", the worker's report of what the queue answered its ack (an ack probe that names no source);
# "broker", the broker's own answer to the ack as the worker read it (the ack call returned or raised);
# "queue", the queue's record of which execution completed the job (a row's completing token, a stream's
# pending entry; a control answer that names no source); "result-store", a result backend, which stores a
# task's return value whoever acked it: it proves the task ran to completion, never that its ack was taken.
# Only ACK_SOURCES decide whether an ack was accepted or refused.
SOURCES = ("worker", "broker", "queue", "result-store")
ACK_SOURCES = ("worker", "broker", "queue")
WORKER_REPORT, QUEUE_RECORD = "worker", "queue"  # what an ack probe, a control answer, says when it names none
KINDS = frozenset({
    RUN_START, RUN_END, ENQUEUE, SNAPSHOT, SNAPSHOT_TAKEN, DRAINED, DRAIN_TIMEOUT, PROBE_CLAIM, PROBE_EFFECT,
    PROBE_HEARTBEAT, PROBE_ACK, PROBE_ABANDON, PROBE_READY, PROBE_DROPPED, PROBE_REFUSED, GATE_ARMED, GATE_MATCHED,
    GATE_RELEASED, FAULT, FAULT_APPLIED, FAULT_HEALED, PROCESS_START, PROCESS_EXIT, CONTAINMENT, BACKEND_START,
    BACKEND_RESTART, BACKEND_EXIT, NETWORK_START, NETWORK_CUT, NETWORK_HELD,
    BACKEND_PREPARE, NETWORK_PROXY, FAULT_WAIVED, OBSERVER_START, COMPLETION, *QUEUE_KINDS,
})


class Record(NamedTuple):
    """An event as its producer builds it; the ledger stamps it with a sequence number and both clocks."""

    kind: str
    source: str
    job: str | None
    worker: str | None
    data: dict[str, Any]


class Event(NamedTuple):
    """One thing that happened, stamped with the controller's monotonic and wall clocks.

    A named tuple, not a dataclass: a million of them load four times faster, and it is as immutable.
    """

    seq: int
    mono: float
    wall: float
    source: str
    kind: str
    job: str | None
    worker: str | None
    data: dict[str, Any]


# -- constructors, one per kind ----------------------------------------------------------------------


def run_start(**data: Any) -> Record:
    """target, scenario, seed, params, contract, backend, command, pid (and whatever else a run records)."""
    return Record(RUN_START, CONTROLLER, None, None, data)


SKIPPED = "skipped"  # run.end's status for a scenario whose REQUIRES the contract does not meet


def run_end(status: str, detail: str) -> Record:
    return Record(RUN_END, CONTROLLER, None, None, {"status": status, "detail": detail})


def enqueue(job: str, payload: dict[str, Any]) -> Record:
    return Record(ENQUEUE, CONTROLLER, job, None, dict(payload))


def snapshot(job: str, state: str, owner: str | None, attempts: int | None,
             detail: dict[str, Any] | None = None) -> Record:
    data = {"state": state, "owner": owner, "attempts": attempts}
    data.update(detail or {})
    return Record(SNAPSHOT, CONTROLLER, job, owner, data)


def snapshot_taken(jobs: int) -> Record:
    return Record(SNAPSHOT_TAKEN, CONTROLLER, None, None, {"jobs": jobs})


def drained(jobs: int) -> Record:
    return Record(DRAINED, CONTROLLER, None, None, {"jobs": jobs})


def drain_timeout(timeout_s: float, error: str, workers_exited: bool = False) -> Record:
    """`workers_exited`: the wait ended before its bound, as no process was left that could finish a job."""
    data: dict[str, Any] = {"timeout_s": timeout_s, "error": error}
    if workers_exited:
        data["workers_exited"] = True
    return Record(DRAIN_TIMEOUT, CONTROLLER, None, None, data)


def probe(point: str, job: str | None, worker: str | None, data: dict[str, Any]) -> Record:
    """A worker's probe as the sink commits it: every field it sent but job and worker, in data (a worker
    point such as `ready` has no job)."""
    return Record(PROBE_PREFIX + point, SINK, job, worker, data)


def observer_start(observer: str, covers: list[str], note: str = "") -> Record:
    """`note`: why it covers what it does here (nothing, on a server it may not look at), where it says."""
    return Record(OBSERVER_START, OBSERVER, None, None,
                  {"observer": observer, "covers": covers, **({"note": note} if note else {})})


def queue_record(kind: str, job: str, actor: str | None, data: dict[str, Any]) -> Record:
    """One entry of the queue's own record; `actor`: the suite's name of the worker it names, `data`: the
    queue's own fields (its timestamp `at`, its order `order`, the library's worker id `library_id`, token)."""
    return Record(kind, OBSERVER, job, actor, data)


def completion(job: str, worker: str | None, token: str, outcome: str, source: str = QUEUE_RECORD) -> Record:
    """The control's word on the completion of `job` by `worker`'s execution `token` (one of COMPLETIONS),
    and what it read to say so (one of SOURCES)."""
    return Record(COMPLETION, CONTROLLER, job, worker, {"token": token, "outcome": outcome, "source": source})


def probe_dropped(point: str, job: str, worker: str | None, fields: dict[str, Any], reason: str) -> Record:
    return Record(PROBE_DROPPED, SINK, job, worker, dict(fields, point=point, reason=reason))


def probe_refused(status: int, error: str, path: str) -> Record:
    """A request the sink answered with an error: the first of each kind, so a worker sending the wrong
    token or malformed probes is named in the verdict instead of its jobs looking stuck."""
    return Record(PROBE_REFUSED, SINK, None, None, {"status": status, "error": error, "path": path})


def gate_armed(gate: str, spec: str, job: str | None, worker: str | None) -> Record:
    return Record(GATE_ARMED, CONTROLLER, job, worker, {"gate": gate, "spec": spec})


def gate_matched(gate: str, spec: str, point: str, job: str, worker: str | None, pid: Any) -> Record:
    return Record(GATE_MATCHED, SINK, job, worker, {"gate": gate, "spec": spec, "point": point, "pid": pid})


def gate_released(gate: str, job: str | None) -> Record:
    return Record(GATE_RELEASED, CONTROLLER, job, None, {"gate": gate})


def fault(fault_id: str, kind: str, target: str, gate: str | None, params: dict[str, Any]) -> Record:
    """A fault about to be applied: journaled first, so the ledger shows it under way from here on."""
    data = {"id": fault_id, "kind": kind, "target": target, "gate": gate}
    data.update(params)
    return Record(FAULT, NEMESIS, None, target, data)


def fault_waived(kind: str, why: str) -> Record:
    """The scenario will not inject this declared kind in this run, and why (e.g. nothing to kill without a
    lease): without it, a declared kind never injected makes the run inconclusive."""
    return Record(FAULT_WAIVED, CONTROLLER, None, None, {"kind": kind, "why": why})


def fault_applied(fault_id: str, target: str, data: dict[str, Any]) -> Record:
    """What the fault touched (pids, a new pid, the backend's downtime...)."""
    return Record(FAULT_APPLIED, NEMESIS, None, target, dict(data, id=fault_id))


def fault_healed(fault_id: str, target: str, data: dict[str, Any]) -> Record:
    return Record(FAULT_HEALED, NEMESIS, None, target, dict(data, id=fault_id))


def process_start(name: str, pid: int, role: str, argv: Any = None, create_time: float | None = None,
                  container: str | None = None) -> Record:
    """`container`: the container it runs in, where it runs in one (its pid is the host's)."""
    data = {"pid": pid, "role": role, "argv": argv, "create_time": create_time}
    return Record(PROCESS_START, SUPERVISOR, None, name, {**data, "container": container} if container else data)


def containment(marker: str, cgroup: str | None) -> Record:
    """The marker every process of the run's workers carries in its environment, and the cgroup v2 holding
    them (None where the machine allows none): written before the first worker starts, so `chaos clean`
    finds whatever a killed runner's workers left, however they detached."""
    return Record(CONTAINMENT, SUPERVISOR, None, None, {"marker": marker, "cgroup": cgroup})


def process_exit(name: str, pid: int, role: str, returncode: int, signal: str | None = None, *,
                 expected: bool = True, forced: bool = False, log: str | None = None,
                 log_tail: list[str] | None = None) -> Record:
    """A reaped exit; `signal` names the signal that ended it (a negative returncode). `expected`: the suite
    ended it (a fault, the end of the run); an unexpected exit carries its log's last lines. `forced`: it
    outlived the shutdown grace and was SIGKILLed."""
    data: dict[str, Any] = {"pid": pid, "role": role, "returncode": returncode, "expected": expected}
    if signal is not None:
        data["signal"] = signal
    if forced:
        data["forced"] = True
    if log is not None:
        data["log"] = log
    if log_tail is not None:
        data["log_tail"] = log_tail
    return Record(PROCESS_EXIT, SUPERVISOR, None, name, data)


def backend_start(**data: Any) -> Record:
    """provider and where it runs (pid, port, url, the run's namespace on an external server...)."""
    return Record(BACKEND_START, BACKEND, None, None, data)


def backend_prepare(**data: Any) -> Record:
    """provider and what it is about to create (its data directory, the marker of its processes), written
    before anything is created, so a runner killed during the boot leaves nothing `chaos clean` cannot find."""
    return Record(BACKEND_PREPARE, BACKEND, None, None, data)


def backend_restart(mode: str, old_pid: int | None, new_pid: int | None, down_s: float) -> Record:
    """The backend's own report that it restarted: the proof of a backend restart fault."""
    return Record(BACKEND_RESTART, BACKEND, None, None,
                  {"mode": mode, "old_pid": old_pid, "new_pid": new_pid, "down_s": down_s})


def backend_exit(pid: int, returncode: int, reason: str) -> Record:
    return Record(BACKEND_EXIT, BACKEND, None, None, {"pid": pid, "returncode": returncode, "reason": reason})


def network_start(kind: str, url: str, marker: str) -> Record:
    """The run's Toxiproxy: external (TOXIPROXY_URL), binary (toxiproxy-server on PATH) or embedded; and the
    marker every proxy name of the run carries (chaos.ownership)."""
    return Record(NETWORK_START, NETWORK, None, None, {"kind": kind, "url": url, "marker": marker})


def network_proxy(worker: str, name: str, url: str) -> Record:
    """A proxy about to be created on the Toxiproxy at `url`, written before it is, so `chaos clean` can
    delete it from a server that outlives a killed runner (the user's TOXIPROXY_URL)."""
    return Record(NETWORK_PROXY, NETWORK, None, worker, {"name": name, "url": url})


def network_cut(worker: str, connections: int) -> Record:
    """A disabled proxy closed this worker's connections to the backend."""
    return Record(NETWORK_CUT, NETWORK, None, worker, {"connections": connections})


def network_held(worker: str, size: int) -> Record:
    """A black hole swallowed this many bytes of this worker's traffic (reported when the connection closed)."""
    return Record(NETWORK_HELD, NETWORK, None, worker, {"bytes": size})
