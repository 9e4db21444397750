"""How to wire remem's MCP server into Claude Code and Codex, as docs/agents.md gives it.

`python -m scripts.mcp_wiring REMEM [--home DIR]` prints the `claude mcp add` command and the
Codex `config.toml` block for the `remem` executable at REMEM, serving the home DIR (else
`~/.remem`, and no `REMEM_HOME` is passed on). scripts/demo prints them for the demo home;
tests/tooling/test_mcp_wiring.py holds them to docs/agents.md and README.md.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Sequence

HOME_VARIABLE = "REMEM_HOME"


def claude_code_command(remem: str, home: str | None) -> str:
    """The shell command that registers remem with Claude Code (for the project it is run in)."""
    env = ["-e", f"{HOME_VARIABLE}={home}"] if home else []
    return shlex.join(["claude", "mcp", "add", "remem", *env, "--", remem, "mcp"])


def codex_config(remem: str, home: str | None) -> list[str]:
    """The lines of Codex's `config.toml` that register remem: `required`, so `codex exec`
    waits for its tools, and `memory_update` approved, since `codex exec` never asks. Codex
    passes `REMEM_HOME` on to no server, so a home is named in the block itself."""
    lines = ["[mcp_servers.remem]", f"command = {_toml(remem)}", 'args = ["mcp"]', "required = true"]
    if home:
        lines.append(f"env = {{ {HOME_VARIABLE} = {_toml(home)} }}")
    return [*lines, "", "[mcp_servers.remem.tools.memory_update]", 'approval_mode = "approve"']


def _toml(text: str) -> str:
    """`text` as a TOML basic string: every escape JSON writes is one of TOML's."""
    return json.dumps(text, ensure_ascii=False)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.mcp_wiring", description=__doc__)
    parser.add_argument("remem", help="the absolute path of the remem executable")
    parser.add_argument("--home", help="the remem home the agents use (default: ~/.remem)")
    args = parser.parse_args(argv)
    print("Claude Code, from the project's folder:")
    print(f"  {claude_code_command(args.remem, args.home)}")
    print("Codex, in ~/.codex/config.toml:")
    print("\n".join(f"  {line}" if line else "" for line in codex_config(args.remem, args.home)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
