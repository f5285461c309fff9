"""The checker: a pure function of the ledger and the contract (`judge`, `check`). It never imports
runtime code: fault kinds contribute only their pure half (`chaos.faults`)."""
