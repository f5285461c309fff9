"""`chaos doctor`: one table of what this machine has of what the suite can use (the Docker engine, the
backend servers' packages, each backend provider with the Python packages it imports, each fault kind,
the libraries the bundled adapters judge) and how to get what it lacks.

It answers before a run does: a run refused for a missing server or library says so only once it is
asked for, and only for itself. Doctor starts no server (every check is a lookup on PATH, a glob, an
environment variable or one ping of the engine), and it never raises: a check that fails is a missing
row carrying its error's text. Tests that need a piece skip with the same text (`docker_skip_reason`).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import re
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

from chaos.backends import registry
from chaos.backends.packages import DebianPackage
from chaos.containers import engine
from chaos.errors import ConfigError
from chaos.faults import KINDS as FAULT_KINDS
from chaos.faults import clock
from chaos.faults.base import FaultKind

Status = Literal["ok", "missing"]
SETUP = "bash ci/setup.sh"
DETAIL_WIDTH = 72  # wider details overflow their column rather than push every row's fix off the screen
CHROMIUM = DebianPackage("chromium", ("chromium",))
# Toxiproxy for the network faults: as chaos.toxiproxy.provider picks it (its ENV_URL and BINARY).
TOXIPROXY_URL = "TOXIPROXY_URL"
TOXIPROXY_BINARY = "toxiproxy-server"


@dataclass(frozen=True)
class DoctorRow:
    """One thing the suite may use: `what` (engine, binary, provider, fault kind), whether it is here,
    and when not, how to get it."""

    what: str
    name: str
    status: Status
    detail: str
    fix: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def doctor_rows() -> list[DoctorRow]:
    """Every row, engines first, then binaries, providers and fault kinds; never raises."""
    rows = [_engine_row()]
    rows += _binary_rows()
    rows += _provider_rows(engine_ok=rows[0].ok)
    rows += _fault_rows()
    rows += _library_rows()
    return rows


def docker_skip_reason() -> str | None:
    """None when a Docker engine answers; else the engine row's detail, word for word, so that a test
    skipped for want of Docker says what `chaos doctor` says."""
    row = _engine_row()
    return None if row.ok else row.detail


def render(rows: Iterable[DoctorRow]) -> str:
    """A plain-text table, each column as wide as its widest cell; a detail wider than DETAIL_WIDTH goes
    past its column, and the row's fix to the next line, under its column."""
    header = ("what", "name", "status", "detail", "how to fix")
    cells = [header, *[(r.what, r.name, r.status, r.detail, r.fix) for r in rows]]
    widths = [max(len(line[i]) for line in cells) for i in range(len(header) - 1)]
    widths[3] = min(widths[3], DETAIL_WIDTH)
    starts = [sum(widths[:i]) + 2 * i for i in range(len(header))]
    lines: list[str] = []
    for line in cells:
        text = ""
        for start, cell in zip(starts, line, strict=True):
            if len(text) > start - 2 * (start > 0) and cell:
                lines.append(text.rstrip())
                text = ""
            text = text.ljust(start) + cell
        lines.append(text.rstrip())
    missing = sum(1 for line in cells[1:] if line[2] == "missing")
    lines.append(f"\n{len(cells) - 1 - missing} of {len(cells) - 1} ok; {missing} missing.")
    return "\n".join(lines)


def main() -> int:
    """Print the table. Always 0: doctor reports, it does not gate; a missing piece costs only the runs
    that need it, and those refuse to start with the same advice."""
    print(render(doctor_rows()))
    return 0


# -- rows ------------------------------------------------------------------------------------------------

def _engine_row() -> DoctorRow:
    def check() -> DoctorRow:
        found = engine.status()
        if found.available:
            return DoctorRow("engine", "docker", "ok", found.detail)
        return DoctorRow("engine", "docker", "missing", _without_fix(found.detail), engine.HOW_TO_START)
    return _guarded("engine", "docker", check)


def _without_fix(text: str) -> str:
    """Why no engine answers, without the sentence saying how to start one (the row's fix says it)."""
    text = " ".join(text.split())
    at = text.find(engine.HOW_TO_START)
    end = text.rfind(". ", 0, at) if at > 0 else -1
    return text[:end + 1] if end > 0 else _first_sentence(text)[0]


