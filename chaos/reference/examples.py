"""The sample outputs in README.md and docs/ are produced by running their commands, never pasted.

A page holds an example between `<!-- example: NAME -->` and `<!-- /example -->`; `python3 -m chaos.reference.examples`
runs every example's command and writes its output there. tests/integration/test_doc_examples.py reruns them
and checks each page's block still matches, after `normalize` has taken out what legitimately varies from
one run to the next (pids, times, tokens, run-dir stamps, which worker won a race to a job), so a change of
the output's shape, counts, verdict or wording fails it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from chaos.reference import DOCS, REPO

PAGES = (REPO / "README.md", *sorted(DOCS.glob("*.md")))
BLOCK = re.compile(r"(<!-- example: (?P<name>[\w-]+) -->\n)```text\n(?P<body>.*?)```\n(?=<!-- /example -->)", re.DOTALL)
CLIP = " …"


@dataclass(frozen=True)
class Example:
    """One command's output as a page shows it: its stdout, or (with `keys`) those keys of its run's verdict.json."""

    name: str
    argv: tuple[str, ...]
    keys: tuple[str, ...] = ()
    width: int | None = None  # clip longer lines at a word, for a page whose lines must stay short
    # The command whose run dir fills RUN_DIR in argv (`chaos report RUN_DIR --job ...` on a run it made).
    on_run_of: tuple[str, ...] = ()

    @property
    def command(self) -> str:
        return " ".join(("python3", "-m", "chaos", *self.argv))


FIRST_FAILURE = ("run", "--target", "redis_basic", "--scenario", "kill_after_claim_before_effect", "--seed", "1")
STUCK = ("run", "--target", "pg_naive", "--scenario", "kill_after_effect_before_ack", "--seed", "1")
RUN_DIR = "RUN_DIR"
EXAMPLES = (
    Example("first-failure", FIRST_FAILURE, width=116),
    Example("stuck-summary", STUCK),
    Example("stuck-verdict", STUCK, keys=("verdict", "counts", "faults", "violations", "evidence", "reproduce")),
    Example("stuck-job", ("report", RUN_DIR, "--job", "job-0003"), on_run_of=STUCK),
    Example("target-check", ("target", "check", "pg_lease")),
    Example("target-check-copy", ("target", "check", "redis_reliable")),
    Example("huey-held-to-redelivery", ("run", "--target", "huey_redis", "--scenario", "kill_after_claim_before_effect",
                                        "--seed", "1", "-c", "on_owner_loss=redeliver")),
)


def run(argv: tuple[str, ...], runs_dir: Path) -> str:
    """The command's stdout, its run dirs shown under `runs/` as a user's default --runs-dir would have them,
    and paths in this checkout relative to it (where the checkout is varies)."""
    env = {**os.environ, "CHAOS_RUNS_DIR": str(runs_dir), "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "chaos", *argv], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    if not done.stdout.strip():
        raise RuntimeError(f"`chaos {' '.join(argv)}` printed nothing (exit {done.returncode}): {done.stderr}")
    return done.stdout.replace(str(runs_dir), "runs").replace(f"{REPO}/", "")


def run_dir_of(stdout: str) -> str:
    """The run dir a run's output names, under `runs/`."""
    found = re.search(r"^run dir: runs/(\S+)$", stdout, re.MULTILINE)
    if found is None:
        raise RuntimeError(f"no run dir in the output:\n{stdout}")
    return found.group(1)


def verdict_excerpt(stdout: str, runs_dir: Path, keys: tuple[str, ...]) -> str:
    """Those keys of the run's verdict.json; a violation's witness (the summary prints it) is left out."""
    verdict = json.loads((runs_dir / run_dir_of(stdout) / "verdict.json").read_text())
    shown = {key: verdict[key] for key in keys}
    if "violations" in shown:
        shown["violations"] = [{k: v for k, v in violation.items() if k != "witness"}
                               for violation in shown["violations"]]
    return json.dumps(shown, indent=2) + "\n"


def clip(text: str, width: int) -> str:
    """Each line longer than `width` cut at its last space that leaves room for the clip mark."""
    lines = []
    for line in text.splitlines():
        if len(line) > width:
            line = line[:line.rindex(" ", 0, width - len(CLIP))] + CLIP
        lines.append(line)
    return "\n".join(lines) + "\n"


