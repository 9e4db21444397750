"""A fork journal entry that is no regular file (a FIFO, a socket, a symbolic link) cannot be read,
and refuses its own operation id only: it is never opened in a way that waits (recovery reads
every marked entry, so a FIFO read the plain way held every fork for good) nor followed out of
the home. A marker that is a link is never written through."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.forks.journal import ForkJournal, operation_key
from remem.daemon.forks.service import ForkService
from remem.daemon.home import Home
from remem.daemon.protocol.forks import ForkRequest
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.errors import OperationError
from tests.fifo import released
from tests.sessions.factory import SessionSpec, build_session, write_session

CWD = "/home/dev/projects/demo"
TIMEOUT = 30  # seconds: the suite's bound, should a reader still wait on a FIFO

WHAT = {
    "fifo": "(a FIFO, not a regular file)",
    "socket": "(a socket, not a regular file)",
    "link": "(a symbolic link, never followed)",
}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    write_session(root, build_session(SessionSpec(seed=7, turns=3, cwd=CWD)))
    return root


def fork(catalog: SessionCatalog, source: str, operation: str) -> bool:
    return ForkService(catalog).fork(ForkRequest(source=source, operationId=operation, atSeq=0)).created


@pytest.mark.timeout(TIMEOUT)
@pytest.mark.parametrize("shape", sorted(WHAT))
def test_an_entry_that_is_no_file_refuses_its_operation_only(
    home: Home, root: Path, tmp_path: Path, shape: str
) -> None:
    catalog = SessionCatalog(home, [root], idle_seconds=120)
    source = catalog.listing().sessions[0].id
    journal = ForkJournal(home)
    journal.recover()  # the pending folder exists
    entry = journal.folder / f"{operation_key('stuck')}.json"
    outside = tmp_path / "outside.json"
    if shape == "link":  # a valid entry of this very operation, moved out of the home
        assert fork(catalog, source, "stuck")
        entry.rename(outside)
        entry.symlink_to(outside)
    else:
        os.mknod(entry, 0o600 | (stat.S_IFIFO if shape == "fifo" else stat.S_IFSOCK))
    (journal.pending / operation_key("stuck")).touch()  # as a fork cut short leaves it
    kept = outside.read_bytes() if shape == "link" else None

    with released(entry) as fifo:
        journal.recover()  # what the daemon runs at start, and every fork first
        assert fork(catalog, source, "fine"), "every other operation forks"
        with pytest.raises(OperationError) as refused:
            fork(catalog, source, "stuck")
        result = CliRunner().invoke(
            cli,
            ["--home", str(home.root), "sessions", "fork", source, "--at", "0", "--op-id", "other"]
            + ["--root", str(root), "--json"],
        )
    assert not fifo.waited, "it opened the FIFO and waited on it for a writer"

    assert refused.value.code == "INVALID"
    assert refused.value.message.startswith(f"{entry} is not a readable fork journal entry {WHAT[shape]}, ")
    assert "delete the entry" in refused.value.message
    assert result.exit_code == 0 and json.loads(result.stdout)["created"], result.output
    assert os.path.lexists(journal.pending / operation_key("stuck")), "it stays marked until mended"
    if shape == "link":
        assert outside.read_bytes() == kept and entry.is_symlink(), "the link is left as it is"


@pytest.mark.timeout(TIMEOUT)
def test_a_marker_that_is_a_dangling_link_is_never_written_through(
    home: Home, root: Path, tmp_path: Path
) -> None:
    catalog = SessionCatalog(home, [root], idle_seconds=120)
    source = catalog.listing().sessions[0].id
    journal = ForkJournal(home)
    journal.recover()  # the pending folder exists
    outside = tmp_path / "elsewhere" / "marker"
    outside.parent.mkdir()
    (journal.pending / operation_key("linked")).symlink_to(outside)
    assert fork(catalog, source, "linked")
    assert not os.path.lexists(outside), "nothing is made out of the home"
    assert not os.path.lexists(journal.pending / operation_key("linked")), "committed: unmarked"
