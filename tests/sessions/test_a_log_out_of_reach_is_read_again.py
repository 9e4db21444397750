"""A DSH log a listing could not read for where it is (its root or a folder on its way renamed
away and back, an NFS blip: an `OSError`) is reported by that listing and read again by the
next: the error is never stored as the log's row, which the index would serve while the file's
`stat` is unchanged, through restarts (decision 0394). A log whose content is at fault keeps its
error, a fact of its revision.

Each test moves the root away at a fixed step, with no timing race: at the first progress the
listing reports (the first log read, the others not yet), and back once the listing is done.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.protocol.sessions import Listing
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.cold_reads import ColdReads
from remem.daemon.sessions.errors import SessionLogError
from remem.daemon.sessions.memo import ListingMemo
from remem.daemon.sessions.paths import Encoding
from remem.daemon.sessions.reader import skim_session, stat_revision
from remem.daemon.sessions.sources import Root
from tests.sessions.factory import SessionSpec, build_session, write_session

from .cold_read_workers import until_a_worker_opened, workers
from .logs import CWD, lines, place, raw_log, turn_events

ALONE = ColdReads(processes=1)
SPREAD = ColdReads(processes=2, min_bytes=0, share_bytes=1)  # every log a share of its own
LOGS = 6


def _root(tmp_path: Path) -> tuple[Path, list[str]]:
    """A DSH root of `LOGS` sessions, and their ids."""
    root = tmp_path / "r3"
    ids = [f"session-{n}" for n in range(LOGS)]
    for n, session_id in enumerate(ids):
        write_session(root, build_session(SessionSpec(seed=n, turns=2, cwd=CWD), session_id=session_id))
    return root, ids


def _catalog(
    home: Home, root: Path, reads: ColdReads = ALONE, memo: ListingMemo | None = None
) -> SessionCatalog:
    return SessionCatalog(home, [Root(root, "dsh")], 120, memo=memo, cold_reads=reads)


def _moved_away_while_listed(catalog: SessionCatalog, root: Path, spread: bool = False) -> Listing:
    """`catalog`'s listing, its root renamed away at its first progress and back after it."""
    aside = root.with_name(root.name + ".tmp")

    def progress(done: int, total: int) -> None:
        if spread and not aside.exists():
            until_a_worker_opened(catalog.index.path)  # a worker reads some of the rest
        if not aside.exists():
            root.rename(aside)

    try:
        return catalog.listing(progress=progress)
    finally:
        if aside.exists():
            aside.rename(root)


def _listed(listing: Listing) -> tuple[list[str], list[str]]:
    return sorted(s.id for s in listing.sessions), [f"{e.path}: {e.message}" for e in listing.errors]


def _not_there(listing: Listing, root: Path) -> None:
    """The listing read some of the root's logs before it went and reports each other as an
    error of its path, saying the root was not there."""
    assert listing.sessions, "the first log is read before the root goes"
    assert listing.errors
    for error in listing.errors:
        assert error.path.startswith(f"{root}/"), error
        assert "cannot read the log" in error.message and "No such file or directory" in error.message


@pytest.mark.parametrize("reads", [ALONE, SPREAD], ids=["one process", "spread over workers"])
def test_a_root_renamed_away_and_back_during_a_cold_listing_lists_whole_the_next_time(
    home: Home, tmp_path: Path, reads: ColdReads
) -> None:
    root, ids = _root(tmp_path)
    listing = _moved_away_while_listed(_catalog(home, root, reads), root, spread=reads is SPREAD)
    assert not workers()
    _not_there(listing, root)
    # Nothing of that moment is a row the index serves: an error row is of no revision.
    for path, row in _catalog(home, root).index.rows().items():
        assert row.error is None or row.revision == "", (path, row)
    # The next listing, by the same process or a fresh one on the same index, reads them again.
    assert _listed(_catalog(home, root, reads).listing()) == (ids, [])
    assert _listed(_catalog(home, root).listing()) == (ids, [])
    assert all(row.error is None for row in _catalog(home, root).index.rows().values())


