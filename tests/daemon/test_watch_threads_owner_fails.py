"""An owner whose `owns` fails in `threading.excepthook` is handed that failure, and the ended
thread still goes on to another owner or to the hook found before: raised in the hook, it ended
it, the thread's end handed to no one (Python only printed that the hook failed)."""

from __future__ import annotations

import threading

from remem.daemon.server.watch_threads import hear_threads, unhear_threads


class _Owner:
    def __init__(self, owned: str | None) -> None:
        self.owned = owned  # the name of the thread it owns; None: `owns` fails
        self.died: list[str] = []
        self.failures: list[Exception] = []

    def owns(self, thread: threading.Thread) -> bool:
        if self.owned is None:
            raise ValueError("owns failed")
        return thread.name == self.owned

    def post_died(self, thread: threading.Thread, exc: Exception) -> None:
        self.died.append(thread.name)

    def post_failure(self, exc: Exception) -> None:
        self.failures.append(exc)


def _end_on_an_error(name: str) -> None:
    thread = threading.Thread(target=lambda: 1 / 0, name=name)
    thread.start()
    thread.join()


def test_an_owner_whose_owns_fails_blinds_neither_the_other_owners_nor_the_hook_before() -> None:
    passed_on: list[str] = []
    before = threading.excepthook
    threading.excepthook = lambda args: passed_on.append(str(args.thread and args.thread.name))
    failing, owning = _Owner(None), _Owner("owned")
    hear_threads(failing)
    hear_threads(owning)
    try:
        _end_on_an_error("owned")
        _end_on_an_error("nobody's")
    finally:
        unhear_threads(owning)
        unhear_threads(failing)
        threading.excepthook = before
    assert owning.died == ["owned"]
    assert passed_on == ["nobody's"]
    assert [str(exc) for exc in failing.failures] == ["owns failed", "owns failed"]
