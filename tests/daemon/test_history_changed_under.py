"""The history changed on disk under a running daemon (a backup restored, packs deleted, the
folder reduced to an empty repository) is read as a fresh process reads it: damage is refused, a
missing entry is not answered, and a state found there is never told as a hand edit; a state
the daemon's own commit made is still that commit's (decision 0442)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home

pytestmark = pytest.mark.slow


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.delenv(NO_DAEMON_ENV)  # every command goes through the daemon
    (tmp_path / "project").mkdir()
    return str(tmp_path / "project")


def remem(home: Home, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, input=stdin)


def commit(home: Home, cwd: str, content: str) -> str:
    """Put the record `alpha` holding `content`, through the daemon; the revision it made."""
    shown = json.loads(remem(home, "memory", "show", "--cwd", cwd, "--json").stdout)
    record = {"name": "alpha", "description": "About alpha", "type": "project", "content": content}
    args = ["memory", "apply", "--cwd", cwd, "--expected-revision", shown["workspace"]["revision"]]
    done = remem(
        home, *args, "--changes", "-", "--json", stdin=json.dumps([{"action": "put", "record": record}])
    )
    assert done.returncode == 0, done.stderr
    log(home, cwd)  # the daemon writes the entry after its answer: a read waits until it is written
    return str(json.loads(done.stdout)["revision"])


def log(home: Home, cwd: str, *flags: str) -> subprocess.CompletedProcess[str]:
    return remem(home, *flags, "memory", "log", "--cwd", cwd, "--json")


def test_a_history_restored_from_a_backup_keeps_the_daemons_commits_its_own(home: Home, cwd: str) -> None:
    commit(home, cwd, "One.\n")
    backup = home.root / "history-backup"
    shutil.copytree(home.root / "history", backup)
    lost = commit(home, cwd, "Two.\n")
    shutil.rmtree(home.root / "history")
    backup.rename(home.root / "history")

    made = commit(home, cwd, "Three.\n")

    entries = json.loads(log(home, cwd).stdout)["entries"]
    assert [(e["actor"]["kind"], e["after"]) for e in entries[:2]] == [("cli", made), ("cli", lost)]
    assert len(entries) == 3


def test_packs_deleted_under_the_daemon_are_damage_as_for_a_fresh_process(home: Home, cwd: str) -> None:
    commit(home, cwd, "One.\n")
    commit(home, cwd, "Two.\n")
    for pack in (home.root / "history" / "objects" / "pack").iterdir():
        pack.unlink()

    daemon, fresh = log(home, cwd), log(home, cwd, "--no-daemon")

    assert fresh.returncode == 1 and "is damaged" in fresh.stdout, fresh.stdout
    assert (daemon.returncode, daemon.stdout) == (1, fresh.stdout)


def test_a_history_reduced_to_an_empty_repository_answers_no_entry_it_lost(home: Home, cwd: str) -> None:
    commit(home, cwd, "One.\n")
    commit(home, cwd, "Two.\n")
    gone = json.loads(log(home, cwd).stdout)["entries"][0]["id"]
    shutil.rmtree(home.root / "history")
    pygit2.init_repository(str(home.root / "history"), bare=True)

    shown = remem(home, "memory", "show", "--at", gone)
    assert shown.returncode == 1 and "names no history entry" in shown.stderr, shown.stdout
    entries = json.loads(log(home, cwd).stdout)["entries"]
    assert [e["actor"]["kind"] for e in entries] == ["recovered"], (
        "a state found anew, as a fresh process says"
    )
