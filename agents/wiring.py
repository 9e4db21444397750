"""How a harness starts this remem's MCP server: what `remem mcp --print-config` prints.

The one place the wiring docs/agents.md gives is written (decision 0456): Claude Code's `claude
mcp add` command and `.mcp.json` entry, and Codex's `config.toml` tables. A harness starts the
server itself, so the command is absolute, and the home goes with it unless the server would
serve it untold: Codex passes `REMEM_HOME` on to no server, and a harness that passes its own
environment on may pass another. Every path is given exactly as it is, or refused (`Unwirable`).
Nothing here loads the MCP SDK: printing the wiring starts no server.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from remem.daemon.home import DEFAULT_HOME, HOME_ENV, Home
from remem.daemon.os_names import is_utf8, shown
from remem.daemon.validation import CONTROLS, one_line

SERVER = "remem"
MCP_ARGS = ("mcp",)
HARNESSES = ("claude", "codex")
EVERY_HARNESS = "all"
# TOML 1.0 forbids DEL in a string; the rest would drive the terminal the table is printed on.
_TOML_ESCAPED = re.compile(f"[{CONTROLS}]")
# Each block's title is a comment of its own language, so a block can be appended to config.toml
# or piped to a shell as it is printed.
_CLAUDE_TITLE = "# Claude Code, for every project (run it in any folder):"
_CODEX_HOME = "CODEX_HOME"


class Unwirable(Exception):
    """A path the wiring cannot give as it is; the message names it and what to do."""


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
    if not is_utf8(command):
        raise Unwirable(
            f"this remem's path {shown(command)} is not UTF-8, and a harness's configuration holds "
            "its command as UTF-8 text; run a remem installed in a folder whose name is UTF-8"
        )
    options = () if use_daemon else ("--no-daemon",)
    pinned = () if cwd is None else ("--cwd", os.path.abspath(cwd))
    return Launch(command, (*before, *options, *MCP_ARGS, *pinned), _passed_on(home))


def _passed_on(home: Home) -> str | None:
    """The home as the server must be told it; None when it would serve that home untold: the
    default home, with no `$REMEM_HOME` naming another that a harness could pass on (decision 0456)."""
    untold = home.root == Home.resolve(DEFAULT_HOME).root == Home.resolve().root
    return None if untold else str(home.root)


def claude_code_command(remem: str, home: str | None, args: Sequence[str] = MCP_ARGS) -> str:
    """The shell command that registers the server with Claude Code for every project of the
    user: its default scope is the folder it is run in, which from the clone is remem's own."""
    env = ["-e", f"{HOME_ENV}={home}"] if home else []
    return shlex.join(["claude", "mcp", "add", "--scope", "user", SERVER, *env, "--", remem, *args])


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
    """`value` as a TOML basic string or array of them: every escape JSON writes is one of TOML's,
    and JSON leaves DEL, C1 and Unicode's separators and direction overrides as they are, which
    are written `\\uXXXX` too (outside a string JSON writes none of them)."""
    text = json.dumps(value, ensure_ascii=False)
    return _TOML_ESCAPED.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def wiring_text(launch: Launch, harnesses: Sequence[str]) -> str:
    """The wiring of each of `harnesses`, under a comment saying where it goes, indented to paste.
    Unwirable for a path that a terminal would not show as it is, which a paste would change."""
    for word in (launch.home or "", launch.command, *launch.args):
        if one_line(word) != word:
            raise Unwirable(
                f"the path {one_line(word)} holds a control character, a line separator or a "
                "direction override, which a terminal does not show as it is, so the wiring cannot be "
                "printed to paste; rename it, or take the wiring from --json, which holds it exactly"
            )
    blocks = _blocks(launch)
    titles = {"claude": _CLAUDE_TITLE, "codex": f"# Codex, in {_codex_config_file()}:"}
    lines = [
        line for name in harnesses for line in (titles[name], *(f"  {b}" if b else "" for b in blocks[name]))
    ]
    return "\n".join(lines)


def _codex_config_file() -> str:
    """Where Codex reads its configuration: `$CODEX_HOME`'s, as its value, which the comment
    can hold only as one line (else it is named by the variable)."""
    codex_home = os.environ.get(_CODEX_HOME, "")
    if not codex_home:
        return "~/.codex/config.toml"
    if one_line(codex_home) != codex_home:
        return f"${_CODEX_HOME}/config.toml"
    return os.path.join(codex_home, "config.toml")


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
