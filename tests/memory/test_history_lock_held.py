"""The history never holds up a commit, nor a read of it, for good: another process keeping its
writing lock (a `remem --no-daemon` command suspended while it wrote an entry) made every
commit of memory wait, and with it every read of that scope, until it let go."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import portalocker
import pytest

from remem.daemon.memory import history as history_module
from remem.daemon.memory.history import RECOVERED
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore

from .factory import put
from .test_crash_recovery import EMPTY

T = TypeVar("T")
BOUND_SECONDS = 0.3
JOIN_SECONDS = 20  # far past the bound: only a wait without one reaches it


@contextmanager
def held_by_another(store: MemoryStore) -> Iterator[None]:
    """The writing lock held as another process holds it (flock is per open file, not per process)."""
    with open(store.home.locks / "history.lock", "a+b") as handle:
        portalocker.lock(handle, portalocker.LockFlags.EXCLUSIVE)
        try:
            yield
        finally:
            portalocker.unlock(handle)


def recorded_waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """How long each wait for the writing lock was allowed to be, as the history asks them."""
    waits: list[float] = []
    bounded = history_module.bounded_file_lock

    def recorded(path: object, *, within: float, shared: bool = False) -> object:
        waits.append(within)
        return bounded(path, within=within, shared=shared)  # type: ignore[arg-type]

    monkeypatch.setattr(history_module, "bounded_file_lock", recorded)
    return waits


def within_bound(call: Callable[[], T]) -> T:
    answers: list[T] = []
    worker = threading.Thread(target=lambda: answers.append(call()), daemon=True)
    worker.start()
    worker.join(JOIN_SECONDS)
    assert not worker.is_alive(), "it waited on the lock's holder without a bound"
    return answers[0]


def test_a_commit_and_a_log_do_not_wait_on_a_stuck_holder_of_the_history(
    store: MemoryStore, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(history_module, "WRITING_WAIT_SECONDS", BOUND_SECONDS, raising=False)
    first = store.commit_workspace(workspace, EMPTY, [put("alpha")])
    with held_by_another(store):
        second = within_bound(lambda: store.commit_workspace(workspace, first.revision, [put("beta")]))
        assert (second.status, second.history) == ("committed", None), "committed, without its entry"
        logged = within_bound(lambda: store.history.log(workspace.key))
        assert [e.id for e in logged] == [first.history]
        trouble = store.history.trouble(workspace.key)
        assert trouble is not None and "history.lock for over 0.3 s" in trouble
    third = store.commit_workspace(workspace, second.revision, [put("gamma")])
    kinds = [e.actor.kind for e in store.history.log(workspace.key)]
    # recorded first, as its commit's: the intent it wrote names it (decision 0442)
    assert kinds == ["cli", "cli", "cli"], "the state it missed is recorded first"
    assert (
        store.history.log(workspace.key)[0].id == third.history
        and store.history.trouble(workspace.key) is None
    )


def test_one_request_waits_for_a_stuck_holder_once_not_at_each_step(
    store: MemoryStore, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent's update records its entry, reconciles and flushes: each waited the whole bound
    for the same stuck holder, 15 s (and a history read 30 s) where 5 s is promised. The waits
    after one ran out are short, not none: a holder of a moment is still waited for."""
    monkeypatch.setattr(history_module, "WRITING_WAIT_SECONDS", BOUND_SECONDS, raising=False)
    monkeypatch.setattr(history_module, "STUCK_WAIT_SECONDS", BOUND_SECONDS / 10, raising=False)
    waits = recorded_waits(monkeypatch)
    first = store.commit_workspace(workspace, EMPTY, [put("alpha")])
    with held_by_another(store):
        waits.clear()
        store.commit_workspace(workspace, first.revision, [put("beta")])
        store.history.flush()
        store.sync_history(workspace.key, RECOVERED)
        short = history_module.STUCK_WAIT_SECONDS
        assert waits == [BOUND_SECONDS, short, short], "the first wait ran out; the others are short"
        threading.Event().wait(BOUND_SECONDS)  # the holder may have let go since: wait again
        waits.clear()
        store.history.flush()
        assert waits == [BOUND_SECONDS]


def test_a_look_at_a_scope_its_history_ends_with_neither_waits_nor_warns(
    store: MemoryStore, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon looks at every scope it is asked about: with a stuck holder, a look that had
    nothing to record waited for it, and its failure said ever after that the scope's history
    lacks changes, though nothing had changed."""
    monkeypatch.setattr(history_module, "WRITING_WAIT_SECONDS", BOUND_SECONDS, raising=False)
    first = store.commit_workspace(workspace, EMPTY, [put("alpha")])
    waits = recorded_waits(monkeypatch)
    with held_by_another(store):
        assert store.sync_history(workspace.key, RECOVERED) is None
        assert store.sync_history(None, RECOVERED) is None  # Global: never changed, no history
    assert waits == [] and store.history.trouble(workspace.key) is None
    assert store.history.trouble(None) is None
    assert [e.id for e in store.history.log(workspace.key)] == [first.history]
