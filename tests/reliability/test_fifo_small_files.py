"""A FIFO where remem reads one of its small files (session metadata, DSH's archive list,
`credentials.yml`, the last valid settings, the daemon's status file, a published fork's
record) is never opened in a way that waits: `Path.read_bytes()` blocked there in open() for a
writer, holding `remem sessions list` (and each daemon thread that listed) for good. Each is
refused as the code refuses an unreadable file: a listing error, no DSH archive, a RouteError,
the defaults, no status, a lost record. The FIFOs are let through after a few seconds
(`tests.fifo.released`), so that code that waits on them fails here rather than hanging."""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.consolidation.route import RouteError, read_credentials
from remem.daemon.home import Home
from remem.daemon.server.running_settings import RunningSettings
from remem.daemon.server.runtime import DaemonPaths
from remem.daemon.sessions.errors import OperationError
from remem.daemon.sessions.metadata import SessionMetadata, dsh_archived, dsh_registry
from remem.daemon.sessions.published import PublishedLogs
from remem.daemon.settings import Settings
from tests.daemon.helpers import remem
from tests.fifo import released
from tests.waiting import wait_until

TIMEOUT = 30  # seconds: the suite's bound, should a reader still wait on a FIFO
FIFO = "a FIFO, not a regular file"
WAITED = "it opened the FIFO and waited on it for a writer"


