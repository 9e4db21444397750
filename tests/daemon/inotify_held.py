"""What an inotify observer of watchdog's holds in its one inotify instance, read by the tests
themselves from watchdog's internals (watchdog 7.1), not through the code they test."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from watchdog.observers.api import BaseObserver


def inotify_callbacks(observer: BaseObserver, under: Path | None = None) -> int:
    """How many callbacks the observer's inotify reader holds, over all its watches, or over
    those of `under` and the folders below it (0 when it has no reader yet, or polls)."""
    reader: Any = getattr(observer, "_inotify_fd", None)
    if reader is None:
        return 0
    watches = list(reader._watch_for_wd.values())
    if under is not None:
        top = os.fsencode(under)
        watches = [w for w in watches if _below(w._initial_creation_path, top)]
    return sum(len(watch.callbacks) for watch in watches)


def _below(path: bytes, top: bytes) -> bool:
    return path == top or path.startswith(top.rstrip(b"/") + b"/")