def _binary_rows() -> list[DoctorRow]:
    rows: list[DoctorRow] = []
    users: dict[str, list[str]] = {}  # package name -> the kinds whose local server it is
    packages: dict[str, DebianPackage] = {}
    for kind in registry.KINDS:
        try:
            package = _server_package(kind)
        except Exception as exc:  # noqa: BLE001 - a broken kind is a row, not a crash
            rows.append(_failed("binary", f"{kind} server", exc))
            continue
        users.setdefault(package.name, []).append(kind)
        packages[package.name] = package
    for name, package in packages.items():
        rows.append(_guarded("binary", name, partial(_package_row, package,
                                                     f"the local server of {', '.join(users[name])}")))
    rows.append(_guarded("binary", CHROMIUM.name, partial(
        _package_row, CHROMIUM, "optional: report.html's browser test skips without it",
        fix=f"apt-get install chromium chromium-driver, or {SETUP}")))
    rows.append(_guarded("binary", "libfaketime", _faketime_row))
    return rows


def _package_row(package: DebianPackage, used_by: str, fix: str = "") -> DoctorRow:
    if package.present():
        return DoctorRow("binary", package.name, "ok", f"{_where(package)} ({used_by})")
    return DoctorRow("binary", package.name, "missing", f"not installed ({used_by})",
                     fix or f"apt-get install {package.name}, or {SETUP}")


def _faketime_row() -> DoctorRow:
    """The clock fault's own check: its preflight finds the library the same way an injection does."""
    try:
        found = clock.faketime_env(0.0)["LD_PRELOAD"]
    except ConfigError as exc:
        detail, rest = _first_sentence(str(exc))
        return DoctorRow("binary", "libfaketime", "missing", f"{detail} (the clock fault)",
                         rest or f"apt-get install libfaketime, or {SETUP}")
    return DoctorRow("binary", "libfaketime", "ok", f"{found} (the clock fault)")


def _provider_rows(engine_ok: bool) -> list[DoctorRow]:
    found: list[DoctorRow] = []
    for kind in registry.KINDS:
        try:
            providers = registry.providers(kind)
        except Exception as exc:  # noqa: BLE001 - a kind whose package fails to import is a row
            found.append(_failed("provider", f"{kind}/*", exc))
            continue
        for name, provider in providers.items():
            label = f"{kind}/{name}"
            try:
                capabilities = provider.capabilities
            except Exception as exc:  # noqa: BLE001 - its backend class fails to import
                found.append(_failed("provider", label, exc))
                continue
            found.append(_guarded("provider", label, partial(_provider_row, kind, name, capabilities, engine_ok)))
    return found


def _provider_row(kind: str, name: str, capabilities: frozenset[str], engine_ok: bool) -> DoctorRow:
    """Whether the provider can run here: the Python packages its backend imports, then its server's
    package (local), its server's URL (external), the Docker engine (docker, as the engine row found it:
    one ping per doctor)."""
    label = f"{kind}/{name}"
    offers = f"capabilities: {', '.join(sorted(capabilities)) or 'none'}"
    try:
        registry.provider(kind, name).require_packages()
    except ConfigError as exc:
        detail, fix = _first_sentence(str(exc))
        return DoctorRow("provider", label, "missing", f"{detail.rstrip('.')}; {offers}", fix)
    if name == "local":
        package = _server_package(kind)
        if package.present():
            return DoctorRow("provider", label, "ok", f"{package.name} is installed; {offers}")
        return DoctorRow("provider", label, "missing", f"needs {package.name}, which is not installed; {offers}",
                         f"apt-get install {package.name}, or {SETUP}")
    if name == "docker":
        if engine_ok:
            return DoctorRow("provider", label, "ok", f"the Docker engine answers; {offers}")
        return DoctorRow("provider", label, "missing", f"needs the Docker engine (see its row); {offers}",
                         engine.HOW_TO_START)
    if name == "external":
        variable: str | None = getattr(importlib.import_module(registry.KINDS[kind]), "ENV_URL", None)
        if variable and os.environ.get(variable):
            return DoctorRow("provider", label, "ok", f"${variable}={_redacted(os.environ[variable])}; {offers}")
        where = f"--backend-url or ${variable}" if variable else "--backend-url"
        return DoctorRow("provider", label, "missing", f"needs {where}; {offers}",
                         f"set ${variable} to your server's URL, or pass --backend-url" if variable
                         else "pass --backend-url with your server's URL")
    return DoctorRow("provider", label, "ok", f"not checked (doctor knows local, external and docker); {offers}")


def _fault_rows() -> list[DoctorRow]:
    return [_guarded("fault kind", name, partial(_fault_row, kind)) for name, kind in FAULT_KINDS.items()]


def _fault_row(kind: FaultKind) -> DoctorRow:
    needs = [f"needs backend capability {', '.join(sorted(kind.needs))}"] if kind.needs else []
    if kind.network:
        needs.append(f"needs a proxy per worker (Toxiproxy: {_toxiproxy()})")
    if kind.containers:
        needs.append("needs the workers in containers (target.toml's image, or --worker-image)")
    if kind.preflight is not None:
        try:
            kind.preflight()
        except ConfigError as exc:
            detail, rest = _first_sentence(str(exc))
            return DoctorRow("fault kind", kind.name, "missing", "; ".join([detail, *needs]), rest or SETUP)
        needs.append("this machine passes its preflight")
    return DoctorRow("fault kind", kind.name, "ok", "; ".join(needs) or "needs only the worker's process")


