"""What a watch hears, as the watcher takes it: the targets a changed path belongs to (a memory
scope, a session root, the settings) and the handler that runs on watchdog's thread and only
hands each event's paths over, under the path configured (a root that is a link is watched at
its folder).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from watchdog.events import DirDeletedEvent, EventsLostEvent, FileSystemEvent, FileSystemEventHandler

from ..faults import faultpoint


@dataclass(frozen=True)
class MemoryScope:
    key: str | None  # None is Global


@dataclass(frozen=True)
class SessionRoot:
    path: Path


@dataclass(frozen=True)
class SettingsFile:
    pass


Target = MemoryScope | SessionRoot | SettingsFile
OnChange = Callable[[Target], Awaitable[None]]


class Sink(Protocol):
    """Where a handler hands what it heard: to the event loop, from any thread."""

    def post(self, paths: tuple[str, ...], gone: Forward | None = None) -> None: ...

    def post_lost(self) -> None: ...

    def post_failure(self, exc: Exception) -> None: ...


class Forward(FileSystemEventHandler):
    """Runs on watchdog's thread: hands each event's paths to the event loop, nothing more.
    Its watch is on `watched`, the folder `path` names (a link there followed), and its
    events' paths are reported under `path`. The handler of a root's watch (`root`) also tells
    when that watch saw the root itself deleted."""

    def __init__(self, sink: Sink, root: Path | None, path: Path) -> None:
        self._sink = sink
        self.root = root
        self.path = str(path)
        self.watched = os.path.realpath(path)
        self._below = self.watched.rstrip(os.sep) + os.sep

    def shown(self, path: str) -> str:
        """`path`, from the watched folder, as it lies under the configured one."""
        if path == self.watched:
            return self.path
        if self.watched != self.path and path.startswith(self._below):
            return os.path.join(self.path, path[len(self._below) :])
        return path

    def on_any_event(self, event: FileSystemEvent) -> None:
        try:
            self._hand_over(event)
        except Exception as exc:  # raised in watchdog's thread, it would end it
            self._sink.post_failure(exc)

    def _hand_over(self, event: FileSystemEvent) -> None:
        faultpoint("daemon.watcher.event")
        if isinstance(event, EventsLostEvent):  # its path is the watch's, not a changed one
            self._sink.post_lost()
            return
        paths = tuple(self.shown(os.fsdecode(p)) for p in (event.src_path, event.dest_path) if p)
        gone = self.root is not None and isinstance(event, DirDeletedEvent) and paths == (str(self.root),)
        self._sink.post(paths, self if gone else None)
