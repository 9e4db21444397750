"""The listing memo: remembered folder scans and rows, redone exactly where the watcher marks.

Each test lists through a memo, changes the root, and checks what the next listing sees with
and without the mark the watcher would send: an unmarked change is invisible while events are
trusted (proof that nothing was stat-ed), and always visible when they are not (polling).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.forks.sources import fork_session
from remem.daemon.home import Home
from remem.daemon.protocol.forks import ForkRequest
from remem.daemon.sessions import catalog as catalog_module
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.harness_sources import HARNESS_SOURCES
from remem.daemon.sessions.memo import ListingMemo
from remem.daemon.sessions.metadata import SessionMetadata
from remem.daemon.sessions.sources import Root
from remem.daemon.sessions.writer import LOCK_NAME, SessionWriter
from tests.sessions.factory import SessionSpec, build_session, write_session

from .claude_lines import CWD as CLAUDE_CWD
from .claude_lines import jsonl, prompt, say
from .codex_lines import rollout, turn
from .harness_roots import SID, TID, build_roots, claude_project, write

CWD = "/home/dev/projects/demo"
NEW = "7e570000-0000-4000-8000-000000000001"


def _catalog(home: Home, root: Path, memo: ListingMemo) -> SessionCatalog:
    return SessionCatalog(home, [root], idle_seconds=120, memo=memo)


def _turns(catalog: SessionCatalog) -> dict[str, int]:
    return {s.id: s.turns for s in catalog.listing().sessions}


def _grow(root: Path, home: Home) -> tuple[str, Path, list]:
    draft = build_session(SessionSpec(seed=4, turns=4, cwd=CWD))
    writer = SessionWriter(root, draft.header)
    for batch in draft.batches[:3]:
        writer.append(batch)
    return draft.header.id, writer.path, [writer, draft.batches[3:]]


@pytest.mark.parametrize("trusted", [True, False], ids=["inotify", "polling"])
def test_an_unmarked_append_is_seen_only_when_events_are_not_trusted(
    home: Home, tmp_path: Path, trusted: bool
) -> None:
    root = tmp_path / "r"
    session, path, (writer, rest) = _grow(root, home)
    memo = ListingMemo(lambda: trusted)
    before = _turns(_catalog(home, root, memo))[session]
    for batch in rest:
        writer.append(batch)
    writer.close()
    unmarked = _turns(_catalog(home, root, memo))[session]
    # Trusted events: nothing marked, nothing re-stat-ed. Polling: one stat per log.
    assert unmarked == (before if trusted else 4) and before < 4
    memo.changed([str(path)])
    assert _turns(_catalog(home, root, memo))[session] == 4


def test_sessions_and_projects_that_come_and_go_follow_their_marks(home: Home, tmp_path: Path) -> None:
    root = tmp_path / "r"
    first = write_session(root, build_session(SessionSpec(seed=1, turns=1, cwd=CWD)))
    memo = ListingMemo(lambda: True)
    assert len(_turns(_catalog(home, root, memo))) == 1

    sibling = write_session(root, build_session(SessionSpec(seed=2, turns=1, cwd=CWD)))
    assert len(_turns(_catalog(home, root, memo))) == 1
    memo.changed([str(sibling.parent)])  # a session folder appeared in a known project
    assert len(_turns(_catalog(home, root, memo))) == 2

    elsewhere = write_session(root, build_session(SessionSpec(seed=3, turns=1, cwd="/home/dev/other")))
    memo.changed([str(elsewhere.parent.parent)])  # a new project folder
    assert len(_turns(_catalog(home, root, memo))) == 3

    shutil.rmtree(first.parent)
    memo.changed([str(first.parent)])
    catalog = _catalog(home, root, memo)
    assert len(_turns(catalog)) == 2
    assert str(first) not in catalog.index.rows(), "a log that went is forgotten, on disk too"


def test_a_log_swapped_for_a_link_is_refused_once_marked(home: Home, tmp_path: Path) -> None:
    root = tmp_path / "r"
    log = write_session(root, build_session(SessionSpec(seed=1, turns=1, cwd=CWD)))
    memo = ListingMemo(lambda: True)
    assert len(_turns(_catalog(home, root, memo))) == 1
    decoy = tmp_path / "decoy.zstd"
    shutil.move(log, decoy)
    os.symlink(decoy, log)
    memo.changed([str(log)])
    listing = _catalog(home, root, memo).listing()
    assert listing.sessions == [] and [e.path for e in listing.errors] == [str(log)]
    assert "symbolic link" in listing.errors[0].message


def test_a_workspace_listing_through_the_memo_reads_its_project_only(home: Home, tmp_path: Path) -> None:
    root = tmp_path / "r"
    mine = write_session(root, build_session(SessionSpec(seed=1, turns=1, cwd=CWD)))
    write_session(root, build_session(SessionSpec(seed=2, turns=1, cwd="/home/dev/other")))
    memo = ListingMemo(lambda: True)
    catalog = _catalog(home, root, memo)
    assert [e.path for e in catalog.entries(CWD)[0]] == [mine]
    assert set(catalog.index.rows()) == {str(mine)}
    assert len(_turns(catalog)) == 2


def test_a_fork_is_found_at_once_though_no_watcher_has_marked_it(home: Home, tmp_path: Path) -> None:
    # The daemon's fork looks its child up right after writing it; the watcher's news of the
    # new file may come later, so the writer tells the memo itself.
    root = tmp_path / "r"
    source = write_session(root, build_session(SessionSpec(seed=1, turns=2, cwd=CWD)))
    catalog = _catalog(home, root, ListingMemo(lambda: True))
    [parent] = catalog.listing().sessions
    result, child = fork_session(catalog, ForkRequest(source=parent.id, operationId="op-1"))
    assert child.is_file()
    assert child.parent.parent == source.parent.parent  # the parent's project folder
    assert {s.id for s in catalog.listing().sessions} == {parent.id, result.child}


def test_remembered_entries_follow_titles_and_liveness(home: Home, tmp_path: Path) -> None:
    root = tmp_path / "r"
    path = write_session(root, build_session(SessionSpec(seed=1, turns=1, cwd=CWD)))
    os.utime(path, (1_600_000_000, 1_600_000_000))
    memo = ListingMemo(lambda: False)
    [first] = _catalog(home, root, memo).listing().sessions
    assert first.live is False
    SessionMetadata(home).update(first.id, None, title="Renamed")
    [renamed] = _catalog(home, root, memo).listing().sessions
    assert renamed.title == "Renamed"
    os.utime(path)  # written just now: live by recency, though the content is the same
    [touched] = _catalog(home, root, memo).listing().sessions
    assert touched.live is True and touched.title == "Renamed"


def test_a_listing_after_an_append_shows_a_title_set_since(home: Home, tmp_path: Path) -> None:
    root = tmp_path / "r"
    session, path, (writer, rest) = _grow(root, home)
    memo = ListingMemo(lambda: True)
    [before] = _catalog(home, root, memo).listing().sessions
    SessionMetadata(home).update(session, None, title="Renamed")
    writer.append(rest[0])
    writer.close()
    memo.changed([str(path)])  # the append is marked; the metadata file is no log, never marked
    [grown] = _catalog(home, root, memo).listing().sessions
    assert grown.title == "Renamed" and grown.lastSeq > before.lastSeq


def _harness_catalog(home: Home, roots: dict[str, Path], memo: ListingMemo) -> SessionCatalog:
    return SessionCatalog(home, [Root(p, fmt) for fmt, p in roots.items()], 120, memo)  # type: ignore[arg-type]


@pytest.mark.parametrize("cwd", [None, CLAUDE_CWD], ids=["all", "workspace"])
def test_a_warm_listing_rescans_no_harness_folder_until_marked(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cwd: str | None
) -> None:
    roots = build_roots(tmp_path)
    memo = ListingMemo(lambda: True)
    scans: list[str] = []
    for fmt, source in HARNESS_SOURCES.items():
        original = source.scan
        monkeypatch.setattr(source, "scan", lambda r, c, o=original, f=fmt: scans.append(f) or o(r, c))
    first = {s.id for s in _harness_catalog(home, roots, memo).listing(cwd).sessions}
    assert sorted(scans) == ["claude-code", "codex"] and SID in first and TID in first
    scans.clear()
    assert {s.id for s in _harness_catalog(home, roots, memo).listing(cwd).sessions} == first
    assert scans == [], "a warm listing through the memo scans no harness folder"

    project = claude_project(roots["claude-code"])
    new = write(project / f"{NEW}.jsonl", jsonl(prompt("n1", None, "new one"), say("n2", "n1", "ok")))
    assert NEW not in {s.id for s in _harness_catalog(home, roots, memo).listing(cwd).sessions}
    memo.changed([str(new), str(project)])  # what inotify reports for a created file
    listed = {s.id for s in _harness_catalog(home, roots, memo).listing(cwd).sessions}
    assert listed == first | {NEW} and scans == ["claude-code"], "only the marked root is scanned again"

    scans.clear()
    rollout_path = next(roots["codex"].rglob(f"*{TID}.jsonl"))
    with rollout_path.open("ab") as handle:
        handle.write(rollout(*turn("t2", "more", "again")))
    memo.changed([str(rollout_path)])  # an append: the file is stat-ed again, nothing rescanned
    turns = {s.id: s.turns for s in _harness_catalog(home, roots, memo).listing(cwd).sessions}
    assert turns[TID] == 2 and scans == []

    os.remove(new)
    memo.changed([str(new), str(project)])
    assert NEW not in {s.id for s in _harness_catalog(home, roots, memo).listing(cwd).sessions}


def test_polling_restats_remembered_harness_files(home: Home, tmp_path: Path) -> None:
    roots = build_roots(tmp_path)
    memo = ListingMemo(lambda: False)
    path = claude_project(roots["claude-code"]) / f"{SID}.jsonl"
    before = {s.id: s.turns for s in _harness_catalog(home, roots, memo).listing().sessions}[SID]
    with path.open("ab") as handle:
        handle.write(jsonl(prompt("u5", "a4", "one more"), say("a5", "u5", "more")))
    after = {s.id: s.turns for s in _harness_catalog(home, roots, memo).listing().sessions}[SID]
    assert after == before + 1, "unmarked, but polling stats every remembered file"
    path.unlink()
    assert SID not in {s.id for s in _harness_catalog(home, roots, memo).listing().sessions}


# -- the kept answer -------------------------------------------------------------------------


def test_a_warm_listing_is_the_same_answer_until_a_mark(home: Home, tmp_path: Path) -> None:
    root = tmp_path / "r"
    session, path, (writer, rest) = _grow(root, home)
    memo = ListingMemo(lambda: True)
    first = _catalog(home, root, memo).listing()
    assert _catalog(home, root, memo).listing() is first, "nothing changed: the same answer, unread"
    assert _catalog(home, root, memo).listing(CWD) is not first, "another query has its own answer"
    writer.append(rest[0])
    memo.changed([str(path)])
    grown = _catalog(home, root, memo).listing()
    assert grown is not first and {s.id: s.turns for s in grown.sessions}[session] == 4
    assert _catalog(home, root, memo).listing() is grown
    writer.close()


def test_polling_keeps_the_answer_while_every_log_has_its_stat(home: Home, tmp_path: Path) -> None:
    root = tmp_path / "r"
    session, path, (writer, rest) = _grow(root, home)
    memo = ListingMemo(lambda: False)
    first = _catalog(home, root, memo).listing()
    assert _catalog(home, root, memo).listing() is first
    writer.append(rest[0])  # unmarked: the stat of the log alone tells
    writer.close()
    grown = _catalog(home, root, memo).listing()
    assert {s.id: s.turns for s in grown.sessions}[session] == 4
    path.unlink()
    assert _catalog(home, root, memo).listing().sessions == []


def test_a_kept_answer_follows_titles_and_archive_lists_written_beside_the_logs(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "r"
    write_session(root, build_session(SessionSpec(seed=1, turns=1, cwd=CWD)))
    memo = ListingMemo(lambda: True)  # no mark will come: neither file is in a root
    [entry], _ = _catalog(home, root, memo).entries()
    SessionMetadata(home).update(entry.summary.id, None, title="Renamed")
    [renamed], _ = _catalog(home, root, memo).entries()
    assert renamed.summary.title == "Renamed" and renamed.archived is False
    dsh = tmp_path / "dsh-home"
    monkeypatch.setenv("DSH_HOME", str(dsh))
    registry = dsh / "storages" / "workspace.json"
    registry.parent.mkdir(parents=True)
    registry.write_text(json.dumps({"global": {"archivedSessionIds": [entry.summary.id]}}))
    [archived], _ = _catalog(home, root, memo).entries()
    assert archived.archived is True and archived.summary.title == "Renamed"
    registry.write_text(json.dumps({"global": {"archivedSessionIds": []}}))  # rewritten in place
    [restored], _ = _catalog(home, root, memo).entries()
    assert restored.archived is False


class _Clock:
    """The catalog's clock, set by the test: what recency says hangs on it alone, not on how
    long the machine takes between two listings."""

    def __init__(self, now_ns: int) -> None:
        self.now_ns = now_ns

    def time_ns(self) -> int:
        return self.now_ns


def test_a_kept_answer_expires_when_recency_alone_would_end_a_session(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "r"
    path = write_session(root, build_session(SessionSpec(seed=1, turns=1, cwd=CWD)))
    written_ns = path.stat().st_mtime_ns
    clock = _Clock(written_ns)
    monkeypatch.setattr(catalog_module, "time", clock)
    memo = ListingMemo(lambda: True)
    catalog = SessionCatalog(home, [root], idle_seconds=1, memo=memo)
    listing = catalog.listing()
    assert [s.live for s in listing.sessions] == [True], "written just now"
    clock.now_ns = written_ns + 999_999_999
    assert catalog.listing() is listing, "the answer is kept while it holds"
    clock.now_ns = written_ns + 1_000_000_000
    [idle] = SessionCatalog(home, [root], idle_seconds=1, memo=memo).listing().sessions
    assert idle.live is False, "no mark came: the answer knew when it would stop being true"


def test_a_session_remem_writes_is_live_while_its_writer_holds_the_lock(home: Home) -> None:
    draft = build_session(SessionSpec(seed=5, turns=2, cwd=CWD))
    writer = SessionWriter(home.sessions, draft.header)
    writer.append(draft.batches[0])
    memo = ListingMemo(lambda: True)
    [writing] = _catalog(home, home.sessions, memo).listing().sessions
    assert writing.live is True
    writer.close()  # the lock goes; no mark is needed to see it
    [done] = _catalog(home, home.sessions, memo).listing().sessions
    assert done.live is False


@pytest.mark.parametrize("stand_in", ["folder", "link"])
def test_a_writer_lock_that_is_no_lock_file_says_nothing_of_liveness(home: Home, stand_in: str) -> None:
    # Liveness falls back to what any log shows (an open turn, a recent change); the listing
    # of every other session must not fail over one session folder's odd lock.
    draft = build_session(SessionSpec(seed=5, turns=2, cwd=CWD))
    with SessionWriter(home.sessions, draft.header) as writer:
        for batch in draft.batches:
            writer.append(batch)
    lock = writer.path.parent / LOCK_NAME
    lock.unlink()
    if stand_in == "folder":
        lock.mkdir()
    else:
        lock.symlink_to(writer.path)
    for memo in (None, ListingMemo(lambda: True)):
        listing = SessionCatalog(home, [home.sessions], idle_seconds=0, memo=memo).listing()
        assert [(s.id, s.live) for s in listing.sessions] == [(draft.header.id, False)]
        assert listing.errors == []


@pytest.mark.parametrize("trusted", [True, False], ids=["inotify", "polling"])
def test_after_an_append_only_that_log_is_listed_again(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, trusted: bool
) -> None:
    root = tmp_path / "r"
    for seed in (1, 2):
        write_session(root, build_session(SessionSpec(seed=seed, turns=2, cwd=CWD)))
    session, path, (writer, rest) = _grow(root, home)
    memo = ListingMemo(lambda: trusted)
    first = _catalog(home, root, memo).listing()
    listed_anew: list[str | None] = []  # the queries listed through the memo from scratch
    compute = SessionCatalog._compute

    def spied(catalog: SessionCatalog, wanted: str | None, *rest: Any) -> Any:
        if catalog.memo is memo:
            listed_anew.append(wanted)
        return compute(catalog, wanted, *rest)

    monkeypatch.setattr(SessionCatalog, "_compute", spied)

    writer.append(rest[0])
    memo.changed([str(path)])  # polling would see it without the mark: the same path follows
    grown = _catalog(home, root, memo).listing()
    fresh = SessionCatalog(home, [root], idle_seconds=120).listing()  # no memo: read anew
    assert grown.model_dump() == fresh.model_dump() and grown != first
    assert {s.id: s.turns for s in grown.sessions}[session] == 4
    assert listed_anew == [], "only the appended log was looked at again"

    writer.close()
    other = build_session(SessionSpec(seed=9, turns=1, cwd=CWD))
    shutil.copyfile(write_session(tmp_path / "elsewhere", other), path)  # another session's header
    memo.changed([str(path)])
    replaced = _catalog(home, root, memo).listing()
    assert listed_anew == [None], "a log that no longer lists as it did has the listing made anew"
    assert replaced.model_dump() == SessionCatalog(home, [root], idle_seconds=120).listing().model_dump()
    assert session not in {s.id for s in replaced.sessions} and str(path) in {e.path for e in replaced.errors}