def _library_rows() -> list[DoctorRow]:
    """One row per extra of queue-chaos that its `libraries` extra gathers (the bundled adapters' libraries,
    each pinned as its adapter's README judges it): whether each of its packages imports here, at that pin."""
    try:
        declared = importlib.metadata.metadata("queue-chaos").get_all("Requires-Dist") or []
    except importlib.metadata.PackageNotFoundError:
        return [DoctorRow("library", "libraries", "missing", "queue-chaos is not installed, so its extras are "
                          "unknown", "pip install -e '.[libraries]' in the checkout, or " + SETUP)]
    extras: dict[str, list[str]] = {}
    for line in declared:
        requirement, _, marker = line.partition(";")
        extra = re.search(r"extra\s*==\s*[\"']([^\"']+)[\"']", marker)
        if extra:
            extras.setdefault(extra[1], []).append(requirement.strip())
    gathered = next((re.search(r"\[([^\]]*)\]", requirement) for requirement in extras.get("libraries", [])), None)
    names = [name.strip() for name in gathered[1].split(",")] if gathered else []
    return [_guarded("library", name, partial(_library_row, name, extras.get(name, []))) for name in names]


def _library_row(extra: str, requirements: list[str]) -> DoctorRow:
    fix = f"pip install 'queue-chaos[{extra}]', or {SETUP}"
    found: list[str] = []
    for requirement in requirements:
        parts = re.match(r"([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*(?:==\s*([^,\s]+))?", requirement)
        if parts is None:
            continue
        name, pinned = parts[1], parts[2]
        module = re.sub(r"[-.]+", "_", name).lower()
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            return DoctorRow("library", extra, "missing", f"{name} does not import here (the {extra} extra of "
                             "queue-chaos, which its bundled adapters need)", fix)
        version = importlib.metadata.version(name)
        if pinned is not None and version != pinned:
            return DoctorRow("library", extra, "missing", f"{name} {version} is installed; its bundled adapters "
                             f"judge {pinned}", fix)
        found.append(f"{name} {version}")
    return DoctorRow("library", extra, "ok", f"{', '.join(found)} (the {extra} extra of queue-chaos)")


# -- helpers ---------------------------------------------------------------------------------------------

def _server_package(kind: str) -> DebianPackage:
    package: DebianPackage = importlib.import_module(registry.KINDS[kind]).SERVER_PACKAGE
    return package


def _where(package: DebianPackage) -> str:
    for binary in package.binaries:
        if found := shutil.which(binary):
            return found
    return package.paths[0] if package.paths else package.name


def _toxiproxy() -> str:
    if os.environ.get(TOXIPROXY_URL):
        return f"${TOXIPROXY_URL}"
    return TOXIPROXY_BINARY if shutil.which(TOXIPROXY_BINARY) else "embedded"


def _guarded(what: str, name: str, check: Callable[[], DoctorRow]) -> DoctorRow:
    try:
        return check()
    except Exception as exc:  # noqa: BLE001 - doctor reports every failure as a row, never a traceback
        return _failed(what, name, exc)


def _failed(what: str, name: str, exc: BaseException) -> DoctorRow:
    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, ConfigError):
        detail, rest = _first_sentence(text)
        return DoctorRow(what, name, "missing", detail, rest)
    return DoctorRow(what, name, "missing", f"the check failed: {type(exc).__name__}: {text[:300]}",
                     "a bug in the suite or its install: pip install -e . again, or report it")


def _first_sentence(text: str) -> tuple[str, str]:
    """The first sentence of an error's paragraph, and the rest (where it says how to fix it). A full stop
    inside parentheses (an exception's own text, quoted) ends no sentence."""
    text = " ".join(text.split())
    depth = 0
    for at, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char in ".!?" and depth <= 0 and text[at + 1:at + 2] == " " and text[at + 2:at + 3][:1].isupper():
            return text[:at + 1], text[at + 2:]
    return text, ""


def _redacted(url: str) -> str:
    """The URL without its password: the table is for pasting into an issue."""
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        host = parts.hostname or ""
        netloc = f"{parts.username}:***@{host}" + (f":{parts.port}" if parts.port else "")
        return urlunsplit(parts._replace(netloc=netloc))
    except ValueError:
        return "(set, but not a URL)"


if __name__ == "__main__":
    raise SystemExit(main())
