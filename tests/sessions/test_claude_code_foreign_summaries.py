"""Older Claude Code wrote a session's `summary` into another session's file, naming the
summarised conversation's last record (`leafUuid`): the session whose conversation (or a
branch of it) ends at that leaf is titled by it, unless its own file titles it otherwise
(decision 0358). Read whole, as a listing that grew, through a kept catalog and through the
daemon's memo, also when only the file holding the summary changed."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.home import Home
from remem.daemon.sessions import harness_sources
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.memo import ListingMemo
from remem.daemon.sessions.reader import file_revision
from remem.daemon.sessions.sources import Root

from .claude_lines import CWD, jsonl, listed_as_read, prompt, say
from .harness_roots import claude_project, write

A = "aaaaaaaa-0000-4000-8000-00000000000a"
B = "bbbbbbbb-0000-4000-8000-00000000000b"
C = "cccccccc-0000-4000-8000-00000000000c"


def _of(session: str, *records: dict[str, Any]) -> bytes:
    return jsonl(*({**r, "sessionId": session} if "uuid" in r else r for r in records))


def summary(leaf: str, text: str) -> dict[str, Any]:
    return {"type": "summary", "summary": text, "leafUuid": leaf}


def a_lines() -> list[dict[str, Any]]:
    """Session A: one turn, its conversation ending at `a-a1`."""
    return [prompt("a-u1", None, "first prompt of A"), say("a-a1", "a-u1", "answer of A")]


def b_lines(*summaries: dict[str, Any]) -> list[dict[str, Any]]:
    """Session B, started later, with the summaries Claude Code wrote at its top."""
    late = {"timestamp": "2026-01-02T00:00:00Z"}
    return [*summaries, prompt("b-u1", None, "first prompt of B", **late), say("b-a1", "b-u1", "ok", **late)]


def _catalog(home: Home, root: Path, memo: ListingMemo | None = None) -> SessionCatalog:
    return SessionCatalog(home, [Root(root, "claude-code")], idle_seconds=120, memo=memo)


def _titles(catalog: SessionCatalog) -> dict[str, str | None]:
    return {s.id: s.title for s in catalog.listing().sessions}


def _root(tmp_path: Path, files: dict[str, list[dict[str, Any]]]) -> tuple[Path, Path]:
    root = tmp_path / "projects"
    project = claude_project(root, CWD)
    for session, lines in files.items():
        write(project / f"{session}.jsonl", _of(session, *lines))
    return root, project


# -- the reader ------------------------------------------------------------------------------


def test_a_transcript_names_its_conversations_leaf_also_once_it_grew() -> None:
    data = _of(B, summary("a-a1", "Summary of A"), *b_lines()[0:], summary("a-a1", "Later summary of A"))
    t = listed_as_read(data, f"{B}.jsonl")
    assert t.leaf == "b-a1" and t.title == "first prompt of B"
    assert t.foreign_summaries == (("a-a1", "Summary of A"), ("a-a1", "Later summary of A"))


def test_a_listed_row_keeps_the_leaves_only_of_a_session_titled_by_its_prompt(tmp_path: Path) -> None:
    named = {"type": "custom-title", "customTitle": "user named", "sessionId": C}
    rewound = [
        *a_lines(),
        prompt("a-u2", "a-a1", "more"),
        say("a-a2", "a-u2", "x"),
        prompt("a-u3", "a-a1", "instead"),
    ]
    root, project = _root(tmp_path, {A: rewound, B: b_lines(summary("a-a1", "S")), C: [*a_lines(), named]})
    index = harness_sources.HARNESS_SOURCES["claude-code"].index
    paths = [project / f"{s}.jsonl" for s in (A, B, C)]
    rows = {path.stem: index(path, file_revision(path)).row for path in paths}
    assert json.loads(rows[A].leaves or "") == ["a-u3", "a-a2"], "the conversation's leaf, then its branch's"
    assert rows[A].summaries is None and json.loads(rows[B].summaries or "") == [["a-a1", "S"]]
    assert rows[C].leaves is None, "a custom title: no summary elsewhere titles it"


# -- the catalog -----------------------------------------------------------------------------


@pytest.fixture(params=["kept catalog", "daemon memo"])
def memo(request: pytest.FixtureRequest) -> ListingMemo | None:
    return None if request.param == "kept catalog" else ListingMemo(lambda: True)


def test_a_summary_in_another_file_titles_the_session_ending_at_its_leaf(
    home: Home, tmp_path: Path, memo: ListingMemo | None
) -> None:
    root, _ = _root(tmp_path, {A: a_lines(), B: b_lines(summary("a-a1", "Summary of A"))})
    assert _titles(_catalog(home, root, memo)) == {A: "Summary of A", B: "first prompt of B"}


def test_a_session_found_by_its_id_alone_is_titled_as_its_listing_titles_it(
    home: Home, tmp_path: Path
) -> None:
    """`find` takes an indexed session's row on its own (a fork must not wait for the whole
    listing); the title, and a fork's default title after it, are still the summary's."""
    root, _ = _root(tmp_path, {A: a_lines(), B: b_lines(summary("a-a1", "Summary of A"))})
    _catalog(home, root).listing()  # indexed
    assert _catalog(home, root).find(A).summary.title == "Summary of A"


def test_a_summary_of_a_leaf_no_file_ends_at_titles_nothing(
    home: Home, tmp_path: Path, memo: ListingMemo | None
) -> None:
    stray = [summary("nowhere", "Stray"), summary("a-u1", "Of A's first prompt, no leaf")]
    c_lines = [prompt("c-u1", None, "first prompt of C"), say("c-a1", "c-u1", "c")]
    root, _ = _root(tmp_path, {A: a_lines(), B: b_lines(*stray, summary("c-a1", "Summary of C")), C: c_lines})
    titles = _titles(_catalog(home, root, memo))
    assert titles == {A: "first prompt of A", B: "first prompt of B", C: "Summary of C"}


def test_a_sessions_own_title_wins_over_another_files_summary(
    home: Home, tmp_path: Path, memo: ListingMemo | None
) -> None:
    named = {"type": "custom-title", "customTitle": "user named", "sessionId": A}
    c_lines = [prompt("c-u1", None, "first prompt of C"), say("c-a1", "c-u1", "c")]
    summaries = (summary("a-a1", "Summary of A"), summary("c-a1", "Summary of C"))
    root, _ = _root(tmp_path, {A: [*a_lines(), named], B: b_lines(*summaries), C: c_lines})
    assert _titles(_catalog(home, root, memo)) == {A: "user named", B: "first prompt of B", C: "Summary of C"}


def test_the_latest_summary_wins_the_later_session_then_the_later_line(
    home: Home, tmp_path: Path, memo: ListingMemo | None
) -> None:
    later = {"timestamp": "2026-01-03T00:00:00Z"}
    c_lines = [summary("a-a1", "From C"), prompt("c-u1", None, "first prompt of C", **later)]
    files = {A: a_lines(), B: b_lines(summary("a-a1", "First"), summary("a-a1", "Second")), C: c_lines}
    root, project = _root(tmp_path, files)
    assert _titles(_catalog(home, root, memo))[A] == "From C", "C was started after B"
    os.remove(project / f"{C}.jsonl")
    if memo is not None:
        memo.changed([str(project / f"{C}.jsonl"), str(project)])
    assert _titles(_catalog(home, root, memo))[A] == "Second", "B's later line"


def test_a_branchs_summary_titles_a_session_whose_conversation_has_none(
    home: Home, tmp_path: Path, memo: ListingMemo | None
) -> None:
    rewound = [
        *a_lines(),
        prompt("a-u2", "a-a1", "more"),
        say("a-a2", "a-u2", "x"),
        prompt("a-u3", "a-a1", "instead"),
    ]
    root, project = _root(tmp_path, {A: rewound, B: b_lines(summary("a-a2", "Of the branch"))})
    assert _titles(_catalog(home, root, memo))[A] == "Of the branch"
    write(
        project / f"{B}.jsonl", _of(B, *b_lines(summary("a-a2", "Of the branch"), summary("a-u3", "Of it")))
    )
    if memo is not None:
        memo.changed([str(project / f"{B}.jsonl")])
    assert _titles(_catalog(home, root, memo))[A] == "Of it", "the conversation's leaf first"


# -- the daemon's memo: another file's change retitles a session whose file did not change ---


def _append(path: Path, *records: dict[str, Any]) -> None:
    with path.open("ab") as handle:
        handle.write(_of(path.stem, *records))


def test_through_the_memo_a_file_written_or_grown_later_retitles_a_listed_session(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, project = _root(tmp_path, {A: a_lines()})
    memo = ListingMemo(lambda: True)
    assert _titles(_catalog(home, root, memo)) == {A: "first prompt of A"}
    b = project / f"{B}.jsonl"
    b.write_bytes(_of(B, *b_lines(summary("a-a1", "Summary of A"))))  # recent: its graph is kept
    memo.changed([str(b), str(project)])
    assert _titles(_catalog(home, root, memo)) == {A: "Summary of A", B: "first prompt of B"}

    grew: list[bool] = []
    original = harness_sources.grow

    def grow(*args: Any) -> Any:
        taken = original(*args)
        grew.append(taken is not None)
        return taken

    monkeypatch.setattr(harness_sources, "grow", grow)
    _append(b, summary("a-a1", "Later summary of A"))  # A's file unchanged
    memo.changed([str(b)])
    assert _titles(_catalog(home, root, memo))[A] == "Later summary of A"
    assert grew == [True], "B's append was taken on from its kept graph"


def test_a_patched_listing_titles_a_grown_session_by_the_summary_of_its_new_leaf(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    summaries = (summary("a-a1", "Up to a1"), summary("a-a2", "Up to a2"))
    root, project = _root(tmp_path, {A: a_lines(), B: b_lines(*summaries)})
    memo = ListingMemo(lambda: True)
    assert _titles(_catalog(home, root, memo))[A] == "Up to a1"
    computed: list[bool] = []
    original = SessionCatalog._compute
    monkeypatch.setattr(SessionCatalog, "_compute", lambda *a: computed.append(True) or original(*a))
    a = project / f"{A}.jsonl"
    _append(a, prompt("a-u2", "a-a1", "more"), say("a-a2", "a-u2", "x"))
    memo.changed([str(a)])
    assert _titles(_catalog(home, root, memo))[A] == "Up to a2"
    _append(a, prompt("a-u3", "a-a2", "again"), say("a-a3", "a-u3", "y"))
    memo.changed([str(a)])
    assert _titles(_catalog(home, root, memo))[A] == "first prompt of A", "no summary names its leaf"
    assert computed == [], "only A's row was patched"
