"""The sample outputs in README.md and docs/ are what their commands print now: each example's command is
run again (chaos/reference/examples.py) and every page's block of it must match the fresh output, after taking
out what varies from run to run. A real run each, so the full tier runs them."""

from __future__ import annotations

import pytest

from chaos.reference.examples import EXAMPLES, PAGES, blocks, matches, render_all


@pytest.fixture(scope="module")
def fresh() -> dict[str, str]:
    return render_all()


@pytest.mark.parametrize("name", [example.name for example in EXAMPLES])
def test_every_page_shows_what_the_command_prints_now(name: str, fresh: dict[str, str]) -> None:
    shown = [(page.name, body) for page in PAGES for found, body in blocks(page.read_text()) if found == name]
    assert shown, f"no page shows the example {name}"
    for page, body in shown:
        assert matches(body, fresh[name]), (
            f"{page}'s example {name} no longer matches what its command prints: "
            "run python3 -m chaos.reference.examples"
            f"\n--- the page:\n{body}\n--- now:\n{fresh[name]}")
