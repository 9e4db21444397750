"""A home some commands cannot use stops only those: each test runs the real command line in a
process of its own.

A home whose name is not UTF-8 is refused (exit 2) by the commands that store its paths (the
index) or send them (the daemon's answers); the language server and the MCP server still start
and say why as their reason for being degraded, and `memory validate` never reads the home. A
folder at `state/daemon.log` is refused only where a client opens that log, for a daemon it
spawns: a daemon run in the foreground logs to its standard error, and a client of a daemon that
runs already opens no log.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths
from tests.cli_process import MCP_CONTEXT_CALL

NOT_UTF8 = os.fsdecode(b"caf\xe9")
REFUSED = (
    "remem's home {home} cannot be used: its name is not UTF-8, and remem keeps its paths as UTF-8 "
    "text; choose another home with --home or $REMEM_HOME"
)


def _through_daemon() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key != NO_DAEMON_ENV}


@pytest.fixture
def latin1_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / NOT_UTF8
    try:
        (tmp_path / f"{NOT_UTF8}-probe").mkdir()
    except OSError:
        pytest.skip("this file system refuses names that are not UTF-8")
    monkeypatch.setenv("REMEM_HOME", str(home))
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "no-dsh-home"))
    return home


def _refused(home: Path) -> str:
    return REFUSED.format(home=os.fsencode(home).decode(errors="backslashreplace"))


def _frame(message: dict[str, object]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_the_language_server_starts_and_says_why_it_has_no_daemon(latin1_home: Path, tmp_path: Path) -> None:
    """It exited 2 before answering initialize: the editor showed only a server that died."""
    server = subprocess.Popen(
        [sys.executable, "-m", "remem.daemon", "lsp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env=_through_daemon(),
    )
    assert server.stdin is not None and server.stderr is not None
    try:
        params = {"processId": None, "rootUri": None, "capabilities": {}}
        server.stdin.write(_frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}))
        server.stdin.write(_frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        server.stdin.flush()
        # Said as its reason for running without a daemon (none was spawned only to fail).
        said = server.stderr.readline().decode(errors="backslashreplace")
        assert said == f"no daemon: {_refused(latin1_home)}\n"
        server.stdin.write(_frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
        server.stdin.write(_frame({"jsonrpc": "2.0", "method": "exit"}))
        stdout, stderr = server.communicate(timeout=120)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    assert server.returncode == 0, stderr
    assert b'"id": 1, "jsonrpc": "2.0", "result": {"capabilities"' in stdout


def test_the_mcp_server_starts_and_tells_the_agent_the_home_is_in_the_way(
    latin1_home: Path, tmp_path: Path
) -> None:
    """It exited 2 before answering initialize: the agent had no memory tools at all."""
    done = subprocess.run(
        [sys.executable, "-m", "remem.daemon", "mcp", "--cwd", str(tmp_path)],
        input=MCP_CONTEXT_CALL,
        capture_output=True,
        text=True,
        errors="backslashreplace",
        cwd=tmp_path,
        env=_through_daemon(),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    answers = {answer["id"]: answer for answer in map(json.loads, done.stdout.splitlines())}
    assert answers[1]["result"]["serverInfo"]["name"] == "remem"
    tool = answers[2]["result"]
    assert tool["isError"] and "something in remem's home stands in the way" in tool["content"][0]["text"]
    assert _refused(latin1_home) in done.stderr  # the user's reason, in the server's log
    assert "failed to start" not in done.stderr and "Traceback" not in done.stderr


def test_memory_validate_never_reads_the_home(latin1_home: Path, tmp_path: Path) -> None:
    record = tmp_path / "GLOBAL.md"
    record.write_text("# Global\n\nPrefer uv.\n")
    done = subprocess.run(
        [sys.executable, "-m", "remem.daemon", "memory", "validate", str(record)],
        capture_output=True,
        text=True,
        errors="backslashreplace",
        timeout=120,
    )
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert done.stdout.endswith("1 file(s) checked, 0 problem(s)\n")
    assert not latin1_home.exists()


@pytest.mark.parametrize("command", [["memory", "show"], ["memory", "log"], ["sessions", "list"]])
def test_commands_that_keep_the_homes_paths_still_refuse_it(latin1_home: Path, command: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "remem.daemon", *command],
        capture_output=True,
        text=True,
        errors="backslashreplace",
        timeout=120,
    )
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"remem: {_refused(latin1_home)}\n")


def _remem(home: Home, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "remem.daemon", "--home", str(home.root), *args],
        capture_output=True,
        text=True,
        env=_through_daemon(),
        timeout=120,
    )


def test_a_folder_at_the_daemon_log_stops_only_the_spawn_that_opens_it(home: Home, tmp_path: Path) -> None:
    """`daemon run` exited 2 on it, though in the foreground it logs to its standard error, and
    so did every client of a daemon already running, which opens no log."""
    home.ensure_layout()
    paths = DaemonPaths(home)
    paths.log.mkdir()
    said = (
        f"remem: remem's home {home.root} cannot be used: {paths.log} is a folder, where remem keeps a file"
    )
    spawned = _remem(home, "memory", "show", "--cwd", str(tmp_path))  # no daemon runs: one is spawned
    assert (spawned.returncode, spawned.stderr) == (2, f"{said}; remove it\n")
    foreground = subprocess.Popen(
        [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "daemon", "run"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_through_daemon(),
    )
    try:
        deadline = time.monotonic() + 60
        while paths.read_status() is None and foreground.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert foreground.poll() is None, foreground.communicate()
        listed = _remem(home, "memory", "show", "--cwd", str(tmp_path), "--json")
        assert listed.returncode == 0, listed.stderr
        assert json.loads(listed.stdout)["global"] is not None
        stopped = _remem(home, "daemon", "stop")
        assert stopped.returncode == 0, stopped.stderr
        assert foreground.wait(timeout=60) == 0
    finally:
        if foreground.poll() is None:
            foreground.kill()
            foreground.wait()
