"""Named crash points for fault-injection tests.

`REMEM_FAULTPOINT=<name>` makes the process die abruptly (`os._exit(86)`, no cleanup, no
flush) the moment it reaches that point, so tests can prove every durable write protocol
recovers from a crash at each step. With the variable unset a fault point is one comparison.
"""

from __future__ import annotations

import os

EXIT_CODE = 86

POINTS: frozenset[str] = frozenset(
    {
        "agents.update.after-intent",
        "agents.update.after-commit",
        "agents.update.after-entry",
        "consolidation.after-committing-receipt",
        "consolidation.after-global-commit",
        "consolidation.after-workspace-commit",
        "consolidation.before-committed-receipt",
        "fork.after-mark",
        "fork.after-prepare",
        "fork.after-temp-write",
        "fork.after-publish",
        "fork.after-journal",
        "memory.global.after-temp-write",
        "memory.workspace.after-temp-files",
        "memory.workspace.after-journal",
        "memory.workspace.mid-rename",
        "memory.workspace.before-journal-removal",
        "sessions.writer.after-temp-write",
        "sessions.writer.after-publish",
        "sessions.writer.mid-append",
        "sessions.writer.after-append",
        "settings.after-temp-write",
    }
)

_ARMED = os.environ.get("REMEM_FAULTPOINT") or None


def faultpoint(name: str) -> None:
    """Die here when this point is the armed one; a typo in `name` is a programming error."""
    if _ARMED is not None and name == _ARMED:
        assert name in POINTS, f"unregistered fault point {name!r}"
        os._exit(EXIT_CODE)
