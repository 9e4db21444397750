"""What `remem mcp --print-config` (and so scripts/demo) prints says what docs/agents.md and README.md say."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from remem.agents.wiring import claude_code_command, codex_config
from remem.daemon.cli.backend import NO_DAEMON_ENV

REPO = Path(__file__).resolve().parents[2]
# The docs' placeholders, and the shell words they write for them.
REMEM, HOME = "/path/to/clone/.venv/bin/remem", "/path/to/home"
SHELL_WORDS = {'"$PWD/.venv/bin/remem"': REMEM, '"$REMEM_HOME"': HOME}


def prose(path: str) -> str:
    """The file's text with the docs' shell words for the placeholders replaced by them and
    every run of whitespace one space, as `claude_code_command` writes it."""
    text = (REPO / path).read_text(encoding="utf-8")
    for word, placeholder in SHELL_WORDS.items():
        text = text.replace(word, placeholder)
    return " ".join(text.split())


def says(path: str, command: str) -> bool:
    """Whether the file gives `command` whole (not the start of a longer one)."""
    return re.search(rf"(?<![\w-]){re.escape(command)}(?![\w-])", prose(path)) is not None


def test_the_claude_code_commands_are_the_docs_and_the_readmes() -> None:
    for path in ("docs/agents.md", "README.md"):
        assert says(path, claude_code_command(REMEM, None)), path
    assert says("docs/agents.md", claude_code_command(REMEM, HOME))


def test_the_codex_block_is_the_docs_without_their_comments() -> None:
    text = (REPO / "docs" / "agents.md").read_text(encoding="utf-8")
    block = re.search(r"```toml\n(\[mcp_servers\.remem\]\n.*?)```", text, re.DOTALL)
    assert block is not None
    documented = [line.split("   #")[0] for line in block[1].splitlines()]
    assert codex_config(REMEM, HOME) == documented


def test_the_codex_block_is_toml_that_keeps_any_path() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11 on
    odd = 'C:\\remem "clone"/ü\t\x7f\x85\u2028\u202e/remem'  # DEL unescaped is not TOML 1.0
    parsed = tomllib.loads("\n".join(codex_config(odd, odd)))
    server = parsed["mcp_servers"]["remem"]
    assert (server["command"], server["env"]) == (odd, {"REMEM_HOME": odd})
    assert "env" not in tomllib.loads("\n".join(codex_config(REMEM, None)))["mcp_servers"]["remem"]


def test_the_command_prints_both(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "remem.daemon", "--home", str(tmp_path), "mcp", "--print-config"]
    env = {name: value for name, value in os.environ.items() if name != NO_DAEMON_ENV}  # else it says so
    printed = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, check=True).stdout
    python = sys.executable  # run as a module: the Python that runs it, which a harness can start
    home = shlex.quote(f"REMEM_HOME={tmp_path}")
    added = f"claude mcp add --scope user remem -e {home} -- {shlex.quote(python)} -m remem.daemon mcp\n"
    assert added in printed
    assert f'  command = "{python}"\n' in printed
