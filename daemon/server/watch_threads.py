"""Hearing a watcher's watchdog threads end on an error, through `threading.excepthook`.

A thread of watchdog's that ends on an error (an inotify reader whose callback failed, a polling
emitter whose snapshot failed other than with an OSError) hears nothing more, and watchdog says
nothing of it: the hook is the one place to hear it. It is installed while a watcher runs, the
hook found before the first restored once none does, whatever the order they stop in.
"""

from __future__ import annotations

import threading
from typing import Protocol


class ThreadOwner(Protocol):
    def owns(self, thread: threading.Thread) -> bool: ...

    def post_died(self, thread: threading.Thread, exc: Exception) -> None: ...

    def post_failure(self, exc: Exception) -> None: ...


# The owners running, to which `threading.excepthook` hands a thread of theirs that ended on an
# error.
_running: list[ThreadOwner] = []
_hearing = threading.Lock()
_previous_hook = threading.excepthook


def hear_threads(owner: ThreadOwner) -> None:
    """From now on, a thread `owner` owns that ends on an error is handed to it."""
    global _previous_hook
    with _hearing:
        if not _running:
            _previous_hook = threading.excepthook
            threading.excepthook = _thread_ended
        _running.append(owner)


def unhear_threads(owner: ThreadOwner) -> None:
    """No longer hand `owner` its threads' ends; the last one gone puts the hook found back."""
    with _hearing:
        if owner in _running:
            _running.remove(owner)
        if not _running and threading.excepthook is _thread_ended:  # else one set since chains to it: left
            threading.excepthook = _previous_hook


def _thread_ended(args: threading.ExceptHookArgs) -> None:
    """`threading.excepthook` while an owner runs: a thread of an owner's that ended on an error
    is handed to it; any other thread's is passed on."""
    thread, exc = args.thread, args.exc_value
    owner = None if thread is None else _owner(thread)
    if owner is not None and thread is not None and isinstance(exc, Exception):
        owner.post_died(thread, exc)
    else:
        _previous_hook(args)


def _owner(thread: threading.Thread) -> ThreadOwner | None:
    """The running owner of `thread`, if any. An owner whose `owns` fails is handed that as a
    failure, and the look goes on: raised here, it ended the hook, the thread's end handed to
    no one, not even the hook found before."""
    for owner in list(_running):
        try:
            if owner.owns(thread):
                return owner
        except Exception as exc:
            owner.post_failure(exc)
    return None
