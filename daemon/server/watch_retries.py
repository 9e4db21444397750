"""The folders a watcher could not watch (a root, or the memory folder), why, and when each is
tried again: at the next look after an OSError, after a wait that doubles (up to a minute)
when watchdog cannot watch it for the tree's or the system's sake (`Unwatchable`, decision
0484). Each is said once in the log, not at every try.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .watchdog_observers import Unwatchable

log = logging.getLogger("remem.daemon")

# Such a tree seldom mends in seconds, and each try walks it whole.
MAX_RETRY_SECONDS = 60.0

Key = Path | None  # a root, or None: the memory folder


@dataclass(frozen=True)
class _Failing:
    """Why a folder could not be watched, how long was waited before trying again, and when."""

    why: str
    wait: float
    due: float  # on `time.monotonic`


class Retries:
    """On the watcher's thread only."""

    def __init__(self) -> None:
        self._failing: dict[Key, _Failing] = {}

    def fail(self, key: Key, exc: Exception, why: str, wait: float) -> None:
        """`key` could not be watched (`why`, unless `exc` is `Unwatchable`, which says it): said
        once, tried again after `wait`, or (`Unwatchable`) after twice the last wait."""
        earlier = self._failing.get(key)
        if isinstance(exc, Unwatchable):
            why = str(exc)
            if earlier is not None:
                wait = min(2 * earlier.wait, MAX_RETRY_SECONDS)
        if earlier is None:
            log.warning("%s; trying again in %g s", why, wait)
        self._failing[key] = _Failing(why, wait, time.monotonic() + wait)

    def due(self, key: Key) -> bool:
        """Whether `key`, failing, is to be tried again now."""
        failing = self._failing.get(key)
        return failing is None or time.monotonic() >= failing.due

    def mended(self, key: Key) -> None:
        self._failing.pop(key, None)

    def keep_roots(self, roots: Iterable[Path]) -> None:
        """Forget the roots no longer configured: configured again, one is tried at once and said
        anew."""
        kept = set(roots)
        for key in [key for key in self._failing if key is not None and key not in kept]:
            del self._failing[key]

    def reasons(self, keys: Iterable[Key]) -> list[str]:
        """Why each of `keys` that is failing is, in their order."""
        return [self._failing[key].why for key in keys if key in self._failing]
