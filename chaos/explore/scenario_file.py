"""Writes a schedule out as a scenario file: a docstring saying what it is and, for a found one, what it
found and how often it replays; FAULTS; the schedule as a literal; and a `run` that plays it."""

from __future__ import annotations

import pprint
from collections.abc import Sequence
from pathlib import Path

from chaos.explore.schedule import Schedule

_BODY = '''
from __future__ import annotations

from chaos import Context
from chaos.explore.play import play

FAULTS = {faults!r}
SCHEDULE = {schedule}


def run(ctx: Context) -> None:
    play(ctx, SCHEDULE)
'''


def render(schedule: Schedule, headline: str, notes: Sequence[str] = ()) -> str:
    lines = [headline, "", "Schedule:", *(f"- {line}" for line in schedule.describe())]
    if notes:
        lines += ["", *notes]
    doc = "\n".join(lines).replace("\\", "\\\\").replace('"""', "'''")
    literal = pprint.pformat(schedule.to_dict(), sort_dicts=False, width=110)
    return f'"""{doc}\n"""\n' + _BODY.format(faults=schedule.faults, schedule=literal)


def write(path: Path, schedule: Schedule, headline: str, notes: Sequence[str] = ()) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(schedule, headline, notes))
    return path
