"""What a newcomer typing `remem` in a terminal is told: a mistyped command's likely name, and
what a server started by hand is for, through the real `remem` process."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home

REMEM = [sys.executable, "-m", "remem.daemon"]


def test_a_mistyped_command_is_suggested_as_a_subcommand_is(home: Home) -> None:
    typo = subprocess.run([*REMEM, "sesions", "list"], capture_output=True, text=True, timeout=120)
    assert typo.returncode == 2, typo.stderr
    assert "Error: No such command 'sesions'. (Did you mean one of: 'sessions', 'settings'?)" in typo.stderr
    closest = subprocess.run([*REMEM, "ls"], capture_output=True, text=True, timeout=120)
    assert "No such command 'ls'. Did you mean 'lsp'?" in closest.stderr, closest.stderr
    as_json = subprocess.run(
        [*REMEM, "sesions", "list", "--json"], capture_output=True, text=True, timeout=120
    )
    assert json.loads(as_json.stdout)["error"]["message"].endswith(
        "Did you mean one of: 'sessions', 'settings'?)"
    )


def test_suggesting_a_command_imports_none_of_the_lazy_ones() -> None:
    """The lazy group exists so that a server starts without loading the whole command line."""
    script = (
        "import sys\n"
        "from remem.daemon.cli import cli\n"
        "try:\n"
        "    cli(['sesions'], prog_name='remem')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('remem.daemon.cli.')))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    loaded = done.stdout.strip()
    assert "Did you mean" in done.stderr, done.stderr
    for lazy in ("consolidate", "daemon", "eval", "mcp", "memory", "sessions"):
        assert f"'remem.daemon.cli.{lazy}'" not in loaded, loaded


@pytest.mark.parametrize(
    ("command", "said"),
    [
        (
            "mcp",
            "remem mcp is started by your agent harness over stdio; to wire it: "
            "`remem mcp --print-config` (Ctrl-C to quit)\n",
        ),
        (
            "lsp",
            "remem lsp is started by your editor over stdio: the Remem extension of VS Code starts it "
            "(Ctrl-C to quit)\n",
        ),
    ],
)
def test_a_server_typed_in_a_terminal_says_what_it_is_for(home: Home, command: str, said: str) -> None:
    """A stdio server waits for its client's messages: typed in a terminal it looked hung. Ctrl-D
    at the terminal ends its input, so it stops as it would when its client goes away."""
    env = {**os.environ, NO_DAEMON_ENV: "1"}
    controller, terminal = pty.openpty()
    try:
        with subprocess.Popen(
            [*REMEM, command], stdin=terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        ) as server:
            os.write(controller, b"\x04")  # Ctrl-D: end of input, as the terminal reads it
            _, stderr = server.communicate(timeout=120)
    finally:
        os.close(terminal)
        os.close(controller)
    assert stderr.decode().startswith(said), stderr
    piped = subprocess.run(
        [*REMEM, command], stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=120
    )
    assert "over stdio" not in piped.stderr, piped.stderr  # a harness or an editor is told nothing
