"""Session commands on a full disk. A session index the file system refuses to write (a full
disk, a read-only mount) costs the listings their speed, never their answer: the index is
derived, so the process keeps it in memory and says so once, with or without the daemon. It was
"a bug in remem", exit 4, for every listing, tree and transcript until there was room; and so
was a rename or archive, which is now refused as UNWRITABLE, changing nothing.

The refusal is real, as in tests/daemon/test_memory_full_disk.py: the process writing the index
(the CLI run `--no-daemon`, or the daemon) runs under a file-size limit below the index's size,
so SQLite's writes fail (EFBIG) as they would with ENOSPC.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.sessions.index import LogRow, SessionIndex, Update
from remem.daemon.sessions.paths import Encoding
from tests.sessions.factory import SessionSpec, build_session, write_session
from tests.unwritable import unwritable

LIMIT = 4096  # below a SQLite page and its WAL frame header: no page of the index is written


def remem(home: Home, *args: str, full: bool = False, limit: int = LIMIT) -> subprocess.CompletedProcess[str]:
    """`remem ARGS`; `full`: under a file-size limit of `limit` bytes."""

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))  # Python ignores SIGXFSZ: EFBIG

    return subprocess.run(
        [sys.executable, "-m", "remem.daemon", "--home", str(home.root), *args],
        capture_output=True, text=True, timeout=120, preexec_fn=limited if full else None,
    )  # fmt: skip


def add_sessions(root: Path, seeds: range) -> set[str]:
    drafts = [build_session(SessionSpec(seed=seed, turns=3, cwd="/home/dev/p")) for seed in seeds]
    for draft in drafts:
        write_session(root, draft, encoding=Encoding.RAW)
    return {draft.header.id for draft in drafts}


def listed(done: subprocess.CompletedProcess[str]) -> set[str]:
    assert done.returncode == 0, done.stderr
    return {session["id"] for session in json.loads(done.stdout)["sessions"]}


@pytest.mark.parametrize("mode", ["no-daemon", "daemon"])
def test_listings_on_a_full_disk_are_answered_from_memory(
    home: Home, tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "root"
    ids = add_sessions(root, range(3))
    home.ensure_layout()
    home.settings_file.write_text(f"sessions:\n  roots: [{str(root)!r}]\n")  # `--root` is read in-process
    list_args = ("sessions", "list", "--json")
    assert listed(remem(home, "--no-daemon", *list_args)) == ids  # the index holds these three
    index = home.state / "index.sqlite"
    kept = index.read_bytes()
    if mode == "daemon":
        monkeypatch.delenv(NO_DAEMON_ENV)
        started = remem(home, "daemon", "start", full=True)
        assert started.returncode == 0, started.stderr
    full = mode == "no-daemon"  # the daemon's commands are not limited: the daemon is
    if full:  # the disk is full for the home's log too: a `--json` command's warning goes to stderr
        (home.state / "daemon.log").write_bytes(b"an older line\n" * (LIMIT // 14 + 1))

    ids |= add_sessions(root, range(3, 23))  # the index must grow to hold them
    first = remem(home, *list_args, full=full)
    assert listed(first) == ids
    ids |= add_sessions(root, range(23, 26))
    again = remem(home, *list_args, full=full)
    assert listed(again) == ids
    transcript = remem(home, "sessions", "show", min(ids), full=full)
    assert transcript.returncode == 0 and transcript.stdout.startswith("# "), transcript.stderr

    said = "cannot be written"
    if mode == "no-daemon":
        assert said in first.stderr and "in memory" in first.stderr, first.stderr
    else:
        assert said in (home.state / "daemon.log").read_text()
        assert remem(home, "daemon", "stop").returncode == 0
    assert index.read_bytes() == kept  # a refused write left the file as it was


def test_an_index_that_cannot_be_made_is_kept_in_memory(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    with unwritable(state):
        index = SessionIndex(state / "index.sqlite")
        index.put([Update(LogRow(path="/logs/a", revision="r1"))])
        index.mark_listed([("/logs", "dsh")])
        assert index.in_memory and list(index.rows()) == ["/logs/a"]
        assert index.listed_roots() == {("/logs", "dsh")}
        index.forget(["/logs/a"])
        assert index.rows() == {}
    assert os.listdir(state) == []


@pytest.mark.parametrize("change", [("rename", "A title"), ("archive",)])
def test_a_rename_or_archive_on_a_full_disk_is_refused_and_changes_nothing(
    home: Home, tmp_path: Path, change: tuple[str, ...]
) -> None:
    root = tmp_path / "root"
    [session] = add_sessions(root, range(1))
    args = ("--no-daemon", "sessions", "rename", session, "Before", "--root", str(root))
    assert remem(home, *args).returncode == 0
    meta = home.state / "session-meta.json"
    before = meta.read_bytes()
    command, *rest = change
    # Below the metadata file's size: only its write is refused (the index's too, kept in memory).
    refused = remem(
        home, "--no-daemon", "sessions", command, session, *rest, "--root", str(root), full=True, limit=64
    )
    assert refused.returncode == 1, refused.stderr
    assert f"remem: UNWRITABLE: {meta} could not be written (File too large)" in refused.stderr, (
        refused.stderr
    )
    assert meta.read_bytes() == before
    assert sorted(p.name for p in meta.parent.glob("session-meta*")) == [meta.name]  # no temp
