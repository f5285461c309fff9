"""The documentation site as a reader gets it: `mkdocs build --strict` of mkdocs.yml (the reference pages
generated from their sources on the way), a broken link in a copy of the docs failing that build, and the
built site served on 127.0.0.1 and opened in Debian's headless Chromium: the nav, a CLI option from the
parser, and a link from a generated page to a violation's anchor that the browser follows and lands on."""

from __future__ import annotations

import functools
import http.server
import importlib.util
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from chaos.check.violation_kinds import VIOLATION_KINDS

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    assert importlib.util.find_spec("mkdocs") and importlib.util.find_spec("material"), (
        "MkDocs and its Material theme are not installed: pip install -e '.[docs]' (ci/setup.sh does)")
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "--site-dir",
                           str(site)], capture_output=True, text=True, check=False, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1", "HOME": str(site.parent)})


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("docs") / "site"
    started = time.monotonic()
    result = build(REPO / "mkdocs.yml", out)
    assert result.returncode == 0, result.stdout + result.stderr
    print(f"site built in {time.monotonic() - started:.1f}s")
    return out


def test_every_violation_kind_has_its_anchor_in_the_built_page(site: Path) -> None:
    page = (site / "reference" / "violations" / "index.html").read_text()
    ids = set(re.findall(r'<h2 id="([^"]+)"', page))
    assert set(VIOLATION_KINDS) <= ids, f"no heading for {sorted(set(VIOLATION_KINDS) - ids)}"


def test_a_broken_link_fails_the_strict_build(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    shutil.copytree(REPO / "docs", copy / "docs", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "mkdocs.yml", copy / "mkdocs.yml")
    for name in ("chaos", "targets", "scenarios"):  # what the hook generates the reference pages from
        (copy / name).symlink_to(REPO / name)
    intact = build(copy / "mkdocs.yml", tmp_path / "intact")
    assert intact.returncode == 0, intact.stdout + intact.stderr
    with (copy / "docs" / "index.md").open("a") as index:
        index.write("\nSee [the lost kind](reference/violations.md#no-such-kind).\n")
    broken = build(copy / "mkdocs.yml", tmp_path / "broken")
    assert broken.returncode != 0, "a link to a missing anchor passed the strict build"
    assert "no-such-kind" in broken.stdout + broken.stderr, broken.stdout + broken.stderr


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    # A probe page beside the site: it follows a real link of the known-answers page in a frame, then
    # writes where the browser landed (its URL's anchor and the element the anchor selects).
    (site / "probe.html").write_text(
        "<pre id=result>waiting</pre><iframe id=frame src='reference/known-answers/'></iframe><script>\n"
        "let clicked = false;\n"
        "frame.onload = () => {\n"
        "  const doc = frame.contentDocument;\n"
        "  if (!clicked) { clicked = true; doc.querySelector(\"a[href*='violations/#']\").click(); return; }\n"
        "  const target = doc.querySelector(':target');\n"
        "  result.textContent = 'landed ' + frame.contentWindow.location.hash + ' on '\n"
        "    + (target ? target.tagName + '#' + target.id : 'nothing');\n"
        "};\n</script>\n")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def dom(url: str, profile: Path) -> str:
    """The page's DOM after Chromium has rendered it and run its scripts."""
    assert Path(CHROMIUM).exists(), ("Chromium is not installed: apt-get install -y chromium (ci/setup.sh "
                                     "installs it)")
    result = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                             f"--user-data-dir={profile}", "--virtual-time-budget=10000", "--dump-dom", url],
                            capture_output=True, text=True, check=False, timeout=120)
    assert result.returncode == 0 and "<html" in result.stdout, result.stderr[-2000:]
    return result.stdout


def test_the_site_opens_in_a_browser_with_its_nav_the_cli_and_violation_anchors(served: str, tmp_path: Path) -> None:
    home = dom(served, tmp_path / "profile")
    for entry in ("Concepts", "Suites and CI", "Reading reports", "Reference", "Violations"):
        assert f">{entry}<" in re.sub(r"\s*<", "<", re.sub(r">\s*", ">", home)), f"the nav has no {entry}"
    assert "reference/violations/" in home
    cli = dom(served + "reference/cli/", tmp_path / "profile")
    assert 'id="chaos-suite"' in cli and "<code>--runs-dir</code>" in cli and "<code>--shard</code>" in cli
    probe = dom(served + "probe.html", tmp_path / "profile")
    landed = re.search(r'<pre id="result">landed #(\w+) on H2#(\w+)</pre>', probe)
    assert landed, re.findall(r'<pre id="result">.*?</pre>', probe)
    assert landed[1] == landed[2] and landed[1] in VIOLATION_KINDS, landed[0]


def test_the_hook_is_strictly_typed() -> None:
    # docs/hooks.py lives outside chaos/ (mypy's files), beside the pages MkDocs reads: checked here, where
    # MkDocs is installed, as strictly as the library.
    result = subprocess.run([sys.executable, "-m", "mypy", "--strict", str(REPO / "docs" / "hooks.py")], cwd=REPO,
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
