"""A grown Codex rollout is relisted from where its last listing stopped (decision 0350): the
row is the one a cold listing of the whole file gives, and only the appended bytes are read."""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.home import Home
from remem.daemon.sessions import harness_sources
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.formats import jsonl as jsonl_format
from remem.daemon.sessions.index import LogRow
from remem.daemon.sessions.memo import ListingMemo
from remem.daemon.sessions.sources import Root

from .codex_lines import call, event, message, meta, output, rollout, turn

PARENT = "019c0000-0000-7000-8000-0000000000aa"
_homes = itertools.count()


@pytest.fixture(params=["kept catalog", "daemon memo"])
def listing(request: pytest.FixtureRequest, tmp_path: Path) -> SessionCatalog:
    """A catalog that lists the same root again: one kept by its caller, or the daemon's (one per
    request, sharing a memo that polls)."""
    root = tmp_path / "sessions"
    root.mkdir()
    if request.param == "kept catalog":
        return _catalog(tmp_path / "home", root)
    memo = ListingMemo(lambda: False)

    class PerRequest(SessionCatalog):
        def listing(self, *args: Any, **kwargs: Any) -> Any:
            return _catalog(tmp_path / "home", root, memo).listing(*args, **kwargs)

    return PerRequest(Home(tmp_path / "home"), [Root(root, "codex")], idle_seconds=120)


def _catalog(home: Path, root: Path, memo: ListingMemo | None = None) -> SessionCatalog:
    return SessionCatalog(Home(home), [Root(root, "codex")], idle_seconds=120, memo=memo)


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
    home = path.parents[4] / f"cold-{next(_homes)}"
    fresh = _catalog(home, catalog.roots[0])
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


def test_a_line_past_the_cap_in_an_append_is_named_by_its_line_in_the_file(
    listing: SessionCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _one_turn_listed(listing)
    monkeypatch.setattr(jsonl_format, "MAX_LINE", 4096)
    _append(path, rollout(message("user", "x" * 5000)))
    row = _listed_row(listing, path)
    lines = path.read_bytes().count(b"\n")
    assert row == _as_cold(listing, path) and row.error is not None and f"line {lines} " in row.error
