"""A grown Codex rollout (decision 0350) or Claude Code transcript (decision 0351) is relisted
from where its last listing stopped: the row is the one a cold listing of the whole file
gives, and only the appended bytes are read, while the append only goes on."""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.home import Home
from remem.daemon.protocol.sessions import SessionFormat
from remem.daemon.sessions import harness_sources
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.continuations import MAX_GRAPHS, Continuations
from remem.daemon.sessions.formats import jsonl as jsonl_format
from remem.daemon.sessions.formats.claude_code import grow, listed_transcript
from remem.daemon.sessions.formats.codex import listed_rollout
from remem.daemon.sessions.harness_sources import Tallied
from remem.daemon.sessions.index import LogRow
from remem.daemon.sessions.memo import ListingMemo
from remem.daemon.sessions.sources import Root

from .claude_lines import CWD, SID, jsonl, listed_as_read, prompt, rec, result, say, side, use
from .codex_lines import call, event, message, meta, output, rollout, turn
from .harness_roots import OLD

PARENT = "019c0000-0000-7000-8000-0000000000aa"
_homes = itertools.count()


def _listing(request: pytest.FixtureRequest, tmp_path: Path, fmt: SessionFormat) -> SessionCatalog:
    """A catalog that lists the same root again: one kept by its caller, or the daemon's (one per
    request, sharing a memo that polls)."""
    root = tmp_path / "sessions"
    root.mkdir()
    if request.param == "kept catalog":
        return _catalog(tmp_path / "home", root, fmt)
    memo = ListingMemo(lambda: False)

    class PerRequest(SessionCatalog):
        def listing(self, *args: Any, **kwargs: Any) -> Any:
            return _catalog(tmp_path / "home", root, fmt, memo).listing(*args, **kwargs)

    return PerRequest(Home(tmp_path / "home"), [Root(root, fmt)], idle_seconds=120)


@pytest.fixture(params=["kept catalog", "daemon memo"])
def listing(request: pytest.FixtureRequest, tmp_path: Path) -> SessionCatalog:
    return _listing(request, tmp_path, "codex")


@pytest.fixture(params=["kept catalog", "daemon memo"])
def claude_listing(request: pytest.FixtureRequest, tmp_path: Path) -> SessionCatalog:
    return _listing(request, tmp_path, "claude-code")


def _catalog(home: Path, root: Path, fmt: SessionFormat, memo: ListingMemo | None = None) -> SessionCatalog:
    return SessionCatalog(Home(home), [Root(root, fmt)], idle_seconds=120, memo=memo)


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, bool]]:
    """What each listing's read of a rollout got: how many bytes, and whether it went on from a tally."""
    seen: list[tuple[int, bool]] = []
    original = harness_sources.listed_rollout

    def listed(data: bytes, kept: Any = None) -> Any:
        seen.append((len(data), kept is not None))
        return original(data, kept)

    monkeypatch.setattr(harness_sources, "listed_rollout", listed)
    return seen


def _rollout_path(catalog: SessionCatalog) -> Path:
    return catalog.roots[0] / "2026" / "05" / "01" / "rollout-2026-05-01T00-00-00-grown.jsonl"


def _one_turn_listed(catalog: SessionCatalog) -> Path:
    """A rollout of one turn, listed."""
    path = _rollout_path(catalog)
    path.parent.mkdir(parents=True)
    path.write_bytes(rollout(meta(), *turn("t1", "first", "one")))
    catalog.listing()
    return path


def _as_cold(catalog: SessionCatalog, path: Path) -> LogRow:
    """The row a cold listing of the file as it is now gives, in a home of its own."""
    home = catalog.home.root.parent / f"cold-{next(_homes)}"
    fresh = _catalog(home, catalog.roots[0], catalog.sources[0].format)
    fresh.listing()
    return fresh.index.rows()[str(path)]


def _listed_row(catalog: SessionCatalog, path: Path) -> LogRow:
    catalog.listing()
    return catalog.index.rows()[str(path)]


def _append(path: Path, data: bytes) -> None:
    with open(path, "ab") as handle:
        handle.write(data)


