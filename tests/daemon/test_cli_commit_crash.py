"""A `--no-daemon` memory commit killed between its commit and its history entry, while a daemon
watches memory, or followed at once by the next commit of its scope (through the daemon, or in
another process): the state it made is recorded as the CLI's, by the intent the commit wrote
first, never as a hand edit nor `recovered` (decision 0442)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV, Backend
from remem.daemon.faults import EXIT_CODE
from remem.daemon.home import Home
from remem.daemon.protocol.rpc import CommitWorkspaceParams
from remem.daemon.server.memory_methods import MemoryMethods
from remem.daemon.server.runtime import DaemonPaths

pytestmark = pytest.mark.slow


def remem(home: Home, *args: str, stdin: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), *args]
    environment = {**os.environ, **env}
    return subprocess.run(command, capture_output=True, text=True, timeout=60, input=stdin, env=environment)


def revision(home: Home, cwd: str, *flags: str) -> str:
    return str(
        json.loads(remem(home, *flags, "memory", "show", "--cwd", cwd, "--json").stdout)["workspace"][
            "revision"
        ]
    )


def put(content: str) -> list[dict[str, object]]:
    record = {"name": "alpha", "description": "About alpha", "type": "project", "content": content}
    return [{"action": "put", "record": record}]


def apply(home: Home, cwd: str, content: str, *flags: str, **env: str) -> subprocess.CompletedProcess[str]:
    args = ["memory", "apply", "--cwd", cwd, "--expected-revision", revision(home, cwd, *flags)]
    return remem(home, *flags, *args, "--changes", "-", stdin=json.dumps(put(content)), **env)


def actors(home: Home, cwd: str) -> list[tuple[str, str]]:
    entries = json.loads(remem(home, "memory", "log", "--cwd", cwd, "--json").stdout)["entries"]
    return [(e["actor"]["kind"], e["after"]) for e in entries]


@pytest.mark.parametrize("point", ["history.before-entry", "history.after-objects"])
def test_a_cli_commit_killed_before_its_entry_is_the_clis_for_the_watching_daemon(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    monkeypatch.delenv(NO_DAEMON_ENV)
    (tmp_path / "project").mkdir()
    cwd = str(tmp_path / "project")
    assert apply(home, cwd, "One.\n").returncode == 0  # the daemon starts, and watches memory

    crashed = apply(home, cwd, "Two.\n", "--no-daemon", REMEM_FAULTPOINT=point)
    assert crashed.returncode == EXIT_CODE, crashed.stderr

    made = json.loads(remem(home, "memory", "show", "--cwd", cwd, "--json").stdout)["workspace"]["revision"]
    entries = json.loads(remem(home, "memory", "log", "--cwd", cwd, "--json").stdout)["entries"]
    assert [(e["actor"]["kind"], e["after"]) for e in entries[:1]] == [("cli", made)]
    assert len(entries) == 2


def test_a_killed_cli_commit_followed_at_once_by_another_in_a_process_is_the_clis(
    home: Home, tmp_path: Path
) -> None:
    """No daemon watches: the next commit finds the state unrecorded, and the intent it wrote
    over its own names the killed commit."""
    (tmp_path / "project").mkdir()
    cwd = str(tmp_path / "project")
    assert apply(home, cwd, "One.\n").returncode == 0
    crashed = apply(home, cwd, "Two.\n", REMEM_FAULTPOINT="history.before-entry")
    assert crashed.returncode == EXIT_CODE, crashed.stderr
    made = revision(home, cwd)

    assert apply(home, cwd, "Three.\n").returncode == 0

    entries = actors(home, cwd)
    assert [kind for kind, _ in entries] == ["cli", "cli", "cli"]
    assert entries[1] == ("cli", made)


def test_a_killed_cli_commit_followed_at_once_by_one_through_the_daemon_is_the_clis(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon's commit comes before its watcher looked (held off here by stopping the daemon
    while the CLI commit is made and killed, as a commit within the watcher's debounce)."""
    monkeypatch.delenv(NO_DAEMON_ENV)
    (tmp_path / "project").mkdir()
    cwd = str(tmp_path / "project")
    assert apply(home, cwd, "One.\n").returncode == 0  # the daemon starts, and watches memory
    info = DaemonPaths(home, layout=False).read_status()
    assert info is not None
    api = Backend(home, use_daemon=True).api()

    os.kill(info.pid, signal.SIGSTOP)
    try:
        crashed = apply(home, cwd, "Two.\n", "--no-daemon", REMEM_FAULTPOINT="history.before-entry")
        assert crashed.returncode == EXIT_CODE, crashed.stderr
        made = revision(home, cwd, "--no-daemon")
        params = CommitWorkspaceParams(cwd=cwd, expectedRevision=made, changes=put("Three.\n"))
        answers = []
        committing = threading.Thread(target=lambda: answers.append(api.commit_workspace(params)))
        committing.start()
    finally:
        os.kill(info.pid, signal.SIGCONT)
    committing.join(60)

    assert [a.status for a in answers] == ["committed"]
    assert actors(home, cwd)[:2] == [("cli", answers[0].revision), ("cli", made)]


def test_a_killed_cli_commit_followed_by_one_of_the_daemons_handlers_before_any_look_is_the_clis(
    home: Home, tmp_path: Path
) -> None:
    """As the test above, with the daemon's own memory handlers (watching, past their check at
    start) and no watcher at all: their commit surely comes before any look."""
    (tmp_path / "project").mkdir()
    cwd = str(tmp_path / "project")
    assert apply(home, cwd, "One.\n").returncode == 0
    methods = MemoryMethods(home, watch=True)
    try:
        asyncio.run(methods.reconcile_history())
        crashed = apply(home, cwd, "Two.\n", REMEM_FAULTPOINT="history.before-entry")
        assert crashed.returncode == EXIT_CODE, crashed.stderr
        made = revision(home, cwd)
        params = CommitWorkspaceParams(cwd=cwd, expectedRevision=made, changes=put("Three.\n"))
        assert asyncio.run(methods.commit_workspace(params)).status == "committed"
        methods.store.history.flush()
    finally:
        assert methods.cache is not None
        methods.cache.close()

    assert [kind for kind, _ in actors(home, cwd)] == ["cli", "cli", "cli"]
    assert actors(home, cwd)[1] == ("cli", made)
