"""When the listing memo may trust what it kept, and when it must let go of it.

It keeps scans and answers while marks say what changed. A mark that comes while a listing is
being made is for the next listing; a file read through a link is stamped through it; a root
that went unwatched for a while, or events the watcher lost, leave nothing kept that a missing
mark should have corrected.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.memory.stamps import RACY_NS
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.memo import ListingMemo
from remem.daemon.sessions.writer import SessionWriter
from tests.sessions.factory import SessionSpec, build_session, write_session
from tests.waiting import wait_until

CWD = "/home/dev/projects/demo"


def _catalog(home: Home, root: Path, memo: ListingMemo | None) -> SessionCatalog:
    return SessionCatalog(home, [root], idle_seconds=120, memo=memo)


def _turns(home: Home, root: Path, memo: ListingMemo | None, cwd: str | None = None) -> dict[str, int]:
    return {s.id: s.turns for s in _catalog(home, root, memo).listing(cwd).sessions}


def _growing(root: Path, seed: int) -> tuple[SessionWriter, list]:
    draft = build_session(SessionSpec(seed=seed, turns=3, cwd=CWD))
    writer = SessionWriter(root, draft.header)
    writer.append(draft.batches[0])
    return writer, draft.batches[1:]


def test_a_mark_coming_while_a_listing_is_made_is_seen_by_the_next(home: Home, tmp_path: Path) -> None:
    root = tmp_path / "r"
    x, y, z = (_growing(root, seed) for seed in (1, 2, 3))
    memo = ListingMemo(lambda: True)  # inotify: marks are trusted, nothing is stat-ed unmarked
    _turns(home, root, memo)
    x[0].append(x[1][0])
    memo.changed([str(x[0].path)])  # an append, its event came: the next listing patches it

    # The watcher's next events land while that listing is being made: one right after it
    # applied the marks, one right after it asked which of its files moved.
    for step, (writer, rest) in (("settle", y), ("moved", z)):
        done = getattr(memo, step)

        def then_an_event(*args: object, done=done, writer=writer, rest=rest) -> object:  # type: ignore[no-untyped-def]
            answer = done(*args)
            if rest:
                writer.append(rest.pop(0))
                memo.changed([str(writer.path)])
            return answer

        setattr(memo, step, then_an_event)
    _turns(home, root, memo)
    assert len(y[1]) == len(z[1]) == 1, "both events landed"
    del memo.settle, memo.moved  # the memo's own steps again
    assert _turns(home, root, memo) == _turns(home, root, None), "the next listing has every append"
    for writer, _ in (x, y, z):
        writer.close()


def test_a_kept_answer_follows_the_target_of_a_linked_dsh_archive_list(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "r"
    draft = build_session(SessionSpec(seed=1, turns=1, cwd=CWD))
    write_session(root, draft)
    session = draft.header.id
    dsh = tmp_path / "dsh-home"
    monkeypatch.setenv("DSH_HOME", str(dsh))
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    target, other = dotfiles / "workspace.json", dotfiles / "workspace-other.json"
    target.write_text(json.dumps({"global": {"archivedSessionIds": []}}))
    other.write_text(json.dumps({"global": {"archivedSessionIds": [session]}}))
    registry = dsh / "storages" / "workspace.json"
    registry.parent.mkdir(parents=True)
    registry.symlink_to(target)  # DSH's archive list kept in a dotfiles repository
    memo = ListingMemo(lambda: True)  # no mark will come: the list lies in no root
    [entry] = _catalog(home, root, memo).entries()[0]
    assert entry.summary.id == session and entry.archived is False
    # Once every file it read is old enough to prove itself unchanged, the answer is kept.
    made = time.time_ns()
    wait_until(lambda: time.time_ns() > made + RACY_NS, what="the files' stamps to settle")
    kept = _catalog(home, root, memo).listing()
    assert _catalog(home, root, memo).listing() is kept

    target.write_text(json.dumps({"global": {"archivedSessionIds": [session]}}))  # the target edited
    [archived] = _catalog(home, root, memo).entries()[0]
    assert archived.archived is True

    target.write_text(json.dumps({"global": {"archivedSessionIds": []}}))
    [restored] = _catalog(home, root, memo).entries()[0]
    assert restored.archived is False
    made = time.time_ns()
    wait_until(lambda: time.time_ns() > made + RACY_NS, what="the files' stamps to settle")
    swapped = dsh / "storages" / "swap.json"
    swapped.symlink_to(other)
    swapped.replace(registry)  # the link pointed elsewhere, at a file older than the answer
    [elsewhere] = _catalog(home, root, memo).entries()[0]
    assert elsewhere.archived is True


def test_a_root_watched_anew_is_scanned_anew(home: Home, tmp_path: Path) -> None:
    root = tmp_path / "r"
    write_session(root, build_session(SessionSpec(seed=1, turns=1, cwd=CWD)))
    memo = ListingMemo(lambda: True)
    assert len(_turns(home, root, memo)) == len(_turns(home, root, memo, CWD)) == 1
    # Written into a project folder the memo scanned, while no watcher followed the root.
    write_session(root, build_session(SessionSpec(seed=2, turns=1, cwd=CWD)))
    memo.changed([str(root)])  # the root's mark alone keeps the project folders' scans
    assert len(_turns(home, root, memo)) == 1
    memo.forget_roots([str(root)])  # what the watcher says when it watches the root anew
    assert _turns(home, root, memo) == _turns(home, root, None) and len(_turns(home, root, None)) == 2
    assert _turns(home, root, memo, CWD) == _turns(home, root, None, CWD)


def test_lost_events_drop_every_kept_scan_and_answer(home: Home, tmp_path: Path) -> None:
    root = tmp_path / "r"
    writer, rest = _growing(root, 1)
    memo = ListingMemo(lambda: True)
    listed = {cwd: _turns(home, root, memo, cwd) for cwd in (None, CWD)}
    writer.append(rest[0])  # its event was lost
    write_session(root, build_session(SessionSpec(seed=2, turns=1, cwd=CWD)))
    assert {cwd: _turns(home, root, memo, cwd) for cwd in (None, CWD)} == listed, "no mark: kept"
    memo.reset()
    for cwd in (None, CWD):
        assert _turns(home, root, memo, cwd) == _turns(home, root, None, cwd) != listed[cwd]
    writer.close()


def test_the_memo_lets_go_of_nothing_it_still_needs(home: Home, tmp_path: Path) -> None:
    """A reset or a forgotten root costs one listing anew; what comes after is kept again."""
    root = tmp_path / "r"
    write_session(root, build_session(SessionSpec(seed=1, turns=1, cwd=CWD)))
    memo = ListingMemo(lambda: True)
    for let_go in (memo.reset, lambda: memo.forget_roots([str(root)])):
        _catalog(home, root, memo).listing()
        let_go()
        anew = _catalog(home, root, memo).listing()
        assert _catalog(home, root, memo).listing() is anew