def test_each_append_is_read_alone_and_lists_as_the_whole_file_does(
    listing: SessionCatalog, reads: list[tuple[int, bool]]
) -> None:
    path = _rollout_path(listing)
    path.parent.mkdir(parents=True)
    forked = meta(cwd="/w", forked_from_id=PARENT, timestamp="2026-05-01T00:00:00Z")
    forked["timestamp"] = "2026-05-02T00:00:00Z"  # a fork's own meta is stamped when it was made
    path.write_bytes(rollout(forked, *turn("t1", "first", "one")))
    first = _listed_row(listing, path)
    assert first == _as_cold(listing, path) and first.turns == 1 and first.fork_turn == 1
    appends = [
        rollout(event("task_started", turn_id="t2"), message("user", "second"), call("c1")),
        rollout(output("c1"), message("assistant", "two"), event("task_complete", turn_id="t2")),
        rollout(event("thread_rolled_back", num_turns=1), *turn("t3", "third", "three")),
    ]
    for appended in appends:
        reads.clear()
        _append(path, appended)
        row = _listed_row(listing, path)
        assert reads[0] == (len(appended), True)
        assert row == _as_cold(listing, path)
    assert row.turns == 3 and row.title == "first" and row.last_seq == path.read_bytes().count(b"\n")


def test_a_torn_last_line_is_read_again_once_whole(
    listing: SessionCatalog, reads: list[tuple[int, bool]]
) -> None:
    path = _one_turn_listed(listing)
    whole = rollout(*turn("t2", "second", "two"))
    half = len(whole) - 40
    _append(path, whole[:half])
    torn = _listed_row(listing, path)
    assert torn == _as_cold(listing, path) and torn.problems is not None and "torn-tail" in torn.problems
    reads.clear()
    _append(path, whole[half:])
    row = _listed_row(listing, path)
    last_line = len(whole) - whole.rindex(b"\n", 0, len(whole) - 1) - 1
    assert reads[0] == (last_line, True)  # from the start of the line that was torn
    assert row == _as_cold(listing, path) and row.turns == 2 and row.problems is None


def test_a_rollout_rewritten_in_place_or_replaced_is_read_whole(
    listing: SessionCatalog, reads: list[tuple[int, bool]]
) -> None:
    path = _one_turn_listed(listing)
    rewritten = rollout(meta(), *turn("t1", "other words", "one"), *turn("t2", "second", "two"))
    for replace in (False, True):
        reads.clear()
        if replace:
            fresh = path.with_suffix(".tmp")
            fresh.write_bytes(rewritten + rollout(*turn("t3", "third", "three")))
            os.replace(fresh, path)
        else:
            with open(path, "r+b") as handle:  # same file, same inode, longer
                handle.write(rewritten)
        row = _listed_row(listing, path)
        assert reads == [(path.stat().st_size, False)]
        assert row == _as_cold(listing, path) and row.title == "other words"


def test_a_rollout_rewritten_in_place_to_its_own_size_is_read_whole(
    listing: SessionCatalog, reads: list[tuple[int, bool]]
) -> None:
    # Its last bytes are as they were: only the size tells that nothing was appended.
    path = _rollout_path(listing)
    path.parent.mkdir(parents=True)
    rest = [*turn("t2", "second", "two"), *turn("t3", "third", "three")]
    path.write_bytes(rollout(meta(), *turn("t1", "first", "one"), *rest))
    listing.listing()
    reads.clear()
    with open(path, "r+b") as handle:
        handle.write(rollout(meta(), *turn("t1", "FIXED", "one"), *rest))
    row = _listed_row(listing, path)
    assert reads == [(path.stat().st_size, False)]
    assert row == _as_cold(listing, path) and row.title == "FIXED"


