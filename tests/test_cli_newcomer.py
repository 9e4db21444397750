"""What a newcomer typing `remem` in a terminal is told: a mistyped command's likely name,
through the real `remem` process."""

from __future__ import annotations

import json
import subprocess
import sys

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
