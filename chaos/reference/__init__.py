"""The documentation's reference pages and examples, made from their sources (the CLI's parser, the
registries, the bundled scenarios, the suite files, the violation catalogue and its captured witnesses;
the commands whose output the pages show), so that no page restates what can drift. They are written into
this checkout's docs/ (and README.md), where the site's build and the tests check them."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]  # the checkout these tools write into
DOCS = REPO / "docs"
