"""MkDocs hook: the build fails if a reference page in docs/reference/ is not what its source gives now
(chaos.reference.pages), so the site never shows a page that has drifted. mkdocs.yml names this file under
`hooks:`. The pages are checked against the checkout being built, whatever queue-chaos is installed: its root
goes first on sys.path."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def on_pre_build(config: MkDocsConfig) -> None:
    stale = importlib.import_module("chaos.reference.pages").stale(Path(config.docs_dir))
    if stale:
        raise PluginError(f"the reference pages {', '.join(stale)} differ from what their sources give now: "
                          "run `python3 -m chaos.reference` and commit the pages it writes")
