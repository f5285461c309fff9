"""The suite's report.html: one self-contained page (inline CSS, nothing fetched) rendering a suite.json
document: its status and counts, the matrix of target variants x scenarios where each run's mark links
to that run's own report.html, and every run that did not give its known answer, with its reasons.

Run dirs in suite.json are relative to the suite's output dir, where this page is written, so each link
is `<run_dir>/report.html` and the page keeps working when the whole output dir is moved or archived.
"""

from __future__ import annotations

import html
from typing import Any
from urllib.parse import quote

from chaos.reports import box
from chaos.suite.expect import STATUSES, worst

# Symbols every common font has (no emoji font needed), on a badge coloured by status.
MARKS = {"pass": "✓", "xfail": "☑", "skipped": "↷", "inconclusive": "⚠", "fail": "✗", "error": "‼"}
MEANING = {
    "pass": "gave its known answer", "xfail": "a known server bug, forgiven",
    "skipped": "skipped as known: the scenario needs what the contract does not promise",
    "inconclusive": "proved nothing", "fail": "did not give its known answer", "error": "the harness or target broke",
}
STYLE = """body{font:14px/1.4 system-ui,sans-serif;margin:20px 24px;color:#222;max-width:1400px}
h1{margin:0 0 6px}h2{margin:24px 0 8px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:6px 0 12px}th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;
vertical-align:top}thead th{background:#f3f3f3}tbody th{font-weight:normal;background:#fafafa}td.n{text-align:right}
.matrix td{white-space:nowrap}.matrix a,.matrix span.run{text-decoration:none;margin-right:6px;display:inline-block}
.matrix a:hover{text-decoration:underline}.kinds{font-size:12px;color:#555}code{font-size:12px}.note{color:#666}
.pass,.xfail{color:#2a8a2a}.skipped{color:#666}.fail{color:#c62828}.inconclusive{color:#c66a00}.error{color:#8e24aa}
.badge{display:inline-block;min-width:1.3em;text-align:center;border-radius:4px;padding:0 4px;color:#fff;
font-weight:bold}.badge.pass{background:#2a8a2a}.badge.xfail{background:#5f9f5f}.badge.skipped{background:#888}.badge.inconclusive{background:#d98a00}
.badge.fail{background:#c62828}.badge.error{background:#8e24aa}
ul.reasons{margin:0;padding-left:18px}""" + box.STYLE


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _href(cell: dict[str, Any]) -> str | None:
    run_dir = cell.get("run_dir")
    return f"{quote(str(run_dir))}/report.html" if run_dir else None


def _badge(status: str) -> str:
    return f"<span class='badge {_esc(status)}'>{MARKS.get(status, '?')}</span>"


def _run_mark(cell: dict[str, Any], several: bool) -> str:
    status = str(cell["status"])
    kinds = sorted({str(v.get("kind")) for v in cell.get("violations") or []})
    label = f" seed {cell['seed']}" if several else ""
    if cell.get("repeat", 1) > 1:
        label += f" #{cell['repeat']}"
    expected = cell.get("expected") or {}
    want = str(expected.get("verdict") or "pass").upper() + (f" with {expected['violation']}"
                                                            if expected.get("violation") else "")
    title = (f"{status}: {MEANING.get(status, status)}; expected {want}, got "
             f"{str(cell.get('verdict') or 'no verdict').upper()}" + (f" with {', '.join(kinds)}" if kinds else "")
             + "".join(f"; {reason}" for reason in cell.get("reasons") or []))
    extra = f" <span class='kinds'>{_esc(', '.join(kinds))}</span>" if kinds else ""
    href = _href(cell)
    if href is None:
        return (f"<span class='run {_esc(status)}' title='{_esc(title + ' (no run dir)')}'>{_badge(status)}"
                f"{_esc(label)}{extra}</span>")
    return (f"<a class='run {_esc(status)}' href='{_esc(href)}' title='{_esc(title)}' "
            f"data-key='{_esc(cell.get('key'))}'>{_badge(status)}{_esc(label)}{extra}</a>")


