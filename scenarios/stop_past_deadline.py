"""Hold work past its deadline: SIGSTOP the owner right after its claim until another worker has
claimed the job, then SIGCONT it (seeds' checklist, item 3).

Risk probed: "a worker may still be computing after its lease expires": the stale owner resumes and
must not complete the job it lost. A conditional ack (token and status) rejects it, and a watchdog
stops it before its effect; an unconditional ack lets the stale worker's completion win.
For ownership models without a deadline (row or advisory locks), nobody may take the job from the
stopped owner: it finishes it after SIGCONT, and the stop lasts at most the recovery bound plus a margin.
"""

from __future__ import annotations

from chaos import Context

FAULTS = ("stop",)
JOBS = 6


def run(ctx: Context) -> None:
    jobs = ctx.enqueue(JOBS)
    victim = ctx.rng.choice(jobs)
    gate = ctx.arm("after:claim", job=victim)
    ctx.start_workers(2)
    held = ctx.wait(gate)
    owner = held.worker
    ctx.stop_until(owner, ctx.probe_of("claim", victim, not_worker=owner), ctx.recovery_deadline(), gate=gate,
                   premise=ctx.leased)
    # The resumed owner must finish its stale execution (abandon, or an ack the queue judges) before the end.
    ctx.wait_for(ctx.execution_ended(victim, held.token), ctx.recovery_deadline(), "the stale owner's ack/abandon")
    ctx.wait_drained(ctx.recovery_deadline())
