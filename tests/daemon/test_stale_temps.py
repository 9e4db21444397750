"""A file written in one step (temp, rename) by a writer under its lock: a crash before the rename
leaves the old file and a temp, which the file's next write removes, and no other file's
(decision 0411)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from remem.daemon import fsutil
from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.fsutil import is_temp_name, locked_temp_path_for, temp_path_for
from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths
from remem.daemon.sessions.metadata import SessionMetadata
from remem.daemon.sessions.published import PublishedLogs
from tests.sessions.factory import SessionSpec, build_session, write_session

from .helpers import crash_at, remem


def temps(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if is_temp_name(p.name))


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["no-daemon", "daemon"])
def test_a_rename_killed_before_its_replace_leaves_the_old_state_and_the_next_cleans_up(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    if mode == "daemon":
        monkeypatch.delenv(NO_DAEMON_ENV, raising=False)
    else:
        monkeypatch.setenv(NO_DAEMON_ENV, "1")
    root = tmp_path / "dsh-sessions"
    session = build_session(SessionSpec(seed=3, turns=2, cwd="/w"))
    write_session(root, session)
    # The root in the settings: a command given `--root` runs in its own process, never the daemon.
    home.settings_file.write_text(f"daemon:\n  idle_minutes: 2\nsessions:\n  roots: [{str(root)!r}]\n")
    rename = ("sessions", "rename", session.header.id, "--json")
    metadata = SessionMetadata(home)
    metadata.update(session.header.id, None, title="first")  # no daemon yet: the crash's starts
    crash_at("sessions.metadata.after-temp-write", home, monkeypatch, *rename[:3], "second", *rename[3:])
    assert metadata.get(session.header.id).title == "first", "the old state, whole"
    assert temps(home.state) != [], "the crash left its temp"
    done = remem(home, *rename[:3], "third", *rename[3:])
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["title"] == "third" == metadata.get(session.header.id).title
    assert temps(home.state) == []


def test_a_published_records_next_write_removes_only_its_own_stale_temps(home: Home, tmp_path: Path) -> None:
    published = PublishedLogs(home)
    child, other = tmp_path / "a" / "session.jsonl", tmp_path / "b" / "session.jsonl"
    published.record(child, "1:2:3:4:5")
    published.record(other, "1:2:3:4:5")
    left = locked_temp_path_for(published._record_path(child))
    in_flight = locked_temp_path_for(published._record_path(other))
    for temp in (left, in_flight):
        temp.write_text("1:2:3:4:")
    published.record(child, "1:2:3:4:6")
    assert published.untouched(str(child), "1:2:3:4:6")
    assert not left.exists() and in_flight.exists()


@pytest.mark.slow
def test_the_daemons_status_file_write_removes_its_stale_temps(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(NO_DAEMON_ENV, raising=False)
    status = DaemonPaths(home).status
    left = locked_temp_path_for(status)
    left.write_text('{"pid": 1')
    neighbour = temp_path_for(status.with_name("session-meta.json"))
    neighbour.write_text("{")
    started = remem(home, "daemon", "start")
    assert started.returncode == 0, started.stderr
    assert status.is_file() and not left.exists() and neighbour.exists()


def test_a_published_record_is_written_without_listing_its_folder(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`state/published/` gains a record per fork: a record's write removes the temp a crashed
    write of it left by its one name, and never pays a listing of the folder."""
    published = PublishedLogs(home)
    for n in range(20):
        published.record(tmp_path / f"{n}" / "session.jsonl", "1:2:3:4:5")
    child = tmp_path / "0" / "session.jsonl"
    left = locked_temp_path_for(published._record_path(child))
    left.write_text("1:2:")  # a write of it killed before its rename

    def listed(*args: object) -> object:
        raise AssertionError("the folder was listed")

    monkeypatch.setattr(os, "scandir", listed)
    monkeypatch.setattr(os, "listdir", listed)
    published.record(child, "1:2:3:4:6")
    monkeypatch.undo()
    assert published.untouched(str(child), "1:2:3:4:6")
    assert temps(published.folder) == []


def test_a_files_temps_are_found_with_its_prefix_worked_out_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`remove_stale_temps_of` asks the folder's longest name once per listing, not per entry."""
    target = tmp_path / "settings.yml"
    for n in range(50):
        (tmp_path / f"{n:032x}").write_text("")
    left = temp_path_for(target)
    left.write_text("")
    asked = []
    name_max = fsutil.name_max
    monkeypatch.setattr(fsutil, "name_max", lambda folder: asked.append(folder) or name_max(folder))
    assert fsutil.remove_stale_temps_of(target) == [left]
    assert len(asked) == 1
