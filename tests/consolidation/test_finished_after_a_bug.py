"""A run an unexpected error ends (a bug, answered `INTERNAL`) is still told to every client as
`consolidation/finished`: its receipt may have moved (here it is left `committing`), so other
clients' review badges must look again. No `finished` was sent for it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.client import AsyncDaemonClient
from remem.daemon.home import Home
from remem.daemon.protocol.rpc import RpcError
from tests.daemon.helpers import remem
from tests.fake_openai import FakeOpenAI, tool_call

from .conftest import Source, both_scopes

pytestmark = pytest.mark.slow


@pytest.fixture
def raising_daemon(home: Home, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Requests through a daemon whose barrier raises an unexpected error; stopped afterwards."""
    monkeypatch.setenv("REMEM_FAULTPOINT", "raise:consolidation.after-committing-receipt")
    monkeypatch.delenv(NO_DAEMON_ENV)
    yield
    monkeypatch.delenv("REMEM_FAULTPOINT")
    remem(home, "daemon", "stop")


def test_a_run_a_bug_ends_is_heard_as_finished(
    home: Home, fake: FakeOpenAI, source: Source, raising_daemon: None
) -> None:
    fake.reply(tool_call(both_scopes(source)))
    heard: list[tuple[str, dict[str, Any]]] = []

    def finished() -> list[dict[str, Any]]:
        return [p for m, p in heard if m == "consolidation/finished"]

    async def scenario() -> RpcError:
        listening = await AsyncDaemonClient.open(home, listener=lambda m, p: heard.append((m, p)))
        asking = await AsyncDaemonClient.open(home)
        try:
            with pytest.raises(RpcError) as failed:
                await asking.call("consolidation/run", {"session": source.id})
            # Told before the answer: an answer on the listening connection comes after it.
            await listening.call("consolidation/receipts", {"session": source.id})
            return failed.value
        finally:
            await asking.close()
            await listening.close()

    error = asyncio.run(scenario())
    assert "internal error" in str(error)
    assert finished() == [{"session": source.id, "outcome": "INTERNAL"}]
