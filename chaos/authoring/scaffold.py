"""`chaos target new NAME --backend KIND`: a new target folder, copied from the bundled correct reference
target of that backend kind, its target.toml headed by what to change and how to check it. It runs green
as it is, so a user starts from a passing verdict and changes one thing at a time.

`--library` is for a library's adapter, whose keys are the library's: the reference's own observer and
reconciler stay out (they read and repair the reference's layout, not the library's), and target.toml
ends with the kind's layout to fill in (its LAYOUT module's TEMPLATE), an observer from configuration."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

from chaos.backends.registry import KINDS, layout_module, reference_target
from chaos.discovery import TARGETS, bundled
from chaos.errors import ConfigError
from chaos.names import check_name

HEADER = """\
# A queue-chaos target, started from the bundled reference target {template} (a correct queue on {kind}),
# so it passes every bundled scenario as it is. Make it your queue's, one step at a time:
#   worker.py   your worker. It reports each point of a job's life through chaos.probe: claim (it owns
#               the job), effect (the side effect that must not be lost or doubled), heartbeat (a lease
#               extension and whether it held), ack (completion and whether the queue accepted it) and
#               abandon (it gave up a job it no longer owns); and once, ready (its first poll found
#               nothing: -s warmup=true waits for it). `worker` below may be any command: the
#               placeholders {{python}} {{target_dir}} {{worker}} {{endpoint_url}} {{namespace}} {{param:NAME}} are
#               filled in per process; a worker in another language speaks docs/probe-protocol.md.
#   control.py  runs in the suite: creates the queue, enqueues the suite's jobs (the job id travels in
#               your payload), gives each worker its connection from the endpoint it is handed, and
#               reports every job's state at the end (snapshot: pending, claimed, done, dead).
#   observer.py (where the template has one, named by `observer` below) reads the queue's own record of
#               claims and completions, which the checker judges beside the probes; drop both to judge
#               from the probes alone. On redis, `--library` leaves it out for an [observer] key layout
#               at the end of this file, an observer from configuration.
#   [server]    the backend server's settings (`chaos list` shows what each provider takes);
#   [params]    your queue's own knobs: typed TOML values, handed to workers as JSON (-p key=value);
#   [contract]  what your queue promises, which every verdict judges (docs/writing-a-target.md: how to
#               read it off your library's documentation).
# Check the seams before any fault:   chaos target check {path}
# Then a first verdict:               chaos run --target {path} --scenario kill_after_effect_before_ack
"""


LIBRARY_NOTE = """
# Written with --library: the reference's reconciler and observer are left out. Until worker.py and
# control.py are your library's, a killed worker's job stays where it was (nothing recovers it, so fault
# scenarios fail); your library's own recovery is what they judge then.
"""
# What a library's adapter leaves out of the reference target: the code and the keys that start it.
REFERENCE_ONLY = ("observer.py", "reconciler.py")
REFERENCE_KEYS = ("observer", "reconciler")


def new_target(name: str, kind: str, parent: Path, library: bool = False) -> Path:
    """Write parent/name from the kind's template (with `library`, the form for a library's adapter);
    refuse to touch anything that exists."""
    check_name(name, "target name", "Pick a plain name such as my_queue.")
    if kind not in KINDS:
        raise ConfigError(f"--backend {kind!r} is not a backend kind; expected one of {', '.join(KINDS)}.")
    layout = layout_module(kind) if library else None
    if library and layout is None:
        readers = ", ".join(k for k in KINDS if layout_module(k) is not None)
        raise ConfigError(f"--library scaffolds an observer declared as a key layout, which the {kind} kind does not "
                          f"read (kinds that do: {readers}). Leave out --library: the new target starts from the "
                          f"{kind} reference, and section 10 of docs/writing-a-target.md shows an observer class.")
    folder = parent / name
    try:
        exists = folder.exists()
    except OSError as exc:  # a --dir too long, or one that cannot be looked into
        raise ConfigError(f"Cannot write {folder} ({exc.strerror or exc}); --dir must be a writable "
                          "directory.") from exc
    if exists:
        raise ConfigError(f"{folder} already exists; chaos target new never overwrites anything. Pick another "
                          "NAME, or another --dir.")
    template = reference_target(kind)
    source = TARGETS.get(template, bundled("targets") / template)  # a plugin kind's reference is its own
    try:
        # The code only: the template's README tells its own findings, which are not the new target's.
        left_out = ("__pycache__", "*.pyc", ".mypy_cache", "README.md", *(REFERENCE_ONLY if library else ()))
        shutil.copytree(source, folder, ignore=shutil.ignore_patterns(*left_out))
    except OSError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        raise ConfigError(f"Cannot write {folder} ({exc.strerror or exc}); --dir must be a writable "
                          "directory.") from exc
    toml = (source / "target.toml").read_text()
    description = f"{name}: started from {template}"
    toml = re.sub(r'^name = ".*"$', lambda _: f"name = {toml_string(name)}", toml, count=1, flags=re.MULTILINE)
    toml = re.sub(r'^description = ".*"$', lambda _: f"description = {toml_string(description)}", toml, count=1,
                  flags=re.MULTILINE)
    if layout is not None:
        keys = "|".join(REFERENCE_KEYS)
        toml = re.sub(rf"^(?:{keys}) = .*\n", "", toml, flags=re.MULTILINE) + LIBRARY_NOTE + layout.TEMPLATE
    (folder / "target.toml").write_text(HEADER.format(template=template, kind=kind, path=shlex.quote(str(folder)))
                                        + toml, encoding="utf-8")
    return folder


def toml_string(text: str) -> str:
    """`text` as a TOML basic string, whatever quotes or backslashes a name holds: JSON's escapes are TOML's,
    and characters past ASCII are written as themselves (TOML has no surrogate pairs)."""
    return json.dumps(text, ensure_ascii=False)
