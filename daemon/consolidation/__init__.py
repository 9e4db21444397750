"""Learning memory from finished sessions: evidence, proposals, receipts, the worker and the runner."""
