"""Consolidation through the daemon: progress, notifications, cancelling, and what a crash leaves."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from remem.daemon.client import AsyncDaemonClient
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.rpc import CONSOLIDATION_REFUSED, RpcError
from remem.daemon.server.runtime import DaemonPaths
from tests.consolidation.conftest import Source, both_scopes, proposal, put, write_source
from tests.fake_openai import FakeOpenAI, hang, tool_call
from tests.waiting import until

from .helpers import crash_at, remem, wait_until

pytestmark = pytest.mark.slow
COMMITTING = "consolidation.after-committing-receipt"  # test_crash_recovery.py kills at every point


def test_progress_and_memory_notifications(home: Home, fake: FakeOpenAI, source: Source) -> None:
    fake.reply(tool_call(both_scopes(source)))

    def changed(heard: list[tuple[str, dict[str, object]]]) -> set[object]:
        return {p["scope"] for m, p in heard if m == "memory/changed"}

    async def scenario() -> tuple[dict[str, object], list[tuple[str, dict[str, object]]]]:
        heard: list[tuple[str, dict[str, object]]] = []
        client = await AsyncDaemonClient.open(home, listener=lambda m, p: heard.append((m, p)))
        result = await client.call("consolidation/run", {"session": source.id})
        await until(lambda: changed(heard) == {"global", "workspace"}, what="both scopes' memory/changed")
        await client.close()
        return result, heard

    result, heard = asyncio.run(scenario())
    assert (result["status"], result["changes"]) == ("committed", 2)
    phases = [p["phase"] for m, p in heard if m == "consolidation/progress"]
    assert phases == ["freezing", "model", "model-step", "model-answer", "committing"]
    assert [p for m, p in heard if m == "consolidation/finished"] == [
        {"session": source.id, "outcome": "committed"}
    ]


def test_invalid_memory_is_refused_naming_the_files_to_fix(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    folder = MemoryStore(home).folder(WorkspaceId.from_cwd(source.cwd))
    broken = folder / "broken.md"
    folder.mkdir(parents=True, exist_ok=True)
    broken.write_text("---\nname: broken\ntype: Feedback\n---\nA body.\n")

    heard: list[tuple[str, dict[str, object]]] = []

    async def scenario() -> RpcError:
        # Another client's views hear how the run ended, though no memory changed.
        client, other = (
            AsyncDaemonClient.open(home),
            AsyncDaemonClient.open(home, listener=lambda m, p: heard.append((m, p))),
        )
        asking, listening = await client, await other
        try:
            with pytest.raises(RpcError) as refused:
                await asking.call("consolidation/run", {"session": source.id})
            await until(lambda: any(m == "consolidation/finished" for m, _ in heard), what="the run's end")
            return refused.value
        finally:
            await asking.close()
            await listening.close()

    refusal = asyncio.run(scenario())
    # The editor opens these, so that the Problems panel it shows lists their problems.
    assert refusal.code == CONSOLIDATION_REFUSED
    assert refusal.data == {"code": "MEMORY_INVALID", "files": [str(broken)]}
    assert fake.count == 0
    assert [p for m, p in heard if m == "consolidation/finished"] == [
        {"session": source.id, "outcome": "MEMORY_INVALID"}
    ]


def test_a_third_party_edit_after_a_crash_is_a_conflict(
    home: Home, fake: FakeOpenAI, source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake.reply(tool_call(both_scopes(source)))
    crash_at(COMMITTING, home, monkeypatch, "consolidate", source.id)
    home.global_file.write_text("Written by hand meanwhile.\n")
    # The daemon settles the review when it starts, before this read: nothing is overwritten.
    receipts = json.loads(remem(home, "receipts", "--session", source.id, "--json").stdout)["receipts"]
    assert [r["status"] for r in receipts] == ["target-conflict"] and fake.count == 1
    assert home.global_file.read_text() == "Written by hand meanwhile.\n"
    assert MemoryStore(home).read_workspace(WorkspaceId.from_cwd(source.cwd)).records == []


def test_a_running_consolidation_is_cancelled_from_another_client(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    fake.reply(hang())

    async def scenario() -> tuple[dict[str, object], dict[str, object], dict[str, object]]:
        runner, canceller = AsyncDaemonClient.open(home), AsyncDaemonClient.open(home)
        running_client, other = await runner, await canceller
        running = asyncio.create_task(running_client.call("consolidation/run", {"session": source.id}))
        await until(lambda: fake.count > 0, what="the review to ask the model")
        cancelled = await other.call("consolidation/cancel", {"session": source.id})
        idle = await other.call("consolidation/cancel", {"session": "session-not-running"})
        result = await running
        for client in (running_client, other):
            await client.close()
        return cancelled, idle, result

    cancelled, idle, result = asyncio.run(scenario())
    assert cancelled == {"cancelled": True} and idle == {"cancelled": False}
    assert result["status"] == "cancelled" and result["attempt"] == 1


def test_a_pending_commit_is_settled_before_a_grown_session_is_reviewed(
    home: Home, fake: FakeOpenAI, source: Source, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake.reply(tool_call(both_scopes(source)))
    crash_at(COMMITTING, home, monkeypatch, "consolidate", source.id)
    grown = write_source(tmp_path / "elsewhere", source.cwd, seed=1, turns=4)  # the agent went on
    source.path.write_bytes(grown.path.read_bytes())
    os.utime(source.path, (1_600_000_000, 1_600_000_000))
    # The daemon settles the review when it starts, before any request reads memory.
    [settled] = json.loads(remem(home, "receipts", "--session", source.id, "--json").stdout)["receipts"]
    assert settled["status"] == "committed" and fake.count == 1
    fake.reply(tool_call(proposal()))
    fresh = json.loads(remem(home, "consolidate", source.id, "--json").stdout)
    assert fresh["review"] != settled["review"] and fresh["status"] == "no-change" and fake.count == 2


def test_an_attempt_cut_short_by_a_crash_is_recorded_and_retried(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    fake.reply(hang())
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "consolidate", source.id]
    waiting = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_until(lambda: fake.count == 1, what="the daemon asking the model")
    os.kill(DaemonPaths(home).read_status().pid, signal.SIGKILL)  # type: ignore[union-attr]
    waiting.communicate(timeout=30)
    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence()))))
    result = json.loads(remem(home, "consolidate", source.id, "--json").stdout)
    assert result["status"] == "committed" and result["attempt"] == 2
    [receipt] = json.loads(remem(home, "receipts", "--json").stdout)["receipts"]
    first = receipt["attempts"][0]
    assert (first["status"], first["error"]) == ("internal-error", "interrupted")