def test_a_line_past_the_cap_in_an_append_is_named_by_its_line_in_the_file(
    listing: SessionCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _one_turn_listed(listing)
    monkeypatch.setattr(jsonl_format, "MAX_LINE", 4096)
    _append(path, rollout(message("user", "x" * 5000)))
    row = _listed_row(listing, path)
    lines = path.read_bytes().count(b"\n")
    assert row == _as_cold(listing, path) and row.error is not None and f"line {lines} " in row.error


def test_a_replaced_rollout_with_a_line_past_the_cap_is_read_once(
    listing: SessionCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _one_turn_listed(listing)
    monkeypatch.setattr(jsonl_format, "MAX_LINE", 4096)
    read_bounded, starts = harness_sources.read_bounded, []

    def bounded(handle: Any) -> bytes:
        starts.append(handle.tell())
        return read_bounded(handle)

    monkeypatch.setattr(harness_sources, "read_bounded", bounded)
    fresh = path.with_suffix(".tmp")
    fresh.write_bytes(rollout(meta(), message("user", "x" * 5000)))
    os.replace(fresh, path)  # another file: its tally cannot be gone on from
    row = _listed_row(listing, path)
    assert starts == [0] and row.error is not None and "line 2 " in row.error


@pytest.fixture
def grows(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, bool]]:
    """What each listing's read of a transcript got: how many bytes, and whether it took them
    on from the graph it kept (False: a whole read, after the graph could not take them)."""
    seen: list[tuple[int, bool]] = []
    whole, grown = harness_sources.listed_transcript, harness_sources.grow

    def listed(data: bytes, name: str) -> Any:
        seen.append((len(data), False))
        return whole(data, name)

    def grew(state: Any, data: bytes) -> Any:
        taken = grown(state, data)
        seen.append((len(data), taken is not None))
        return taken

    monkeypatch.setattr(harness_sources, "listed_transcript", listed)
    monkeypatch.setattr(harness_sources, "grow", grew)
    return seen


def _transcript_path(catalog: SessionCatalog) -> Path:
    return catalog.roots[0] / CWD.replace("/", "-") / f"{SID}.jsonl"


def test_a_conversation_that_goes_on_is_taken_on_and_lists_as_the_whole_file(
    claude_listing: SessionCatalog, grows: list[tuple[int, bool]]
) -> None:
    path = _transcript_path(claude_listing)
    path.parent.mkdir(parents=True)
    path.write_bytes(jsonl(prompt("u1", None, "read the notes"), say("a1", "u1", "notes say alpha")))
    claude_listing.listing()
    appends = [
        jsonl(prompt("u2", "a1", "and again"), use("a2", "u2", "call-1")),
        jsonl(result("r1", "a2", "call-1"), say("a3", "r1", "second answer")),
        jsonl(rec("progress", "p1", "a3")),
        jsonl(rec("progress", "p2", "p1")),  # under a line below the conversation
        jsonl(
            rec("system", "s1", "a3", subtype="turn_duration"),
            rec("custom-title", "t", None, customTitle="Notes"),
        ),
    ]
    for appended in appends:
        grows.clear()
        with path.open("ab") as handle:
            handle.write(appended)
        row = _listed_row(claude_listing, path)
        assert grows == [(len(appended), True)]
        assert row == _as_cold(claude_listing, path)
    assert row.turns == 2 and row.title == "Notes"


def test_a_rewind_or_an_idle_transcript_is_read_whole(
    claude_listing: SessionCatalog, grows: list[tuple[int, bool]]
) -> None:
    path = _transcript_path(claude_listing)
    path.parent.mkdir(parents=True)
    first = jsonl(prompt("u1", None, "read the notes"), say("a1", "u1", "alpha"), prompt("u2", "a1", "more"))
    path.write_bytes(first + jsonl(say("a2", "u2", "beta")))
    claude_listing.listing()
    grows.clear()
    rewind = jsonl(prompt("u3", "a1", "instead this"), say("a3", "u3", "rewound"))
    with path.open("ab") as handle:
        handle.write(rewind)
    row = _listed_row(claude_listing, path)
    assert grows == [(len(rewind), False), (path.stat().st_size, False)]  # tried, then read whole
    assert row == _as_cold(claude_listing, path) and row.branches is not None
    os.utime(path, (OLD, OLD))  # idle: its graph is not kept
    with path.open("ab") as handle:
        handle.write(jsonl(prompt("u4", "a3", "go on")))
    os.utime(path, (OLD + 1, OLD + 1))
    _listed_row(claude_listing, path)
    grows.clear()
    with path.open("ab") as handle:
        handle.write(jsonl(say("a4", "u4", "gone on")))
    os.utime(path, (OLD + 2, OLD + 2))
    row = _listed_row(claude_listing, path)
    assert grows == [(path.stat().st_size, False)] and row == _as_cold(claude_listing, path)


def test_a_transcript_rewritten_in_place_to_its_own_size_is_read_whole(
    claude_listing: SessionCatalog,
) -> None:
    path = claude_listing.roots[0] / "-w" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True)
    rest = [say("a1", "u1", "alpha"), prompt("u2", "a1", "more"), say("a2", "u2", "beta")]
    path.write_bytes(jsonl(prompt("u1", None, "first"), *rest))
    claude_listing.listing()
    with open(path, "r+b") as handle:
        handle.write(jsonl(prompt("u1", None, "FIXED"), *rest))
    row = _listed_row(claude_listing, path)
    assert row == _as_cold(claude_listing, path) and row.title == "FIXED"


