"""Ctrl-C at the terminal a stdio server was typed in ends it at once, through the real `remem`
process holding a real pty as its controlling terminal (so the line discipline sends SIGINT)."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import subprocess
import sys
import termios

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home

REMEM = [sys.executable, "-m", "remem.daemon"]


def _own_terminal() -> None:
    """In the child: a session of its own whose controlling terminal is its stdin, the pty."""
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    attributes = termios.tcgetattr(0)
    attributes[0] &= ~termios.ICRNL  # a header's `\r\n` reaches the server as sent
    attributes[3] &= ~termios.ECHO
    termios.tcsetattr(0, termios.TCSANOW, attributes)


def _initialize(controller: int, server: subprocess.Popen[bytes], command: str) -> None:
    """Ask the server to initialize and read its answer: it is then serving, its stdin read by
    the thread Ctrl-C met (before that, a Ctrl-C interrupts the start as any command)."""
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": _PARAMS[command]}
    body = json.dumps(request).encode()
    if command == "lsp":
        # `\x04` hands the terminal's line over without a newline, which would begin a header.
        os.write(controller, b"Content-Length: %d\r\n\r\n%s\x04" % (len(body), body))
    else:
        os.write(controller, body + b"\n")
    assert server.stdout is not None
    answer = server.stdout.read1(65536)  # the answer's first bytes: it is serving
    assert b'"id"' in answer or b"Content-Length" in answer, answer


_PARAMS = {
    "lsp": {"processId": None, "rootUri": None, "capabilities": {}},
    "mcp": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}


@pytest.mark.parametrize("command", ["mcp", "lsp"])
def test_ctrl_c_in_a_terminal_ends_the_server_at_once(home: Home, command: str) -> None:
    """The servers read stdin in a thread: the MCP server said `remem: interrupted` and then
    waited for Enter, and the language server took no notice of Ctrl-C at all."""
    controller, terminal = pty.openpty()
    try:
        with subprocess.Popen(
            [*REMEM, command],
            stdin=terminal,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, NO_DAEMON_ENV: "1"},
            preexec_fn=_own_terminal,
        ) as server:
            assert server.stderr is not None
            hint = server.stderr.readline().decode()  # said once Ctrl-C is handled
            assert hint.endswith("(Ctrl-C to quit)\n"), hint
            _initialize(controller, server, command)
            os.write(controller, b"\x03")  # Ctrl-C, as typed at the terminal
            try:
                _, stderr = server.communicate(timeout=60)  # guards a hang, measures nothing
            except subprocess.TimeoutExpired:
                server.kill()
                server.communicate()
                pytest.fail(f"remem {command} still ran after Ctrl-C")
    finally:
        os.close(terminal)
        os.close(controller)
    assert server.returncode == 130, stderr
    assert stderr.decode() == "remem: interrupted\n"