def fifo_at(path: Path) -> Path:
    """A FIFO at `path`, in place of what is there, its folders made."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    os.mkfifo(path, 0o600)
    return path


def listed(home: Home) -> dict:  # type: ignore[type-arg]
    """`remem sessions list --json`, in-process and without the daemon."""
    result = CliRunner().invoke(cli, ["--home", str(home.root), "sessions", "list", "--json"])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


@pytest.mark.timeout(TIMEOUT)
def test_a_fifo_at_the_session_metadata_is_a_listing_error_and_refuses_changes(home: Home) -> None:
    meta = SessionMetadata(home.ensure_layout())
    fifo_at(meta.path)
    with released(meta.path) as fifo:
        metas, unreadable = meta.read()
        listing = listed(home)
        with pytest.raises(OperationError) as refused:
            meta.update("s-1", None, title="New title")
    assert not fifo.waited, WAITED
    said = (
        f"{meta.path} cannot be read ({FIFO}): the titles and archive states set in remem are not "
        "shown, and none can be changed until it is fixed or deleted (deleting it forgets them)"
    )
    assert (metas, unreadable) == ({}, said)
    assert {"path": str(meta.path), "message": said, "kind": "metadata"} in listing["errors"], listing
    assert refused.value.code == "INVALID" and refused.value.message == said
    assert stat.S_ISFIFO(os.lstat(meta.path).st_mode), "never overwritten"


@pytest.mark.timeout(TIMEOUT)
@pytest.mark.parametrize("linked", [False, True], ids=["fifo", "link-to-fifo"])
def test_a_fifo_at_the_dsh_archive_list_archives_nothing(home: Home, tmp_path: Path, linked: bool) -> None:
    registry = dsh_registry()
    pipe = fifo_at(tmp_path / "dotfiles" / "workspace.json" if linked else registry)
    if linked:  # DSH's list is read through a link: one to a FIFO is waited on no more
        registry.parent.mkdir(parents=True)
        registry.symlink_to(pipe)
    with released(pipe) as fifo:
        archived = dsh_archived()
        listing = listed(home)
    assert not fifo.waited, WAITED
    assert archived == frozenset() and listing["sessions"] == [], listing


@pytest.mark.timeout(TIMEOUT)
@pytest.mark.parametrize("linked", [False, True], ids=["fifo", "link-to-fifo"])
def test_a_fifo_at_credentials_is_a_route_error_naming_it(home: Home, tmp_path: Path, linked: bool) -> None:
    path = home.ensure_layout().credentials_file
    pipe = fifo_at(tmp_path / "dotfiles" / "credentials.yml" if linked else path)  # 0600: private
    if linked:  # the user's dotfile, read through its link (decision 0375)
        path.symlink_to(pipe)
    with released(pipe) as fifo, pytest.raises(RouteError) as refused:
        read_credentials(home)
    assert not fifo.waited, WAITED
    assert str(refused.value) == (
        f"{path} is {FIFO}: replace it with a regular file holding "
        "providers: {name: {api_key: ...}} (mode 0600), or remove it"
    )


@pytest.mark.timeout(TIMEOUT)
def test_a_fifo_at_the_last_valid_settings_starts_on_the_defaults(home: Home) -> None:
    copy = fifo_at(home.ensure_layout().state / "settings.valid.json")
    home.settings_file.write_text("daemon:\n  idle: 3\n")  # invalid: the last valid is read
    with released(copy) as fifo:
        running = RunningSettings(home)
    assert not fifo.waited, WAITED
    assert running.current == Settings() and running.problems, "the defaults, the file's problems said"


@pytest.mark.timeout(TIMEOUT)
def test_a_fifo_at_the_status_file_is_no_status(home: Home) -> None:
    paths = DaemonPaths(home)
    fifo_at(paths.status)
    with released(paths.status) as fifo:
        info = paths.read_status()
    assert not fifo.waited, WAITED
    assert info is None


@pytest.mark.timeout(TIMEOUT)
@pytest.mark.parametrize("shape", ["fifo", "folder"])
def test_a_published_record_that_is_no_file_is_a_lost_record(home: Home, tmp_path: Path, shape: str) -> None:
    published = PublishedLogs(home.ensure_layout())
    child = tmp_path / "child.jsonl"
    child.write_text("{}\n")
    published.record(child, "rev-1")
    record = next(published.folder.iterdir())
    if shape == "fifo":
        fifo_at(record)
    else:  # read_bytes raised IsADirectoryError into the listing
        record.unlink()
        record.mkdir()
    with released(record) as fifo:
        untouched = published.untouched(str(child), "rev-1")
    assert not fifo.waited, WAITED
    assert untouched is False, "as if lost: the child only looks live for a while"


@pytest.fixture
def daemon(home: Home, monkeypatch: pytest.MonkeyPatch) -> Iterator[DaemonPaths]:
    """A daemon of `home`, stopped however the test ends: a FIFO left at its status file first
    lets through every reader waiting on it (opened for writing without waiting, then removed)."""
    monkeypatch.delenv(NO_DAEMON_ENV)
    started = remem(home, "daemon", "start", "--json")
    assert started.returncode == 0, started.stderr
    paths = DaemonPaths(home)
    yield paths
    if paths.status.exists() and stat.S_ISFIFO(os.lstat(paths.status).st_mode):
        fd = os.open(paths.status, os.O_RDWR | os.O_NONBLOCK)
        paths.status.unlink()
        os.close(fd)
    remem(home, "daemon", "stop")


@pytest.mark.slow
@pytest.mark.timeout(2 * TIMEOUT)
def test_a_running_daemon_rewrites_a_fifo_put_at_its_status_file(home: Home, daemon: DaemonPaths) -> None:
    info = daemon.read_status()
    assert info is not None
    fifo_at(daemon.status)
    # Not through `released`: the file rewritten, its helper would open that and count a waiter.
    wait_until(lambda: daemon.status.is_file(), 10, what="the status keeper to rewrite the file")
    assert daemon.read_status() == info
    log = (home.state / "daemon.log").read_text()
    assert f"{daemon.status} was replaced by {FIFO}; rewriting it" in log, log
    stopped = remem(home, "daemon", "stop", "--json")
    assert json.loads(stopped.stdout) == {"stopped": True}, stopped.stderr
    wait_until(lambda: not daemon.running(), what="the daemon to exit")


@pytest.mark.slow
@pytest.mark.timeout(2 * TIMEOUT)
def test_the_daemon_lists_with_a_fifo_at_the_session_metadata(home: Home, daemon: DaemonPaths) -> None:
    meta = fifo_at(home.state / "session-meta.json")
    with released(meta) as fifo:
        started = time.monotonic()
        listing = remem(home, "sessions", "list", "--json")
        took = time.monotonic() - started
    assert not fifo.waited, f"{WAITED} (the listing took {took:.1f} s)"
    assert listing.returncode == 0, listing.stderr
    [error] = [e for e in json.loads(listing.stdout)["errors"] if e["path"] == str(meta)]
    assert f"cannot be read ({FIFO})" in error["message"]
    assert remem(home, "daemon", "status").returncode == 0, "the daemon still answers"