def render_all() -> dict[str, str]:
    """Every example's block, unclipped, each distinct command run once."""
    rendered: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="doc-examples-") as tmp:
        outputs: dict[tuple[str, ...], str] = {}
        for example in EXAMPLES:
            argv, command = example.argv, example.command
            if example.on_run_of:  # the run dir of that command's run, as the page shows it and where it is
                if example.on_run_of not in outputs:
                    outputs[example.on_run_of] = run(example.on_run_of, Path(tmp))
                made = run_dir_of(outputs[example.on_run_of])
                argv = tuple(str(Path(tmp) / made) if arg == RUN_DIR else arg for arg in argv)
                command = command.replace(RUN_DIR, f"runs/{made}")
            if argv not in outputs:
                outputs[argv] = run(argv, Path(tmp))
            body = outputs[argv]
            if example.keys:
                body = verdict_excerpt(body, Path(tmp), example.keys)
            else:
                body = f"$ {command}\n{body}"
            rendered[example.name] = body
    return rendered


def blocks(text: str) -> Iterator[tuple[str, str]]:
    """Each example block of a page: its name and its body."""
    for found in BLOCK.finditer(text):
        yield found.group("name"), found.group("body")


def shown(example: Example, body: str) -> str:
    """The body as a page shows it: clipped to the example's width, if it has one."""
    return clip(body, example.width) if example.width else body


def fill(text: str, rendered: dict[str, str]) -> str:
    """The page with every example block's body replaced by its rendering."""
    by_name = {example.name: example for example in EXAMPLES}
    return BLOCK.sub(lambda found: f"{found.group(1)}```text\n"
                     f"{shown(by_name[found.group('name')], rendered[found.group('name')])}```\n", text)


NORMAL = (
    # The box's provenance stamp: the checkout's commit, the machine's server and Python, the run's date.
    (re.compile(r"@ [0-9a-f]{7,40}(\+modified)?|@ not in git"), "@ <commit>"),
    (re.compile(r"server [^()]*\("), "server <version> ("),
    (re.compile(r"Python \S+"), "Python <version>"),
    (re.compile(r"\d{4}-\d\d-\d\dT[\d:.]+(\+\d\d:\d\d)?"), "<timestamp>"),
    # a date, and its time when a clip at a space has not cut it off
    (re.compile(r"\d{4}-\d\d-\d\d( \d\d:\d\d:\d\d UTC)?"), "<date>"),
    (re.compile(r"\d{8}-\d{6}-\d{6}"), "<stamp>"),
    (re.compile(r"\b[0-9a-f]{32}\b"), "<hex>"),
    (re.compile(r"\b[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}\b"), "<uuid>"),
    (re.compile(r"\bpids?[ =]\[[\d, ]*\]"), "pids"),
    (re.compile(r"\bpid[=\s]\d+"), "pid"),
    (re.compile(r"\b(clock|sent|create_time)=[\d.]+"), r"\1"),
    (re.compile(r"#\d+\s+"), "#N "),
    (re.compile(r"[+-]?\s*\d+\.\d+s?\b"), "<n>"),
    (re.compile(r"\bw\d+\b"), "wN"),  # which worker a job went to is a race the seed does not decide
    (re.compile(r"[ \t]+"), " "),
)


def normalize(text: str) -> list[str]:
    """The lines of an output with what varies between runs of the same command replaced by placeholders."""
    lines = []
    for line in text.strip("\n").splitlines():
        for pattern, replacement in NORMAL:
            line = pattern.sub(replacement, line)
        lines.append(line.rstrip())
    return lines


def matches(page: str, fresh: str) -> bool:
    """Whether a page's block is what the command prints now (unclipped): equal after `normalize`, where a
    line the page clipped need only begin the fresh one (the clip cuts at a space, so whole words remain)."""
    was, now = normalize(page), normalize(fresh)
    mark = CLIP.strip()
    return len(was) == len(now) and all(a == b or (a.endswith(mark) and b.startswith(a.removesuffix(mark).rstrip()))
                                        for a, b in zip(was, now, strict=True))


def main() -> int:
    rendered = render_all()
    for page in PAGES:
        text = page.read_text()
        filled = fill(text, rendered)
        if filled != text:
            page.write_text(filled)
            print(f"wrote {page.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
