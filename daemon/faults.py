"""Named crash points for fault-injection tests.

`REMEM_FAULTPOINT=<name>` makes the process die abruptly (`os._exit(86)`, no cleanup, no
flush) the moment it reaches that point, so tests can prove every durable write protocol
recovers from a crash at each step; `<name>@<n>` dies the n-th time the process reaches it
(a point inside a loop, like an append). With the variable unset a fault point is one
comparison. `raise:<name>` (or `raise:<name>@<n>`) raises `Fault` there instead: an unexpected
error, as a bug would raise, for the tests of what the process does with one.
"""

from __future__ import annotations

import os

EXIT_CODE = 86

POINTS: frozenset[str] = frozenset(
    {
        "agents.update.after-intent",
        "agents.update.after-commit",
        "agents.update.after-entry",
        "agents.audit.intent-after-temp-write",
        "agents.audit.entry-after-temp-write",
        "consolidation.after-attempt-receipt",
        "consolidation.after-committing-mark",
        "consolidation.after-committing-receipt",
        "consolidation.after-global-commit",
        "consolidation.after-workspace-commit",
        "consolidation.before-committed-receipt",
        "consolidation.after-final-receipt",
        "consolidation.receipt.after-temp-write",
        "credentials.after-temp-write",
        "daemon.idle-timer.before-exit",
        "daemon.status-keeper.before-rewrite",
        "daemon.watcher.event",
        "daemon.watcher.turn",
        "fork.after-mark",
        "fork.after-prepare",
        "fork.after-temp-write",
        "fork.after-link",
        "fork.after-publish",
        "fork.after-journal",
        "history.before-entry",
        "history.after-objects",
        "history.after-ref",
        "history.log-cache.after-temp-write",
        "history.log-cache.mid-append",
        "history.merge.after-write",
        "history.merge.mid-removal",
        "history.merge.after-pack-removal",
        "memory.global.after-temp-write",
        "memory.global.after-exchange",
        "memory.workspace.after-temp-files",
        "memory.workspace.after-journal",
        "memory.workspace.mid-rename",
        "memory.workspace.mid-rollback",
        "memory.workspace.before-journal-removal",
        "sessions.cold-reads.before-share",
        "sessions.cold-reads.after-share",
        "sessions.cold-reads.after-answer",
        "sessions.metadata.after-temp-write",
        "sessions.writer.after-temp-write",
        "sessions.writer.after-link",
        "sessions.writer.after-publish",
        "sessions.writer.mid-append",
        "sessions.writer.after-append",
        "settings.after-temp-write",
        "settings.after-exchange",
        "settings.valid-copy.after-temp-write",
    }
)


class Fault(Exception):
    """Raised at the fault point armed as `raise:<name>`."""


_RAISE = "raise:"


def _armed(value: str | None) -> tuple[str, int, bool] | None:
    if not value:
        return None
    raising = value.startswith(_RAISE)
    name, _, nth = value.removeprefix(_RAISE).partition("@")
    return name, int(nth or 1), raising


_ARMED = _armed(os.environ.get("REMEM_FAULTPOINT"))
_reached = 0


def faultpoint(name: str) -> None:
    """Die (or raise `Fault`) here when this point is the armed one; a typo in `name` is a
    programming error."""
    global _reached
    if _ARMED is not None and name == _ARMED[0]:
        assert name in POINTS, f"unregistered fault point {name!r}"
        _reached += 1
        if _reached == _ARMED[1]:
            if _ARMED[2]:
                raise Fault(f"fault point {name} reached")
            os._exit(EXIT_CODE)
