"""The MCP server's link replaces a daemon of another remem version only at its first connection
(decision 0423), as the language server's does: a `remem mcp` a harness started before an upgrade
took the daemon back from the new version's editor on each of its reconnections."""

from __future__ import annotations

from pathlib import Path

import pytest

from remem.agents.link import MemoryLink, open_link
from remem.daemon import client as daemon_client
from remem.daemon.home import Home, HomeUnusable
from remem.daemon.protocol.rpc import DAEMON_STATUS, Empty
from tests.other_version import OtherVersion, no_daemon_started


async def _a_later_one_is_left_alone(home: Home, link: MemoryLink) -> None:
    """A daemon of another version started after `link`'s first connection is refused, not
    replaced: it is left to whoever started it."""
    later = await OtherVersion(home).start()
    try:
        with pytest.raises(daemon_client.OtherDaemonVersion):
            await link.request(DAEMON_STATUS, Empty())
        assert "daemon/shutdown" not in later.asked, "left to whoever started it"
    finally:
        later.stop()


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
        await _a_later_one_is_left_alone(home, link)
    finally:
        first.stop()
        await link.close()


@pytest.mark.asyncio
async def test_a_first_connection_a_home_that_cannot_be_used_stops_is_still_the_one_to_replace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file stands where the home's state folder must be: the first connection fails before any
    daemon is asked. Once the home is fixed, a daemon of another version is still not replaced."""
    home = Home(tmp_path / "home")
    home.root.mkdir()
    (home.root / "state").write_text("not a folder\n")
    no_daemon_started(monkeypatch)
    link = open_link(home, use_daemon=True)
    assert isinstance(link, daemon_client.AsyncDaemonClient)
    try:
        with pytest.raises(HomeUnusable):
            await link.request(DAEMON_STATUS, Empty())
        assert link.replace is False
        (home.root / "state").unlink()
        home.ensure_layout()
        await _a_later_one_is_left_alone(home, link)
    finally:
        await link.close()
