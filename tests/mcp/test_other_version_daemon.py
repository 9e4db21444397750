"""The MCP server's link replaces a daemon of another remem version only at its first connection
(decision 0423), as the language server's does: a `remem mcp` a harness started before an upgrade
took the daemon back from the new version's editor on each of its reconnections."""

from __future__ import annotations

from pathlib import Path

import pytest

from remem.agents.link import open_link
from remem.daemon import client as daemon_client
from remem.daemon.home import Home
from remem.daemon.protocol.rpc import DAEMON_STATUS, Empty
from tests.other_version import OtherVersion, no_daemon_started


@pytest.mark.asyncio
async def test_the_link_replaces_another_version_only_at_its_first_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = Home(tmp_path / "home")
    no_daemon_started(monkeypatch)
    link = open_link(home, use_daemon=True)
    first = await OtherVersion(home).start()
    try:
        with pytest.raises(daemon_client.DaemonUnavailable, match="no daemon is started"):
            await link.request(DAEMON_STATUS, Empty())
        assert "daemon/shutdown" in first.asked, "replaced, as a CLI command replaces it"
        later = await OtherVersion(home).start()
        try:
            with pytest.raises(daemon_client.OtherDaemonVersion):
                await link.request(DAEMON_STATUS, Empty())
            assert "daemon/shutdown" not in later.asked, "left to whoever started it"
        finally:
            later.stop()
    finally:
        first.stop()
        await link.close()