def _matrix(cells: list[dict[str, Any]]) -> str:
    variants = list(dict.fromkeys(str(cell["variant"]) for cell in cells))
    scenarios = sorted({str(cell["scenario_variant"]) for cell in cells})
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for cell in cells:
        grouped.setdefault((str(cell["variant"]), str(cell["scenario_variant"])), []).append(cell)
    rows = []
    for scenario in scenarios:
        tds = []
        for variant in variants:
            runs = grouped.get((variant, scenario), [])
            if not runs:
                tds.append("<td>")
                continue
            status = worst([str(run["status"]) for run in runs])
            several = len(runs) > 1
            tds.append(f"<td class='cell {_esc(status)}' data-variant='{_esc(variant)}' "
                       f"data-scenario='{_esc(scenario)}'>" + "".join(_run_mark(run, several) for run in runs))
        rows.append(f"<tr><th scope='row'><code>{_esc(scenario)}</code>" + "".join(tds))
    head = "".join(f"<th scope='col'><code>{_esc(variant)}</code>" for variant in variants)
    return (f"<table class='matrix'><thead><tr><th>scenario \\ target variant{head}</thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def _not_as_expected(cells: list[dict[str, Any]]) -> str:
    bad = [cell for cell in cells if cell["status"] not in ("pass", "xfail", "skipped")]
    if not bad:
        return "<p class='none'>Every run gave its known answer.</p>"
    rows = []
    for cell in bad:
        href = _href(cell)
        link = f"<a href='{_esc(href)}'>report</a>" if href else "no run dir"
        reasons = "".join(f"<li>{_esc(reason)}" for reason in cell.get("reasons") or [])
        violations = "".join(f"<li><b>{_esc(v.get('kind'))}</b> {_esc(v.get('job') or '')}: {_esc(v.get('message'))}"
                             for v in cell.get("violations") or [])
        reproduce = f"<code>{_esc(cell['reproduce'])}</code>" if cell.get("reproduce") else ""
        status = str(cell["status"])
        rows.append(f"<tr class='{_esc(status)}'><td class='{_esc(status)}'>{_badge(status)} {_esc(status)}"
                    f"<td><code>{_esc(cell['variant'])}</code>"
                    f"<td><code>{_esc(cell['scenario_variant'])}</code><td class='n'>{_esc(cell['seed'])}"
                    f"<td><ul class='reasons'>{reasons}</ul><td><ul class='reasons'>{violations}</ul>"
                    f"<td>{reproduce}<td>{link}")
    return ("<table class='not-as-expected'><thead><tr><th>status<th>target variant<th>scenario<th>seed<th>reasons"
            f"<th>violations<th>reproduce<th>run</thead><tbody>{''.join(rows)}</tbody></table>")


def _stability(document: dict[str, Any]) -> str:
    stability = document.get("stability") or []
    if not stability:
        return ""
    rows = "".join(f"<tr><td><code>{_esc(s['key'])}</code><td class='n'>{_esc(s['runs'])}<td>"
                   f"{_esc(', '.join(f'{k} {n}' for k, n in s['verdicts'].items()))}"
                   f"<td class='{'pass' if s['stable'] else 'fail'}'>{'yes' if s['stable'] else 'NO'}"
                   for s in stability)
    return ("<h2>Repeated cells</h2><table class='stability'><thead><tr><th>cell<th>runs<th>verdicts<th>stable"
            f"</thead><tbody>{rows}</tbody></table>")


def _boxes(cells: list[dict[str, Any]]) -> str:
    """Each red cell's box (chaos.reports.box), first on the page, linking the run's report."""
    shown = [box.html(box.from_dict(cell["box"]), run_dir=str(cell.get("run_dir") or ""), anchor=f"box-{i}")
             for i, cell in enumerate(cells) if cell.get("box")]
    return "<div class='boxes'>" + "".join(shown) + "</div>" if shown else ""


def render_suite(document: dict[str, Any]) -> str:
    """suite.json's document as a page; links are relative to the directory suite.json is in."""
    cells: list[dict[str, Any]] = list(document.get("cells") or [])
    status = str(document.get("status") or worst([str(c["status"]) for c in cells]))
    counts = document.get("counts") or {}
    shards = f" (shards {', '.join(document['shards'])})" if document.get("shards") else ""
    title = f"queue-chaos suite: {status.upper()} (exit {document.get('exit_code')})"
    count_rows = "".join(f"<tr><td class='{name}'>{_badge(name)} {name}<td class='n'>{counts.get(name, 0)}"
                         f"<td>{MEANING[name]}" for name in STATUSES)
    legend = ", ".join(f"{_badge(name)} {name}" for name in STATUSES)
    return "".join([
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{_esc(title)}</title>"
        f"<style>{STYLE}</style></head><body>",
        f"<h1 class='{_esc(status)}'>{_esc(title)}</h1>", _boxes(cells),
        f"<p>{len(cells)} runs of <code>{_esc(document.get('suite', ''))}</code>{_esc(shards)} in "
        f"{float(document.get('duration_s') or 0):.0f}s.</p>",
        "<table class='counts'><thead><tr><th>status<th>runs<th>meaning</thead>"
        f"<tbody>{count_rows}</tbody></table>",
        "<h2>Matrix</h2>",
        f"<p class='note'>Each mark is whether a run gave its known answer ({legend}); a broken variant that "
        "fails with the violation it must name is a pass, and shows that violation. Click a mark for the run's "
        "report; hover it for its verdict and reasons.</p>",
        _matrix(cells) if cells else "<p>No runs.</p>",
        "<h2>Not as expected</h2>", _not_as_expected(cells), _stability(document),
        "</body></html>",
    ])
