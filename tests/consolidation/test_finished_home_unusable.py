"""A run ended by an unusable home (here a link put at `memory/reviews/committing`, where a
review leaves its mark before it commits) is answered HOME_UNUSABLE, and every client hears it
finished as `HOME_UNUSABLE`, not `INTERNAL` (a bug in remem) as it was.

The daemon loads a hook at its start (`sitecustomize`, in its process only) that puts the link
there once the review's attempt receipt is written.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.client import AsyncDaemonClient
from remem.daemon.home import Home
from remem.daemon.protocol.rpc import HOME_UNUSABLE, RpcError
from tests.daemon.helpers import remem
from tests.fake_openai import FakeOpenAI, tool_call
from tests.scratch import hooked_pythonpath

from .conftest import Source, both_scopes

pytestmark = pytest.mark.slow
LINK_ENV = "REMEM_TEST_LINK_AT"
HOOK = """
import os

_target = os.environ["REMEM_TEST_LINK_AT"]
import remem.daemon.faults as _faults

_reached = _faults.faultpoint


def _linking(name):
    _reached(name)
    if name == "consolidation.after-attempt-receipt" and not os.path.lexists(_target):
        os.makedirs(_target + ".elsewhere", exist_ok=True)
        os.symlink(_target + ".elsewhere", _target)


_faults.faultpoint = _linking
"""


@pytest.fixture
def daemon_env(home: Home, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("PYTHONPATH", hooked_pythonpath(HOOK, "remem-link-hook-"))
    monkeypatch.setenv(LINK_ENV, str(home.reviews / "committing"))
    monkeypatch.delenv(NO_DAEMON_ENV)
    yield
    remem(home, "daemon", "stop")


def test_a_run_ended_by_an_unusable_home_is_heard_finished_as_home_unusable(
    home: Home, fake: FakeOpenAI, source: Source, daemon_env: None
) -> None:
    fake.reply(tool_call(both_scopes(source)))
    heard: list[tuple[str, dict[str, Any]]] = []

    async def scenario() -> RpcError:
        listening = await AsyncDaemonClient.open(home, listener=lambda m, p: heard.append((m, p)))
        asking = await AsyncDaemonClient.open(home)
        try:
            with pytest.raises(RpcError) as refused:
                await asking.call("consolidation/run", {"session": source.id})
            # Told before the answer: an answer on the listening connection comes after it (this
            # one is HOME_UNUSABLE too: every request settles the marked reviews first).
            with pytest.raises(RpcError):
                await listening.call("consolidation/receipts", {"session": source.id})
            return refused.value
        finally:
            await asking.close()
            await listening.close()

    error = asyncio.run(scenario())
    assert error.code == HOME_UNUSABLE, error
    assert "committing" in str(error), error
    assert [p for m, p in heard if m == "consolidation/finished"] == [
        {"session": source.id, "outcome": "HOME_UNUSABLE"}
    ]
