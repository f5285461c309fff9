"""Guided against random exploration on the broken variants: each variant explored with the same budget
and seeds in both modes (a fresh example database each time), printing, per variant and mode, the runs
and seconds until its known violation was first seen, the failing runs per hour, the distinct violations
found, and whether the smallest schedule found is no larger than the bundled scenario that catches it."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# variant -> (its -p settings, the violation the bundled catcher shows, that scenario, its size as
# (fault steps, jobs, workers started in all), counted from its code)
VARIANTS: dict[str, tuple[list[str], str, str, tuple[int, int, int]]] = {
    "pg_lease ack=unconditional watchdog=off": (
        ["--target", "pg_lease", "-p", "ack=unconditional", "-p", "watchdog=off"], "stale_ack_accepted",
        "stop_past_deadline", (1, 6, 2)),
    "pg_lease extend=any": (["--target", "pg_lease", "-p", "extend=any"], "stale_extension_accepted",
                            "stop_owner_then_kill_next_owner", (2, 1, 3)),
    "pg_lease reclaim=early": (["--target", "pg_lease", "-p", "reclaim=early"], "early_reclaim",
                               "kill_after_claim_before_effect", (1, 8, 3)),
    "pg_lifeline": (["--target", "pg_lifeline"], "premature_reclaim", "lease_shorter_than_handler", (0, 4, 2)),
    "redis_basic": (["--target", "redis_basic"], "lost", "kill_after_claim_before_effect", (1, 8, 3)),
}


def explore(args: list[str], mode: str, seed: int, budget: int, home: Path) -> dict:  # type: ignore[type-arg]
    runs = home / "-".join([*(a.replace("=", "_") for a in args if not a.startswith("-")), mode, str(seed)])
    subprocess.run([sys.executable, "-m", "chaos", "explore", *args, "--mode", mode, "--seed", str(seed),
                    "--budget", str(budget), "--replays", "1", "--fresh", "--runs-dir", str(runs),
                    "--out", str(runs / "found")], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    (report,) = runs.glob("explore/*/report.json")
    loaded: dict = json.loads(report.read_text())  # type: ignore[type-arg]
    return loaded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--budget", type=int, default=20, help="runs per exploration (default 20)")
    parser.add_argument("--seeds", type=int, default=2, help="explorations per variant and mode (default 2)")
    parser.add_argument("--only", default="", help="only the variants whose name contains this text")
    options = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="queue-chaos-explore-bench-"))
    print(f"{'variant':<42} {'mode':<7} {'found':>5} {'runs to it':>10} {'s to it':>8} {'fails/h':>8} "
          f"{'kinds':>5} {'size':>7} {'bundled':>7}")
    for name, (args, violation, _, bundled) in VARIANTS.items():
        if options.only not in name:
            continue
        for mode in ("guided", "random"):
            found, runs_to, seconds_to, fails, seconds, kinds, sizes = 0, [], [], 0, 0.0, set(), []
            for seed in range(1, options.seeds + 1):
                report = explore(args, mode, seed, options.budget, home)
                fails += report["verdicts"].get("fail", 0)
                seconds += report["used"]["seconds"]
                for finding in report["findings"]:
                    kinds.add(finding["violation"])
                    if finding["violation"] == violation:
                        found += 1
                        runs_to.append(finding["first_found_after_runs"])
                        seconds_to.append(finding["first_found_after_s"])
                        size = finding["size"]
                        sizes.append((size["steps"], size["jobs"], size["workers"]))
            mean = (lambda xs: f"{sum(xs) / len(xs):.1f}" if xs else "-")  # noqa: E731
            smallest = "/".join(map(str, min(sizes))) if sizes else "-"
            print(f"{name:<42} {mode:<7} {found:>2}/{options.seeds:<2} {mean(runs_to):>10} {mean(seconds_to):>8} "
                  f"{fails / max(seconds, 1) * 3600:>8.0f} {len(kinds):>5} {smallest:>7} "
                  f"{'/'.join(map(str, bundled)):>7}", flush=True)
    print(f"(explorations under {home})")


if __name__ == "__main__":
    main()
