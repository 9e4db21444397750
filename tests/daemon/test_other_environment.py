"""A daemon started from another environment than the shell that asks it (decision 0372).

The daemon reads each harness's default folders from the environment it was started in. A
`remem sessions` command from a shell whose `CLAUDE_CONFIG_DIR` names another folder gets the
daemon's answer, one warning line on stderr naming both folders and what to do, and an empty
state naming the folders the daemon looked in; a shell of the same environment gets no warning,
and `daemon/hello` is answered with or without the client's folders.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.protocol.rpc import PROTOCOL_VERSION
from remem.daemon.server.runtime import DaemonPaths
from tests.sessions import claude_lines
from tests.test_cli_sessions import claude_code_root
from tests.waiting import SECONDS

from .helpers import calls, wait_until

pytestmark = pytest.mark.slow
WARNING = "remem: the daemon (pid "


def run(home: Home, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--home", str(home.root), *args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def configs(home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """Two Claude Code config folders: the daemon is started with `editor`'s (empty), the
    shell's `shell` holds a session."""
    monkeypatch.delenv(NO_DAEMON_ENV)
    editor, shell = tmp_path / "editor-claude", tmp_path / "shell-claude"
    (editor / "projects").mkdir(parents=True)
    claude_code_root(shell / "projects")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(editor))
    assert run(home, "daemon", "start")[0] == 0
    return editor, shell


def test_a_shell_naming_another_claude_folder_is_warned_once_and_gets_the_daemons_answer(
    home: Home, configs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    editor, shell = configs
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(shell))
    pid = DaemonPaths(home).read_status().pid  # type: ignore[union-attr]
    code, out, err = run(home, "sessions", "list", "--json")
    assert code == 0 and json.loads(out) == {"sessions": [], "errors": []}, "the daemon's answer, as JSON"
    [warning] = err.splitlines()
    assert warning == (
        f"{WARNING}{pid}) reads Claude Code sessions in {editor / 'projects'}, not in {shell / 'projects'}, "
        "which this shell's CLAUDE_CONFIG_DIR names; `remem daemon stop` lets the next command here start "
        f"it with this shell's environment, or name the folder in sessions.roots in {home.settings_file}"
    )
    # Without the daemon this shell's folder is read: the session the daemon's answer misses.
    alone = run(home, "--no-daemon", "sessions", "list", "--json")
    assert [s["id"] for s in json.loads(alone[1])["sessions"]] == [claude_lines.SID] and alone[2] == ""
    # The empty state names the folders the daemon looked in, not this shell's.
    code, out, err = run(home, "sessions", "tree", "--cwd", claude_lines.CWD)
    lines = err.splitlines()
    assert code == 0 and out == "" and lines[0].startswith(WARNING) and sum(WARNING in x for x in lines) == 1
    assert f"  {editor / 'projects'} (Claude Code's folder)" in lines
    assert not any(str(shell) in line for line in lines[1:]), err
    # Commands that read no sessions say nothing of it.
    assert WARNING not in run(home, "memory", "show", "--cwd", str(shell))[2]


def test_a_folder_named_in_the_settings_or_the_same_environment_gets_no_warning(
    home: Home, configs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    editor, shell = configs
    code, out, err = run(home, "sessions", "list", "--json")
    assert code == 0 and json.loads(out)["sessions"] == [] and err == "", "the daemon's own environment"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(shell))
    home.settings_file.write_text(f"daemon:\n  idle_minutes: 2\nsessions:\n  roots: [{str(shell)!r}]\n")
    code, out, err = run(home, "sessions", "list", "--json")
    assert code == 0 and err == "", "the daemon reads the folder, named in sessions.roots"
    wait_until(lambda: json.loads(run(home, "sessions", "list", "--json")[1])["sessions"] != [])


def test_hello_is_answered_with_or_without_the_clients_folders(home: Home) -> None:
    old, new, later = calls(
        home,
        [
            ("daemon/hello", {"protocol": 17, "version": "0.0.1-old"}),
            ("daemon/hello", {"protocol": PROTOCOL_VERSION, "version": "x", "harnessRoots": {"dsh": ["/d"]}}),
            ("daemon/hello", {"protocol": 99, "version": "9", "harnessRoots": {"other": []}, "later": 1}),
        ],
    )
    assert old["protocol"] == PROTOCOL_VERSION and old == new == later
    assert old["harnessRoots"]["claude-code"] == [str(Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects")]


# A daemon of protocol 17, whose hello refused a field it did not know and said no folders.
PROTOCOL_17_DAEMON = """
import os, sys
import remem.daemon.protocol.rpc as protocol
from remem.daemon.home import Home
from remem.daemon.server import process

class Hello(protocol._Strict):
    protocol: int
    version: str

class Said(Hello):
    pid: int

async def hello(self, params):
    return Said(protocol=17, version="0.0.1-old", pid=os.getpid())

protocol.METHODS["daemon/hello"] = protocol.Method("daemon/hello", Hello, Said)
process.Daemon._hello = hello
process.PROTOCOL_VERSION, process.APP_VERSION = 17, "0.0.1-old"
sys.exit(process.run(Home.resolve(sys.argv[1])))
"""


def test_a_daemon_that_refuses_the_folders_in_hello_is_still_replaced(home: Home) -> None:
    old = subprocess.Popen([sys.executable, "-c", PROTOCOL_17_DAEMON, str(home.root)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        paths = DaemonPaths(home)
        wait_until(lambda: paths.read_status() is not None, what="the old daemon's status file")
        refused = calls(home, [])  # connecting replaces it
        assert refused == [] and old.wait(timeout=SECONDS) == 0, "the old daemon was asked to stop"
        assert paths.read_status().version != "0.0.1-old"  # type: ignore[union-attr]
    finally:
        if old.poll() is None:
            old.kill()
            old.wait()
