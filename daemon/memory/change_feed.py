"""Which watched folders changed since the last look: an inotify queue drained on demand (Linux).

The kernel queues an inotify event inside the very system call that changes a file, so once a
writer's call has returned, its event is already waiting here: draining the queue tells exactly
which watched folders changed, without a `stat` per file. The watchdog package's own bindings
are used. Where inotify is missing (not Linux), refuses a watch (the per-user limit) or
overflows, the answer is "cannot tell" and the caller looks at the files instead. Writes through
a shared `mmap` are the one change inotify does not report.
"""

from __future__ import annotations

import os
import struct
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from watchdog.utils import UnsupportedLibcError

if TYPE_CHECKING:
    from watchdog.observers.inotify_c import WatchDescriptor

try:
    from watchdog.observers.inotify_c import InotifyConstants as _In
    from watchdog.observers.inotify_c import inotify_add_watch, inotify_init, inotify_rm_watch
# No inotify on this system: watchdog says a C library without it (macOS, BSD) so.
except (ImportError, OSError, AttributeError, UnsupportedLibcError):
    _In = None  # type: ignore[assignment,misc]

_HEADER = struct.Struct("iIII")  # wd, mask, cookie, length of the name that follows
_READ_BYTES = 64 * 1024


class ChangeFeed:
    """Not thread-safe: the owner serialises calls."""

    def __init__(self, *, enabled: bool = True) -> None:
        # Instances are few per user (128 by default) and shared with every watcher: one is
        # opened only at the first watch, and given back by `close()` or when the owner is gone.
        self._enabled = enabled and _In is not None
        self._fd: int | None = None
        self._closer: weakref.finalize | None = None
        self._keys: dict[str, WatchDescriptor] = {}  # key -> watch descriptor
        self._watches: dict[int, str] = {}  # watch descriptor -> key

    @property
    def available(self) -> bool:
        return self._enabled

    def watch(self, key: str, folder: Path) -> bool:
        """Report changes of `folder` (its entries and itself) under `key`; False when it cannot."""
        if self._fd is None and self._enabled:
            self._fd = _open()
            self._enabled = self._fd is not None
            if self._fd is not None:
                self._closer = weakref.finalize(self, os.close, self._fd)
        if self._fd is None:
            return False
        wd = inotify_add_watch(self._fd, os.fsencode(folder), _MASK)
        if wd < 0:  # missing, not a folder, a symlink, or the watch limit
            self.unwatch(key)
            return False
        old = self._keys.get(key)
        if old is not None and old != wd:  # the folder was replaced: the old watch follows the old one
            self.unwatch(key)
        self._keys[key], self._watches[wd] = wd, key
        return True

    def unwatch(self, key: str) -> None:
        wd = self._keys.pop(key, None)
        if wd is not None and self._fd is not None:
            self._watches.pop(wd, None)
            inotify_rm_watch(self._fd, wd)

    def changed(self) -> set[str] | None:
        """The keys whose folders changed since the last call; None when that cannot be told."""
        if self._fd is None:
            return set() if self._enabled else None  # enabled: nothing is watched yet
        keys: set[str] = set()
        lost = False
        while (data := _read(self._fd)) is not None:
            for wd, mask in _events(data):
                lost = lost or bool(mask & _In.IN_Q_OVERFLOW)
                key = self._watches.get(wd)
                if key is None:
                    continue
                keys.add(key)
                if mask & _In.IN_IGNORED:  # the folder is gone, and its watch with it
                    self._watches.pop(wd, None)
                    if self._keys.get(key) == wd:
                        del self._keys[key]
        return None if lost else keys

    def close(self) -> None:
        """Stop watching and give the inotify instance back; the feed can no longer tell."""
        if self._closer is not None:
            self._closer()
        self._fd, self._closer, self._enabled = None, None, False
        self._keys.clear()
        self._watches.clear()


_MASK = (
    0
    if _In is None
    else (
        _In.IN_MODIFY | _In.IN_ATTRIB | _In.IN_CLOSE_WRITE | _In.IN_MOVED_FROM | _In.IN_MOVED_TO
        | _In.IN_CREATE | _In.IN_DELETE | _In.IN_DELETE_SELF | _In.IN_MOVE_SELF | _In.IN_ONLYDIR
        | _In.IN_DONT_FOLLOW
    )
)  # fmt: skip


def _open() -> int | None:
    if _In is None:
        return None
    fd = inotify_init()
    if fd < 0:  # the per-user instance limit
        return None
    os.set_blocking(fd, False)
    os.set_inheritable(fd, False)
    return fd


def _read(fd: int) -> bytes | None:
    try:
        return os.read(fd, _READ_BYTES)
    except BlockingIOError:
        return None


def _events(data: bytes) -> Iterator[tuple[int, int]]:
    offset = 0
    while offset + _HEADER.size <= len(data):
        wd, mask, _, length = _HEADER.unpack_from(data, offset)
        yield wd, mask
        offset += _HEADER.size + length
