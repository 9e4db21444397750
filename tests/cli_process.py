"""The remem CLI run as a user runs it: a process of its own over a given home, without the
daemon (the suite's default, `NO_DAEMON_ENV`) or through it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home

# What an agent sends `remem mcp` on its standard input: initialize (id 1), then a call of
# memory_context (id 2).
_CLIENT = {"name": "t", "version": "1"}
MCP_CONTEXT_CALL = "".join(
    json.dumps(line) + "\n"
    for line in [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": _CLIENT}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "memory_context", "arguments": {}}},
    ]
)  # fmt: skip


def remem(
    home: Home, *args: str, daemon: bool = False, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`remem --home HOME ARGS`; `daemon`: through the daemon it starts; `env`: set on top."""
    environment = {**os.environ, **(env or {})}
    if daemon:
        environment.pop(NO_DAEMON_ENV, None)
    return subprocess.run(
        [sys.executable, "-m", "remem.daemon", "--home", str(home.root), *args],
        capture_output=True, text=True, env=environment, timeout=120,
    )  # fmt: skip
