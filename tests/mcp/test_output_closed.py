"""A client that closes the server's output, or an output that cannot be written, ends `remem mcp`
as it ends every other command: no "internal error, a bug in remem", no traceback kept for a
report (the transport's failure came out of its task group wrapped, which `main` took for a bug)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from pathlib import Path

import pytest

from remem.daemon.home import Home

from .conftest import TIMEOUT_SECONDS, server_command, server_env

INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
).encode()


def no_bug_recorded(home: Home) -> bool:
    return not (home.root / "state" / "last-error.log").exists()


def test_a_closed_output_is_said(home: Home, project: Path) -> None:
    # `remem mcp >&-`: Python starts without a stdout at all.
    command = ["sh", "-c", 'exec "$@" >&-', "sh", *server_command(home, project, ("--no-daemon",))]
    ran = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, env=server_env(), timeout=60)
    assert ran.returncode == 1, ran.stderr
    assert ran.stderr.decode() == "remem: the output could not be written (standard output is closed)\n"
    assert no_bug_recorded(home)


@pytest.mark.parametrize("command", ["mcp", "lsp"])
@pytest.mark.parametrize("closed", ["<&-", ">&-"])
def test_a_server_started_without_its_input_or_output_says_so(
    home: Home, project: Path, command: str, closed: str
) -> None:
    """`remem mcp <&-` and `remem lsp` either way were "a bug in remem" (Python has no stream)."""
    args = [*server_command(home, None, ("--no-daemon",))[:-1], command]
    ran = subprocess.run(
        ["sh", "-c", f'exec "$@" {closed}', "sh", *args], capture_output=True, env=server_env(), timeout=60
    )
    client = "MCP client" if command == "mcp" else "editor"
    said = (
        f"remem: remem {command} reads its {client}'s messages on stdin, which is closed; "
        "start it with a pipe\n"
        if closed == "<&-"
        else "remem: the output could not be written (standard output is closed)\n"
    )
    assert (ran.returncode, ran.stderr.decode()) == (2 if closed == "<&-" else 1, said)
    assert no_bug_recorded(home)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
def test_output_to_a_full_disk_is_said(home: Home, project: Path) -> None:
    with open("/dev/full", "wb") as full:
        ran = subprocess.run(
            server_command(home, project, ("--no-daemon",)),
            input=INITIALIZE + b"\n",
            stdout=full,
            stderr=subprocess.PIPE,
            env=server_env(),
            timeout=60,
        )
    assert ran.returncode == 1, ran.stderr
    assert ran.stderr.decode() == "remem: the output could not be written (No space left on device)\n"
    assert no_bug_recorded(home)


def test_a_client_closing_the_output_mid_session_ends_it_as_a_closed_pipe(home: Home, project: Path) -> None:
    running = subprocess.Popen(
        server_command(home, project, ("--no-daemon",)),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(),
    )
    assert running.stdin is not None and running.stdout is not None and running.stderr is not None
    running.stdin.write(INITIALIZE + b"\n")
    running.stdin.flush()
    assert b'"id":1' in running.stdout.readline()
    running.stdout.close()
    # The client talks on: the answer to a ping meets the closed pipe, and the server, blocked
    # reading its input, ends at the next line. (Closing the input at once could end it first.)
    deadline = time.monotonic() + TIMEOUT_SECONDS
    while running.poll() is None and time.monotonic() < deadline:
        with contextlib.suppress(BrokenPipeError):
            running.stdin.write(b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n')
            running.stdin.flush()
        time.sleep(0.05)
    assert running.wait(TIMEOUT_SECONDS) == 141, running.stderr.read()  # 128 + SIGPIPE, as a shell reports it
    with contextlib.suppress(BrokenPipeError):
        running.stdin.close()
    assert running.stderr.read() == b""
    assert no_bug_recorded(home)
