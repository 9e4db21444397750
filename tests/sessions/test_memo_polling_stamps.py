"""Polling, a kept answer is proved current by the `stat` of each log it lists, compared with the
`stat` that answer was made from: after a patch, the patched answer's own.

While they hold, the listing is the very same object (the daemon then sends the bytes it encoded
before); a log that changed is shown by the next listing, and the listing after that is kept
again rather than patched at every request. A listing takes each `stat` once: the pass that
found the kept answer stale names what to patch, and no pass of an earlier listing ever does.
"""

from __future__ import annotations

from pathlib import Path

from remem.daemon.home import Home
from remem.daemon.protocol.sessions import Listing
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.memo import ListingMemo
from remem.daemon.sessions.writer import SessionWriter
from tests.sessions.factory import SessionSpec, build_session, write_session

CWD = "/home/dev/projects/demo"


def _listing(home: Home, root: Path, memo: ListingMemo) -> Listing:
    catalog = SessionCatalog(home, [root], idle_seconds=120, memo=memo)  # as the daemon, per request
    try:
        return catalog.listing()
    finally:
        catalog.close()


def test_a_patched_answer_is_kept_from_the_stat_it_was_patched_at(home: Home, tmp_path: Path) -> None:
    root = tmp_path / "r"
    draft = build_session(SessionSpec(seed=3, turns=3, cwd=CWD))
    write_session(root, build_session(SessionSpec(seed=4, turns=1, cwd=CWD)))
    memo = ListingMemo(lambda: False)  # polling: no mark is trusted to come in time

    def listing() -> Listing:
        return _listing(home, root, memo)

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


def test_an_unmarked_change_is_seen_when_a_mark_on_another_log_comes_with_it(
    home: Home, tmp_path: Path
) -> None:
    root = tmp_path / "r"
    drafts = [build_session(SessionSpec(seed=seed, turns=2, cwd=CWD)) for seed in (5, 6)]
    memo = ListingMemo(lambda: False)
    writers = [SessionWriter(root, draft.header) for draft in drafts]
    try:
        for writer, draft in zip(writers, drafts, strict=True):
            writer.append(draft.batches[0])
        kept = _listing(home, root, memo)
        assert _listing(home, root, memo) is kept  # its pass found every stat as it was
        for writer, draft in zip(writers, drafts, strict=True):
            writer.append(draft.batches[1])
        memo.changed([str(writers[1].path)])  # the watcher's mark of one; the other's still to come
        turns = {s.id: s.turns for s in _listing(home, root, memo).sessions}
        assert turns == {draft.header.id: 2 for draft in drafts}
    finally:
        for writer in writers:
            writer.close()
