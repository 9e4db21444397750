"""A cold listing spread over worker processes lists and indexes what one process does, and a
worker that dies at either side of storing its share costs time, never a row."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.protocol.sessions import Listing, TurnSummary
from remem.daemon.sessions import cold_reads
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.cold_reads import ColdReads
from remem.daemon.sessions.index import LogRow
from remem.daemon.sessions.sources import Root
from tests.sessions.factory import build_family, write_session

from .cold_read_workers import children, until_a_worker_opened, workers
from .harness_roots import CWD, build_roots
from .logs import lines, raw_log, turn_events

SPREAD = ColdReads(processes=2, min_bytes=0, share_bytes=1)  # every log a share of its own
ALONE = ColdReads(processes=1)
Indexed = dict[str, tuple[LogRow, list[TurnSummary]]]


@pytest.fixture
def roots(tmp_path: Path) -> dict[str, Path]:
    """Every format, DSH forks among them, and a DSH log whose damage is an error row."""
    roots = build_roots(tmp_path / "roots")
    for draft in build_family(4, cwd=CWD).drafts:
        write_session(roots["dsh"], draft)
    raw_log(roots["dsh"], b"not json\n" + lines(turn_events()), session_id="broken")
    return roots


def listed(
    home: Path, roots: dict[str, Path], reads: ColdReads
) -> tuple[Listing, Indexed, list[tuple[int, int]]]:
    """The listing `reads` makes in a fresh home, what the index then holds, and the progress.

    The listing's process reads shares too, and takes back those of a worker still starting
    once none is left: the few logs here would all be read before a worker has started. So its
    first progress holds it until a worker has opened the index (and goes on to read the
    shares it was handed, and tells the listing it has started), or ended."""
    roots_in_formats = [Root(p, f) for f, p in roots.items()]  # type: ignore[arg-type]
    catalog = SessionCatalog(Home(home), roots_in_formats, 120, cold_reads=reads)
    told: list[tuple[int, int]] = []

    def progress(done: int, total: int) -> None:
        if not told and reads.processes > 1:
            until_a_worker_opened(catalog.index.path)
        told.append((done, total))

    listing = catalog.listing(progress=progress)
    assert not workers()  # every worker is gone with its listing
    index = {path: (row, catalog.index.turns(path)) for path, row in catalog.index.rows().items()}
    return listing, index, told


def test_a_spread_listing_lists_and_indexes_what_one_process_does(
    tmp_path: Path, roots: dict[str, Path], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "remem.daemon")
    alone, alone_index, _ = listed(tmp_path / "alone", roots, ALONE)
    assert not caplog.records  # too few bytes to spread by default, and one process here
    spread, spread_index, told = listed(tmp_path / "spread", roots, SPREAD)
    assert spread == alone
    assert [e.path for e in spread.errors] == [e.path for e in alone.errors]
    assert any("broken" in e.path for e in spread.errors)
    assert spread_index == alone_index
    assert told[-1] == (len(alone_index), len(alone_index))
    assert [done for done, _ in told] == sorted(done for done, _ in told)
    (message,) = [r.getMessage() for r in caplog.records]
    read_by_workers = int(message.split(", ")[1].split()[0])
    assert f"{len(alone_index)} logs indexed" in message and read_by_workers > 0


@pytest.mark.parametrize(
    "point",
    [f"sessions.cold-reads.{at}" for at in ("before-share", "after-share", "after-answer")],
)
def test_a_worker_dying_at_a_share_costs_time_never_a_row(
    tmp_path: Path,
    roots: dict[str, Path],
    point: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    alone, alone_index, _ = listed(tmp_path / "alone", roots, ALONE)
    # A worker slow to start (a loaded machine) would have its shares taken back and never read
    # one: the listing waits for the workers here, so each reaches its fault point.
    monkeypatch.setattr(cold_reads._Spread, "_take_back", lambda spread: False)
    # Armed in the workers this listing spawns: this process read the variable long ago.
    monkeypatch.setenv("REMEM_FAULTPOINT", point)
    spread, spread_index, _ = listed(tmp_path / "spread", roots, SPREAD)
    monkeypatch.delenv("REMEM_FAULTPOINT")
    assert any("a worker process ended early" in r.getMessage() for r in caplog.records)
    assert spread == alone
    assert spread_index == alone_index
    again, _, told = listed(tmp_path / "spread", roots, SPREAD)
    assert again == alone
    assert told == []  # every log was indexed: nothing is read again


def test_a_spread_listing_leaves_no_process_behind(tmp_path: Path, roots: dict[str, Path]) -> None:
    """Decision 0342: the workers are plain interpreters, reaped with the listing; no resource
    tracker (which `multiprocessing`'s spawn started, to live as long as the daemon) is left."""
    _, _, told = listed(tmp_path / "spread", roots, SPREAD)
    assert told and not workers()
    assert not children(b"resource_tracker")
