"""The client's declared name goes into the audit and the history as one clean line, whatever
characters the client put in it."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import mcp_types as types
import pytest

from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore

from .conftest import agent, put, text_of

pytestmark = pytest.mark.asyncio


def _clean(label: str) -> bool:
    return all(
        unicodedata.category(c)[0] != "C" and unicodedata.category(c) not in ("Zl", "Zp") for c in label
    )


async def test_a_client_name_with_line_breaks_and_controls_is_recorded_as_one_clean_line(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId
) -> None:
    declared = types.Implementation(
        name="my\u2028client\u0085\x1b[31m\u200b" + "x" * 500, version="1\u2029\n"
    )
    async with agent(home, project, client_info=declared, options=("--no-daemon",)) as session:
        await session.context()
        committed = await session.update(put("one"))
        assert not committed.is_error, text_of(committed)
        history = await session.call("memory_history")
    assert not history.is_error, text_of(history)
    [entry] = [json.loads(p.read_text()) for p in (home.memory / "audit").glob("*.json")]
    audited = entry["agent"]["client"]
    assert audited.startswith("my client  [31m x") and _clean(audited) and len(audited) <= 200, audited
    [actor] = [e.actor for e in store.history.log(workspace.key) if e.actor.kind == "agent"]
    assert actor.client == audited


async def test_a_credential_in_the_client_name_is_recorded_masked(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId
) -> None:
    """The audit holds ids, never content: a key a client put in its name is masked there and in
    the history, as everything remem keeps is."""
    secret = "sk-ant-api03-CLIENTSECRET0123456789abcdef"
    declared = types.Implementation(name=f"evil\nclient {secret}", version=f"1 token={secret[-12:]}")
    async with agent(home, project, client_info=declared, options=("--no-daemon",)) as session:
        await session.context()
        committed = await session.update(put("one"))
        assert not committed.is_error, text_of(committed)
    [audit] = list((home.memory / "audit").glob("*.json"))
    audited = json.loads(audit.read_text())["agent"]["client"]
    assert audited == "evil client [redacted api-key]/1 token=[redacted secret]", audited
    [actor] = [e.actor for e in store.history.log(workspace.key) if e.actor.kind == "agent"]
    assert actor.client == audited
    assert secret[-12:].encode() not in audit.read_bytes()
