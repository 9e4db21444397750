"""A `--no-daemon` memory commit killed between its commit and its history entry, while a daemon
watches memory: the state it made is recorded as the CLI's, by the intent the commit wrote
first, never as a hand edit (decision 0442)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.faults import EXIT_CODE
from remem.daemon.home import Home

pytestmark = pytest.mark.slow


def remem(home: Home, *args: str, stdin: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), *args]
    environment = {**os.environ, **env}
    return subprocess.run(command, capture_output=True, text=True, timeout=60, input=stdin, env=environment)


def apply(home: Home, cwd: str, content: str, *flags: str, **env: str) -> subprocess.CompletedProcess[str]:
    shown = json.loads(remem(home, "memory", "show", "--cwd", cwd, "--json").stdout)
    record = {"name": "alpha", "description": "About alpha", "type": "project", "content": content}
    args = ["memory", "apply", "--cwd", cwd, "--expected-revision", shown["workspace"]["revision"]]
    changes = json.dumps([{"action": "put", "record": record}])
    return remem(home, *flags, *args, "--changes", "-", stdin=changes, **env)


@pytest.mark.parametrize("point", ["history.before-entry", "history.after-objects", "history.after-ref"])
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
