"""The checker: a pure function of the ledger and the contract (`chaos.check.checker.judge`). It never
imports runtime or process code; of each fault kind (`chaos.faults`) it uses only the pure half, its
effect on ownership and its proof (the module's inject code is loaded with it but never runs)."""
