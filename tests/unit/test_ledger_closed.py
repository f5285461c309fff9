"""An append after the run closed its ledger is a HarnessError of its own, never sqlite's
ProgrammingError (a clean-clone CI run printed one from an interrupted scenario's fault heal)."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos import events
from chaos.errors import HarnessError
from chaos.ledger import Ledger, LedgerClosed


def test_an_append_after_close_raises_ledger_closed(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.append(events.drained(1))
    ledger.close()
    with pytest.raises(LedgerClosed) as raised:
        ledger.append(events.drained(1))
    assert isinstance(raised.value, HarnessError) and "was closed" in str(raised.value)
