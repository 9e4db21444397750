"""`remem --no-daemon mcp` on a home that does not exist yet: the first call makes the home, and
the handlers that made it go on serving it, never taken for another folder's ("is another folder
now: its memory is read afresh", its handlers composed again) as its first look, made before there
was a home, found none."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

from remem.daemon.home import Home

from .conftest import TIMEOUT_SECONDS, RawServer, put, server_command, server_env


def test_a_fresh_homes_first_calls_are_served_by_one_composition(project: Path, tmp_path: Path) -> None:
    home = Home(tmp_path / "fresh-home")
    log = tmp_path / "server.log"
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            server_command(home, project, ("--no-daemon",)),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=server_env(),
        )
        server = RawServer(process)
        threading.Thread(target=server.read_lines, daemon=True).start()
        client = {"name": "raw", "version": "1"}
        server.request(
            "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}
        )
        server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        for call in ("memory_context", "memory_context"):
            answer = server.request("tools/call", {"name": call, "arguments": {}})
            assert not answer["result"].get("isError"), answer
        updated = server.request(
            "tools/call", {"name": "memory_update", "arguments": {"changes": [put("alpha")]}}
        )
        assert not updated["result"].get("isError"), updated
        assert process.stdin is not None
        process.stdin.close()
        assert process.wait(TIMEOUT_SECONDS) == 0
    assert home.root.is_dir()
    assert "another folder" not in log.read_text()
