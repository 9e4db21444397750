"""Polling, a kept answer is proved current by the `stat` of each log it lists, compared with the
`stat` that answer was made from: after a patch, the patched answer's own.

While they hold, the listing is the very same object (the daemon then sends the bytes it encoded
before); a log that changed is shown by the next listing, and the listing after that is kept
again rather than patched at every request.
"""

from __future__ import annotations

from pathlib import Path

from remem.daemon.home import Home
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.memo import ListingMemo
from remem.daemon.sessions.writer import SessionWriter
from tests.sessions.factory import SessionSpec, build_session, write_session

CWD = "/home/dev/projects/demo"


def test_a_patched_answer_is_kept_from_the_stat_it_was_patched_at(home: Home, tmp_path: Path) -> None:
    root = tmp_path / "r"
    draft = build_session(SessionSpec(seed=3, turns=3, cwd=CWD))
    write_session(root, build_session(SessionSpec(seed=4, turns=1, cwd=CWD)))
    memo = ListingMemo(lambda: False)  # polling: no mark is trusted to come in time

    def listing():  # type: ignore[no-untyped-def]
        catalog = SessionCatalog(home, [root], idle_seconds=120, memo=memo)
        try:
            return catalog.listing()
        finally:
            catalog.close()

    writer = SessionWriter(root, draft.header)
    try:
        writer.append(draft.batches[0])
        first = listing()
        assert listing() is first, "every stat holds: the kept answer"
        for turns, batch in enumerate(draft.batches[1:], start=2):
            writer.append(batch)
            changed = listing()
            assert {s.id: s.turns for s in changed.sessions}[draft.header.id] == turns
            assert listing() is changed, "kept from the stat it was patched at"
    finally:
        writer.close()