def test_at_most_a_few_transcript_graphs_are_kept(tmp_path: Path) -> None:
    """A graph costs more memory than its file: only the last `MAX_GRAPHS` stay, whatever else
    is kept beside them."""
    kept = Continuations()
    data = jsonl(prompt("u1", None, "read the notes"), say("a1", "u1", "alpha"))
    _, tally = listed_rollout(rollout(meta(), *turn("t1", "first", "one")))
    assert tally is not None
    kept.keep(LogRow(path="rollout", revision="r"), Tallied(tally, 0, 0, b""))
    for n in range(MAX_GRAPHS + 2):
        _, grown = listed_transcript(data, f"{n}.jsonl")
        assert grown is not None
        kept.keep(LogRow(path=f"{n}.jsonl", revision="r"), Tallied(grown, 0, 0, b""))
    assert kept.take("rollout") is not None
    held = [n for n in range(MAX_GRAPHS + 2) if kept.take(f"{n}.jsonl") is not None]
    assert held == list(range(2, MAX_GRAPHS + 2))


def test_an_append_that_makes_the_transcript_a_fork_is_read_whole() -> None:
    """A fork is dated and counted by all its copies, which a graph kept of a plain transcript
    did not count."""
    data = jsonl(prompt("u1", None, "read the notes"), say("a1", "u1", "alpha"))
    plain = jsonl(prompt("u2", "a1", "go on"))
    copied = jsonl({**prompt("u2", "a1", "go on"), "forkedFrom": {"sessionId": "parent"}})
    for appended, taken in ((plain, True), (copied, False)):
        _, grown = listed_transcript(data, f"{SID}.jsonl")
        assert grown is not None
        assert (grow(grown, appended) is not None) is taken


@pytest.mark.parametrize(
    ("before", "appended"),
    [
        (  # a node under a trailing line below a sidechain record on the conversation
            [side(prompt("s1", None, "task")), say("a1", "s1", "answer"), rec("progress", "p1", "s1")],
            [say("a2", "p1", "under the trailing line"), prompt("u2", "a1", "go on")],
        ),
        (  # a compaction joined to a line below a sidechain record on the conversation
            [
                prompt("u1", None, "/clear"),
                side(rec("user", "s1", "u1", [{"type": "tool_result", "tool_use_id": "cx", "content": "x"}])),
                rec("system", "y1", "s1", subtype="turn_duration"),
                prompt("u2", "y1", "go on"),
            ],
            [rec("system", "b1", None, subtype="compact_boundary", logicalParentUuid="y1")],
        ),
    ],
    ids=["trailing line", "compaction"],
)
def test_a_conversation_through_a_sidechain_record_grows_as_the_whole_file_reads(
    before: list[dict[str, Any]], appended: list[dict[str, Any]]
) -> None:
    data, name = jsonl(*before, *appended), f"{SID}.jsonl"
    _, grown = listed_transcript(jsonl(*before), name)
    taken = None if grown is None else grow(grown, jsonl(*appended))
    whole, _ = listed_transcript(data, name)
    assert taken is None or taken.sidechains == whole.sidechains


def test_a_result_for_a_call_of_an_abandoned_branch_is_read_whole() -> None:
    """Results are looked up file-wide: the branch's turn reads the call as answered now."""
    before = [
        prompt("u1", None, "first"),
        say("a1", "u1", "alpha"),
        prompt("u2", "a1", "side"),
        use("a2", "u2", "call-x"),
        prompt("u3", "a1", "main"),
        say("a3", "u3", "beta"),
    ]
    appended, name = [result("r1", "a3", "call-x")], f"{SID}.jsonl"
    _, grown = listed_transcript(jsonl(*before), name)
    assert grown is not None and grow(grown, jsonl(*appended)) is None
    listed_as_read(jsonl(*before, *appended), name)
