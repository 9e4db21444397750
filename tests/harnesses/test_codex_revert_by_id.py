"""A Codex thread named by its id right after `thread/revert` rotated it to a new rollout.

The index already holds the thread's first rollout, as the one readable row of its id, and
every root has been listed whole, so a lookup by id may answer from the index alone
(decision 0361). Codex's rewind wrote a newer rollout of the same thread that supersedes that
row (decision 0366): the lookup must see it by its name and answer from it, never offer or
fork the turn the user rewound, without waiting for a listing to index it first.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.home import Home
from remem.daemon.sessions import catalog as catalog_module
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.memo import ListingMemo

from .codex import Codex
from .fake_responses import FakeResponses, text

pytestmark = pytest.mark.slow


@dataclass
class Thread:
    """Two turns, q1 and q2, of one thread; `revert()` rewinds q2 as Codex's app-server does."""

    cx: Codex
    session_id: str

    def revert(self) -> None:
        self.cx.revert(self.session_id, self.cx.turn_ids(self.session_id)[1])
        named = sorted(p.name for p in self.cx.sessions.glob(f"*/*/*/rollout-*-{self.session_id}*.jsonl"))
        assert len(named) == 2 and f"{self.session_id}_" in named[1]  # rotated: a new rollout


@pytest.fixture
def thread(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Thread]:
    with FakeResponses() as fake:
        cx = Codex(tmp_path_factory.mktemp("codex-revert-by-id"), fake)
        fake.reply(text("answer 1"))
        session = cx.exec("question 1").session_id
        fake.reply(text("answer 2"))
        cx.exec("resume", session, "question 2")
        yield Thread(cx, session)


def sessions(home: Home, thread: Thread, *args: str) -> tuple[int, Any]:
    done = CliRunner().invoke(
        cli,
        ["--home", str(home.root), "sessions", *args, "--root", str(thread.cx.sessions), "--json"],
    )
    return done.exit_code, json.loads(done.output)


def turns(home: Home, thread: Thread) -> list[tuple[str, str, bool]]:
    code, answer = sessions(home, thread, "turns", thread.session_id)
    assert code == 0, answer
    return [(t["user"], t["status"], t["forkable"]) for t in answer["turns"]]


def test_turns_and_fork_by_id_right_after_a_revert_leave_the_rewound_turn_out(
    home: Home, thread: Thread
) -> None:
    assert turns(home, thread) == [("question 1", "completed", True), ("question 2", "completed", True)]
    thread.revert()
    # No listing ran since: the index's one row of the id is the superseded first rollout.
    assert turns(home, thread) == [("question 1", "completed", True)]
    code, refused = sessions(home, thread, "fork", thread.session_id, "--turn", "2", "--op-id", "op-rewound")
    assert code != 0 and "created" not in refused, refused
    code, done = sessions(home, thread, "fork", thread.session_id, "--turn", "1", "--op-id", "op-kept")
    assert code == 0 and done["forkTurn"] == 1, done
    code, child_turns = sessions(home, thread, "turns", done["child"])
    assert code == 0 and [t["user"] for t in child_turns["turns"]] == ["question 1"]


def test_the_daemons_memo_answers_no_lookup_from_before_the_revert(home: Home, thread: Thread) -> None:
    """The daemon's catalogs share a memo whose listing is kept until the watcher marks a
    change: a lookup that finds a rollout the index lacks has it listed anew, though the
    watcher's news of the new file has not come yet."""
    memo = ListingMemo(lambda: True)  # events trusted, and none delivered

    def catalog() -> SessionCatalog:
        return SessionCatalog(home, [thread.cx.sessions], idle_seconds=0, memo=memo)

    catalog().entries()
    assert catalog().find(thread.session_id).summary.turns == 2
    thread.revert()
    found = catalog().find(thread.session_id)
    assert found.summary.turns == 1 and f"{thread.session_id}_" in found.path.name
    listed = [e for e in catalog().entries()[0] if e.summary.id == thread.session_id]
    assert [e.path for e in listed] == [found.path]
    # Then answered from the index alone: the rotated rollout is the one current row.
    assert catalog().find(thread.session_id).path == found.path


def test_the_lookup_finds_a_rollout_made_days_later_and_reads_no_older_day(
    home: Home, thread: Thread, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A revert on another day rotates the thread into that day's folder. The lookup reads the
    names of the day folders from two days before the thread's first rollout on, and no
    older one: a lookup costs the days since the thread began, not the whole root."""
    old_day = thread.cx.sessions / "2001" / "02" / "03"
    old_day.mkdir(parents=True)
    (old_day / "rollout-2001-02-03T04-05-06-01a00000-0000-7000-8000-000000000000.jsonl").write_text("")
    assert turns(home, thread) == [("question 1", "completed", True), ("question 2", "completed", True)]
    thread.revert()
    (rotated,) = thread.cx.sessions.glob(f"*/*/*/rollout-*-{thread.session_id}_*.jsonl")
    later = thread.cx.sessions / "2999" / "01" / "01"
    later.mkdir(parents=True)
    rotated.rename(later / rotated.name)
    read: list[str] = []
    walked = catalog_module.folder_entries

    def recorded(folder: str, rejected: list[Any]) -> Any:
        read.append(folder)
        return walked(folder, rejected)

    monkeypatch.setattr(catalog_module, "folder_entries", recorded)
    catalog = SessionCatalog(home, [thread.cx.sessions], idle_seconds=0)
    assert catalog._find_indexed(thread.session_id) is None  # a rollout the index lacks
    assert str(later) in read and not any(folder.startswith(str(old_day.parent.parent)) for folder in read)
    monkeypatch.undo()
    assert turns(home, thread) == [("question 1", "completed", True)]
    found = catalog.find(thread.session_id)
    assert found.path == later / rotated.name
    assert catalog._find_indexed(thread.session_id) == found  # from the index alone, once listed