def test_a_root_renamed_away_and_back_while_grown_logs_are_continued_lists_them_whole_next(
    home: Home, tmp_path: Path
) -> None:
    root = tmp_path / "r3"
    first = turn_events()
    paths = [raw_log(root, lines(first), session_id=f"s{n}") for n in range(3)]
    catalog = _catalog(home, root)
    assert _listed(catalog.listing()) == (["s0", "s1", "s2"], [])
    for path in paths:  # each grown on its inode: continued from its resume point
        with path.open("ab") as log:
            log.write(lines(turn_events(first_seq=len(first), turn=2)))
    listing = _moved_away_while_listed(catalog, root)
    _not_there(listing, root)
    again = catalog.listing()
    assert _listed(again) == (["s0", "s1", "s2"], [])
    assert [s.turns for s in again.sessions] == [2, 2, 2]
    fresh = _catalog(home, root).listing()
    assert _listed(fresh) == (["s0", "s1", "s2"], []) and [s.turns for s in fresh.sessions] == [2, 2, 2]


def test_the_daemons_remembered_listing_reads_them_again_with_no_mark(home: Home, tmp_path: Path) -> None:
    """The daemon keeps a listing's answer while its watcher marks nothing: an NFS blip, or a
    rename of a folder above what it watches, marks nothing, and the answer that reported the
    blip must not be served again."""
    root, ids = _root(tmp_path)
    memo = ListingMemo(lambda: True)  # the watcher's marks are trusted, and none comes
    _not_there(_moved_away_while_listed(_catalog(home, root, memo=memo), root), root)
    assert _listed(_catalog(home, root, memo=memo).listing()) == (ids, [])
    assert _listed(_catalog(home, root, memo=memo).listing()) == (ids, [])


def test_a_folder_swapped_for_a_link_between_the_scan_and_the_read_is_refused_then_read_again(
    home: Home, tmp_path: Path
) -> None:
    root, ids = _root(tmp_path)
    (project,) = [p for p in root.iterdir() if p.is_dir()]
    aside = project.with_name(project.name + ".real")
    catalog = _catalog(home, root)

    def progress(done: int, total: int) -> None:
        if not aside.exists():
            project.rename(aside)
            project.symlink_to(aside, target_is_directory=True)

    listing = catalog.listing(progress=progress)
    project.unlink()
    aside.rename(project)
    assert len(listing.errors) == LOGS - 1  # the first log was read before the swap
    assert all(f"{project} is a symbolic link on the way" in e.message for e in listing.errors)
    assert _listed(catalog.listing()) == (ids, [])
    assert _listed(_catalog(home, root).listing()) == (ids, [])


def test_a_log_whose_content_is_at_fault_keeps_its_error_for_its_revision(home: Home, tmp_path: Path) -> None:
    root, ids = _root(tmp_path)
    broken = place(root, "broken", b"no zstd frame", Encoding.ZSTD)  # the root's logs are zstd
    listing = _moved_away_while_listed(_catalog(home, root), root)
    assert listing.errors  # the broken log is read before or after the root went
    again = _catalog(home, root).listing()
    (error,) = again.errors
    assert error.path == str(broken) and "cannot read the log" not in error.message
    assert sorted(s.id for s in again.sessions) == ids
    row = _catalog(home, root).index.row(str(broken))
    assert row is not None and row.error == error.message
    assert row.revision == stat_revision(broken.stat())  # stored: served while the file is unchanged
    assert _listed(_catalog(home, root).listing()) == (ids, [f"{broken}: {error.message}"])


def test_the_reader_tells_a_log_out_of_reach_from_a_damaged_one(tmp_path: Path) -> None:
    from remem.daemon.sessions.reader import LogNotReached  # here: the others run on any reader

    root, _ = _root(tmp_path)
    path = next(root.rglob("session.jsonl*"))
    root.rename(tmp_path / "away")
    read: Callable[[], object] = lambda: skim_session(path, frozenset())  # noqa: E731
    with pytest.raises(LogNotReached, match="No such file or directory"):
        read()
    (tmp_path / "away").rename(root)
    damaged = raw_log(root, b"not json\n" + lines(turn_events()), session_id="damaged")
    with pytest.raises(SessionLogError) as refused:
        skim_session(damaged, frozenset())
    assert not isinstance(refused.value, LogNotReached)
