"""The schedules the shards of one `-j` exploration run, kept in one folder so that no two shards run the
same schedule: every shard's Hypothesis starts from the simplest schedule, and with a shared example
database they draw alike. A shard claims a schedule before running it (a file made exclusively) and
writes the run there when it ends; a shard that draws it later takes that run as its own answer, free of
its budget, or skips the schedule while the run is still under way."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from chaos.explore.runs import Attempt


class Running:
    """Another shard claimed the schedule and its run has not ended."""


RUNNING = Running()


class SharedRuns:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def clear(self) -> None:
        """Forget an earlier exploration's runs (the parent does this before it starts the shards)."""
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder.mkdir(parents=True)

    def claim(self, digest: str) -> Attempt | Running | None:
        """None when this shard now owns the schedule's run; else what another shard made of it."""
        try:
            os.close(os.open(self._claim(digest), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            done = self._result(digest)
            return Attempt.from_dict(json.loads(done.read_text())) if done.exists() else RUNNING
        return None

    def record(self, attempt: Attempt) -> None:
        """The claimed schedule's run, for the other shards (written whole, then renamed into place)."""
        done = self._result(attempt.schedule.digest())
        partial = done.with_suffix(".partial")
        partial.write_text(json.dumps(attempt.to_dict()))
        partial.replace(done)

    def _claim(self, digest: str) -> Path:
        return self.folder / f"{digest}.claim"

    def _result(self, digest: str) -> Path:
        return self.folder / f"{digest}.json"
