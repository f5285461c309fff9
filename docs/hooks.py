"""MkDocs hook: adds the generated reference pages (chaos.reference.pages) to the site as it is built, so
they are made from their sources each time and never stored. mkdocs.yml names this file under `hooks:`.
The pages come from the checkout being built, whatever queue-chaos is installed: its root goes first on
sys.path."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
PAGES: dict[str, Callable[[], str]] = importlib.import_module("chaos.reference.pages").PAGES


def on_files(files: Files, *, config: MkDocsConfig) -> Files:
    for name, page in PAGES.items():
        files.append(File.generated(config, name, content=page()))
    return files
