"""Reports of a run (verdict.json, summary.txt/.md, junit.xml, report.html), from the verdict and the
ledger alone, so `chaos report` can write them again after the run."""

from chaos.reports.text import summary, write_reports

__all__ = ["summary", "write_reports"]
