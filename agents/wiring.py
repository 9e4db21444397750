"""How a harness starts this remem's MCP server: what `remem mcp --print-config` prints.

The one place the wiring docs/agents.md gives is written (decision 0456): Claude Code's `claude
mcp add` command and `.mcp.json` entry, and Codex's `config.toml` tables. A harness starts the
server itself, so the command is absolute, and the home goes with it unless it is the default:
Codex passes `REMEM_HOME` on to no server, and Claude Code only what it is given. Nothing here
loads the MCP SDK: printing the wiring starts no server.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from remem.daemon.home import DEFAULT_HOME, HOME_ENV, Home

SERVER = "remem"
MCP_ARGS = ("mcp",)
HARNESSES = ("claude", "codex")
_TITLES = {"claude": "Claude Code, from the project's folder:", "codex": "Codex, in ~/.codex/config.toml:"}


@dataclass(frozen=True)
class Launch:
    """What a harness runs: an absolute `command` with its `args`, and the home it passes on as
    `REMEM_HOME` (None: the default, passed on as nothing)."""

    command: str
    args: tuple[str, ...]
    home: str | None

    @property
    def env(self) -> dict[str, str]:
        return {HOME_ENV: self.home} if self.home else {}


def this_launch(home: Home, *, use_daemon: bool, cwd: str | None) -> Launch:
    """How to start the server this very `remem mcp` would be: the same remem (its script, else
    this Python running the package), `--no-daemon` and `--cwd` as given, the same home."""
    script = os.path.abspath(sys.argv[0])
    # `python -m remem.daemon` runs a module file, not a command a harness can start.
    command, before = (script, ()) if not script.endswith(".py") else (sys.executable, ("-m", "remem.daemon"))
    options = () if use_daemon else ("--no-daemon",)
    pinned = () if cwd is None else ("--cwd", os.path.abspath(cwd))
    chosen = None if home.root == Home.resolve(DEFAULT_HOME).root else str(home.root)
    return Launch(command, (*before, *options, *MCP_ARGS, *pinned), chosen)


def claude_code_command(remem: str, home: str | None, args: Sequence[str] = MCP_ARGS) -> str:
    """The shell command that registers the server with Claude Code (for the project it is run in)."""
    env = ["-e", f"{HOME_ENV}={home}"] if home else []
    return shlex.join(["claude", "mcp", "add", SERVER, *env, "--", remem, *args])


def claude_code_json(launch: Launch) -> dict[str, Any]:
    """The same server as a project's `.mcp.json` holds it (Claude Code asks before using one)."""
    entry: dict[str, Any] = {"type": "stdio", "command": launch.command, "args": list(launch.args)}
    return {"mcpServers": {SERVER: entry | ({"env": launch.env} if launch.env else {})}}


def codex_config(remem: str, home: str | None, args: Sequence[str] = MCP_ARGS) -> list[str]:
    """The lines of Codex's `config.toml` that register the server: `required`, so `codex exec`
    waits for its tools, and `memory_update` approved, since `codex exec` never asks. Codex
    passes `REMEM_HOME` on to no server, so a home is named in the table itself."""
    lines = [
        f"[mcp_servers.{SERVER}]",
        f"command = {_toml(remem)}",
        f"args = {_toml(list(args))}",
        "required = true",
    ]
    if home:
        lines.append(f"env = {{ {HOME_ENV} = {_toml(home)} }}")
    return [*lines, "", f"[mcp_servers.{SERVER}.tools.memory_update]", 'approval_mode = "approve"']


def _toml(value: str | list[str]) -> str:
    """`value` as a TOML basic string or array of them: every escape JSON writes is one of TOML's."""
    return json.dumps(value, ensure_ascii=False)


def wiring_text(launch: Launch, harnesses: Sequence[str]) -> str:
    """The wiring of each of `harnesses`, under a line saying where it goes, indented to paste."""
    blocks = _blocks(launch)
    lines = [
        line for name in harnesses for line in (_TITLES[name], *(f"  {b}" if b else "" for b in blocks[name]))
    ]
    return "\n".join(lines)


def wiring_json(launch: Launch, harnesses: Sequence[str]) -> dict[str, Any]:
    """The server's launch, and the wiring of each of `harnesses`, for scripts."""
    blocks = _blocks(launch)
    answers = {
        "claude": {"command": blocks["claude"][0], "mcpJson": claude_code_json(launch)},
        "codex": {"configToml": "\n".join(blocks["codex"]) + "\n"},
    }
    server = {"command": launch.command, "args": list(launch.args), "env": launch.env}
    return {"server": server} | {name: answers[name] for name in harnesses}


def _blocks(launch: Launch) -> dict[str, list[str]]:
    """Each harness's wiring, as the lines pasted."""
    return {
        "claude": [claude_code_command(launch.command, launch.home, launch.args)],
        "codex": codex_config(launch.command, launch.home, launch.args),
    }
