"""Opt-in debug log of one attempt: `memory/debug/<review-id>/attempt-<n>.jsonl`.

Phases, the route, counts and what identifies a failure only — never evidence, memory or
proposal text (that lives in the worker session, where it belongs), nor a provider's error
message, which may quote the request (decision 0373): a failure's `error` is the attempt's
cause (the exception's class, the HTTP status, the provider's error `type` and `code`, the URL
asked), redacted. Only the fields listed in `_ALLOWED` are written, so a careless caller cannot
leak content into it under another name.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..credentials import redact
from ..home import Home
from .receipts import now

_ALLOWED = frozenset(
    {"review", "attempt", "step", "status", "accepted", "problems", "toolCalls", "finish", "inputBytes",
     "evidenceTurns", "sourceEvents", "provider", "model", "error"}
)  # fmt: skip


class DebugLog:
    def __init__(self, home: Home, review: str, attempt: int) -> None:
        # Each folder user-only (`mkdir(parents=True)` would leave them world-readable), and
        # none a link: the log is written in the home or not at all.
        self._home = home
        self.path: Path = home.private_dir(home.debug / review) / f"attempt-{attempt}.jsonl"

    def record(self, phase: str, fields: dict[str, Any]) -> None:
        kept = {k: v for k, v in fields.items() if k in _ALLOWED}
        if isinstance(kept.get("error"), str):
            kept["error"] = redact(kept["error"])
        line = json.dumps({"time": now(), "phase": phase, **kept}, ensure_ascii=False) + "\n"
        fd = self._home.open_file(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            # Not fsynced: a line written survives the daemon's crash, and only the machine's can
            # lose it, from a log nothing reads back; what a crash must not lose is in the receipt
            # and the worker session. A flush per phase would stall the event loop this runs on.
            os.write(fd, line.encode("utf-8"))
        finally:
            os.close(fd)
