"""While the model runs, the session's content read whole is no longer held: a review keeps its
digest and evidence, not a DSH log's events nor a Claude Code file's bytes (decision 0469)."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path
from typing import Any

from remem.daemon.consolidation.harness_source import HarnessFile
from remem.daemon.consolidation.runner import Consolidator
from remem.daemon.home import Home
from remem.daemon.protocol.consolidation import EvidenceRange, Status
from remem.daemon.sessions.reader import SessionLog
from tests.fake_openai import Computed, FakeOpenAI, Reply, tool_call
from tests.sessions import claude_lines as cl
from tests.sessions.harness_roots import claude_project, write

from .conftest import Source, configure, proposal, put


def _reviewed_holding(home: Home, fake: FakeOpenAI, session: str, cited: EvidenceRange) -> list[str]:
    """Review `session`, committing one record; what was held, read whole, while the model ran."""
    held: list[str] = []

    def answer(request: dict[str, Any]) -> Reply:
        gc.collect()  # what a cycle alone keeps is not held
        held.extend(type(o).__name__ for o in gc.get_objects() if isinstance(o, (SessionLog, HarnessFile)))
        return tool_call(proposal(put("prefer-uv", [cited.model_dump()])))

    fake.reply(Computed(answer))
    result = asyncio.run(Consolidator(home).consolidate(session, lambda phase, data: None))
    assert result.status is Status.COMMITTED and fake.count == 1, result
    return held


def test_a_dsh_logs_events_are_not_held_while_the_model_runs(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    assert _reviewed_holding(home, fake, source.id, source.ranges[0]) == []


def test_a_claude_code_files_bytes_are_not_held_while_the_model_runs(
    home: Home, fake: FakeOpenAI, tmp_path: Path
) -> None:
    claude = tmp_path / "claude"
    configure(home, fake, tmp_path / "dsh", (claude, "claude-code"), timeout_seconds=20)
    talk = [cl.prompt("u1", None, "always run the tests with uv"), cl.say("a1", "u1", "noted")]
    write(claude_project(claude) / f"{cl.SID}.jsonl", cl.jsonl(*talk))
    assert _reviewed_holding(home, fake, cl.SID, EvidenceRange(fromSeq=1, toSeq=2)) == []
