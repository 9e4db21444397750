"""Errors of the session-log layer: each names the path and says what to do about it."""

from __future__ import annotations

from pathlib import Path
from typing import Literal


class SessionLogError(Exception):
    """One session log cannot be used; other logs of the same root are unaffected."""

    def __init__(self, path: Path, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.reason = message


class SessionRootError(Exception):
    """A whole root is unusable (e.g. it mixes raw and zstd logs, which DSH refuses)."""

    def __init__(self, root: Path, message: str) -> None:
        super().__init__(f"{root}: {message}")
        self.root = root
        self.reason = message


ErrorCode = Literal[
    "NOT_FOUND",
    "AMBIGUOUS",
    "INVALID_ANCHOR",
    "OPEN_TURN",
    "STALE_SOURCE",
    "OP_CONFLICT",
    "STALE_GENERATION",
    "INVALID",
    "UNWRITABLE",
    "UNREADABLE",
]


class OperationError(Exception):
    """A refused session operation (fork, rename, archive): a stable code and what to do."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
