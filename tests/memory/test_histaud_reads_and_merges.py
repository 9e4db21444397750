"""A history read holds the repository object it reads through from its open to its last object.

A merge of the small packs frees the repository object it replaces (libgit2 keeps the packs it
read open until then). A read that opened the repository before a merge and read through it
after opened that freed object's packs again, and kept them until Python's cyclic collector ran:
a later merge deleted them, and the process went on holding them. The read here is made to open
the repository while another thread's commit and merge wait; the lock it holds is watched, not
replaced, so the two meet in the order a daemon's reader and writer can.
"""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Iterator
from types import TracebackType

import pygit2
import pytest

from remem.daemon.memory import history as history_module
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore

from .factory import put
from .test_crash_recovery import EMPTY


def deleted_packs_held() -> list[str]:
    """The history's pack files deleted from disk that this process still holds open."""
    held = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except FileNotFoundError:
            continue
        if "/objects/pack/" in target and target.endswith(" (deleted)"):
            held.append(target)
    return held


class Watched:
    """The history's repository lock as it is, telling when a thread of `waiters` waits for it."""

    def __init__(self, lock: threading.RLock, waiting: threading.Event) -> None:
        self._lock, self._waiting = lock, waiting
        self.waiters: set[int] = set()

    def __enter__(self) -> None:
        if not self._lock.acquire(blocking=False):
            if threading.get_ident() in self.waiters:
                self._waiting.set()
            self._lock.acquire()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._lock.release()


@pytest.fixture
def no_collector() -> Iterator[None]:
    """The cyclic collector would let go of an object a read kept, whenever it happened to run."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@pytest.mark.usefixtures("no_collector")
def test_a_read_keeps_no_pack_a_merge_let_go_of(
    store: MemoryStore, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(history_module, "PACK_EVERY", 1)  # every entry's write merges the small packs
    first = store.commit_workspace(workspace, EMPTY, [put("alpha", "One.\n")])
    revision = store.commit_workspace(workspace, first.revision, [put("alpha", "Two.\n")]).revision
    assert first.history is not None
    history = store.history
    waiting, merged = threading.Event(), threading.Event()
    history._lock = watched = Watched(history._lock, waiting)  # type: ignore[assignment]
    opened = history._open
    reader = threading.get_ident()

    def commit_and_merge() -> None:
        nonlocal revision
        watched.waiters.add(threading.get_ident())
        revision = store.commit_workspace(workspace, revision, [put("alpha", "Three.\n")]).revision
        merged.set()

    def open_as_a_merge_starts() -> pygit2.Repository:
        repo = opened()
        if threading.get_ident() == reader and not waiting.is_set() and not merged.is_set():
            threading.Thread(target=commit_and_merge).start()
            while not (waiting.wait(0.05) or merged.is_set()):
                pass
        return repo

    monkeypatch.setattr(history, "_open", open_as_a_merge_starts)
    assert history.files_at(first.history)["alpha.md"].endswith(b"One.\n")
    assert merged.wait(60)
    monkeypatch.setattr(history, "_open", opened)
    # A later merge deletes the pack the merge above made: nothing of this process may hold it.
    assert store.commit_workspace(workspace, revision, [put("alpha", "Four.\n")]).status == "committed"
    assert len(os.listdir(history.path / "objects" / "pack")) == 2, "one merged pack and its index"
    assert deleted_packs_held() == []
