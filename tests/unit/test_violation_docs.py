"""The violation kinds are one list (chaos.check.violation_kinds): the checker names no other, each one it
names is still emitted somewhere in the checker, each has a real witness captured from a run, and the reports
point at its docs anchor. The generated CLI page leaves out no option of the parser."""

from __future__ import annotations

import argparse
import re
import shutil
from pathlib import Path

import pytest

from chaos.check.checker import judge
from chaos.check.verdict import Violation
from chaos.check.violation_kinds import VIOLATION_KINDS, doc_anchor
from chaos.cli import _parser
from chaos.contract import Contract
from chaos.reference import DOCS
from chaos.reference.pages import cli, stale
from chaos.reference.witnesses import load_witnesses
from chaos.reports import timeline
from chaos.reports.text import summary
from tests.history import History

CHECKER = Path(__file__).resolve().parents[2] / "chaos" / "check"
# A witness line as the text report prints it: "#<seq> +<seconds>s  <event kind> ..."
WITNESS_LINE = re.compile(r"^#\d+\s+\+\s*\d+\.\d{3}s  [a-z_.]+")


def test_a_violation_of_a_kind_outside_the_catalogue_is_refused() -> None:
    Violation("lost", "a", "enqueued but never effected")
    with pytest.raises(ValueError, match="chaos.check.violation_kinds"):
        Violation("misplaced", "a", "no such kind")


@pytest.mark.parametrize("kind", sorted(VIOLATION_KINDS))
def test_each_catalogued_kind_is_one_the_checker_emits(kind: str) -> None:
    # A kind is a literal in the judging code (an outcome, a finding, a violation): one that no longer
    # appears there is a stale entry, and the docs would explain a violation nothing reports.
    sources = [p.read_text() for p in CHECKER.glob("*.py") if p.name != "violation_kinds.py"]
    assert any(f'"{kind}"' in source for source in sources), f"{kind} appears nowhere in chaos/check/"


def test_every_kind_has_a_real_witness() -> None:
    witnesses = load_witnesses()
    assert list(witnesses) == list(VIOLATION_KINDS), "capture the missing: python3 -m chaos.reference.witnesses KIND"
    for kind, witness in witnesses.items():
        assert witness.command.startswith(("chaos run --target", "python3 -c")), witness
        assert witness.message and witness.lines, witness
        assert all(WITNESS_LINE.match(line) for line in witness.lines), (kind, witness.lines)


def test_the_reports_link_each_violation_to_its_docs_anchor() -> None:
    verdict = judge(History(Contract(recovery_bound_s=2.0)).enqueue("a", "b").execute("a", "w1")
                    .snapshot(a="done", b="done").events)
    assert [v.kind for v in verdict.violations] == ["lost"]
    assert doc_anchor("lost") == "docs/reference/violations.md#lost"
    line = next(line for line in summary(verdict).splitlines() if line.startswith("violation lost"))
    assert line.endswith("[docs/reference/violations.md#lost]"), line
    assert "href='docs/reference/violations.md#lost'" in timeline.render(verdict, [])


def test_the_cli_page_shows_every_option_of_every_subcommand() -> None:
    page = cli()
    shown = 0

    def walk(parser: argparse.ArgumentParser, command: str) -> None:
        nonlocal shown
        assert f"## `{command}`" in page or command == "chaos", command
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, f"{command} {name}")
            elif action.help != argparse.SUPPRESS and not isinstance(action, argparse._HelpAction):
                for flag in action.option_strings:
                    assert f"`{flag}`" in page, f"{command} {flag}"
                    shown += 1

    walk(_parser(), "chaos")
    assert shown > 40  # the parser's options, not an empty walk


def test_the_committed_reference_pages_are_what_their_sources_give() -> None:
    assert stale() == [], "run `python3 -m chaos.reference` and commit the pages it writes"


def test_a_page_that_drifted_from_its_source_is_found(tmp_path: Path) -> None:
    shutil.copytree(DOCS / "reference", tmp_path / "reference")
    assert stale(tmp_path) == []
    page = tmp_path / "reference" / "kinds.md"
    page.write_text(page.read_text().replace("redis", "rediss", 1))
    assert stale(tmp_path) == ["reference/kinds.md"]
