"""Shards: a stable slice of a suite for each of N machines, which `chaos merge` joins again.

Runs are keyed by target x params x contract x scenario x scenario params x seed (`Planned.key`); every
repeat of a key lands in one shard. Without stored durations the sorted keys are dealt round-robin;
with them (a suite.json of an earlier run or merge, `--durations`), each key goes, longest first, to the
shard with the least work so far, so shards end together. Either way every machine computes the same
split from the same inputs, and the N slices cover the suite exactly once. The durations are an input
that can differ between machines (a CI cache hit on one, a miss on another): each shard records its
dealing and the digest of the durations it used (chaos.suite.plan), and a merge refuses shards dealt
differently.
"""

from __future__ import annotations

import hashlib
import json
import re
import statistics
from collections.abc import Iterable
from pathlib import Path

from chaos.errors import ConfigError

_SHARD = re.compile(r"^(\d+)/(\d+)$")


def parse_shard(text: str) -> tuple[int, int]:
    """'K/N' (1 <= K <= N): this machine's shard, and how many there are."""
    found = _SHARD.match(text.strip())
    if found:
        index, count = int(found.group(1)), int(found.group(2))
        if 1 <= index <= count:
            return index, count
    raise ConfigError(f"--shard {text!r}: expected K/N with 1 <= K <= N, e.g. --shard 2/4 for the second of four "
                      "shards (a GitHub Actions matrix or a Kubernetes Indexed Job gives each machine its K).")


def load_durations(path: Path) -> dict[str, float]:
    """Seconds per run key, averaged over repeats, from a suite.json (an earlier run's, or a merge's)."""
    try:
        cells = json.loads(path.read_text())["cells"]
        seen: dict[str, list[float]] = {}
        for cell in cells:
            seen.setdefault(str(cell["key"]), []).append(float(cell["duration_s"]))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"--durations {path}: expected the suite.json an earlier `chaos suite` or `chaos merge` "
                          f"wrote, with each cell's key and duration_s ({exc!r}).") from exc
    return {key: statistics.fmean(times) for key, times in seen.items()}


def durations_digest(durations: dict[str, float]) -> str:
    """What names stored durations in a plan: two machines with one digest dealt their keys alike."""
    text = json.dumps(sorted(durations.items()), separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def deal(keys: Iterable[str], count: int, durations: dict[str, float] | None = None) -> dict[str, int]:
    """Each run key's shard (1 to `count`)."""
    ordered = sorted(set(keys))
    if durations:
        return _balanced(ordered, count, durations)
    return {key: position % count + 1 for position, key in enumerate(ordered)}


def _balanced(keys: list[str], count: int, durations: dict[str, float]) -> dict[str, int]:
    """Longest first, each key to the shard with the least stored time so far (ties: the lower shard);
    a key with no stored time counts the median of those known."""
    typical = statistics.median(durations.values())
    dealt: dict[str, int] = {}
    loads = [0.0] * count
    for key in sorted(keys, key=lambda key: (-durations.get(key, typical), key)):
        lightest = min(range(count), key=lambda shard: (loads[shard], shard))
        dealt[key] = lightest + 1
        loads[lightest] += durations.get(key, typical)
    return dealt
