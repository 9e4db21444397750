"""Every line of a worker session fits the session reader's line cap as the log encodes it: an
answer, the tool's answer to it, or a review input that would take more, escaped as JSON, is
refused before it is written, so no worker session is left that remem cannot read back (and so
no Global commit that a crash would leave unrecorded)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.consolidation import worker
from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.consolidation.runner import Consolidator
from remem.daemon.home import Home
from remem.daemon.limits import SESSION_LINE_MAX_BYTES
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.consolidation import ConsolidationResult, Receipt, Status
from remem.daemon.sessions.reader import read_session
from remem.daemon.sessions.scripted import ScriptedTurn, build_scripted_session, write_session
from remem.daemon.sessions.writer import json_line
from remem.daemon.settings import SettingsError, parse_settings
from tests.fake_openai import FakeOpenAI, tool_call

from .conftest import OLD, Source, both_scopes, configure, proposal, put

# 3 000 000 bytes of UTF-8, under the 3 MiB an answer may hold; 18 000 000 once escaped.
CONTROLS = "\x01" * 3_000_000


def _consolidate(home: Home, session_id: str) -> tuple[ConsolidationResult, Receipt]:
    result = asyncio.run(Consolidator(home).consolidate(session_id, lambda phase, data: None))
    receipt = ReceiptStore(home).read(result.review)
    assert receipt is not None and receipt.attempt is not None
    return result, receipt


def _worker_logs_read_back(home: Home) -> None:
    logs = [p for p in home.sessions.rglob("session.jsonl*") if p.is_file()]
    assert all(read_session(p).events for p in logs), "every worker session reads back"


@pytest.mark.parametrize("field", ["reasoning", "content"])
def test_an_answer_past_a_log_line_once_escaped_is_refused_and_nothing_is_committed(
    home: Home, fake: FakeOpenAI, source: Source, field: str
) -> None:
    """Its text is within the 3 MiB an answer may hold, but each control character takes six
    bytes in the log: recorded, its line would be 18 MB, past the 8 MiB the reader takes."""
    global_before = MemoryStore(home).read_global().content
    fake.reply(tool_call(both_scopes(source), **{field: CONTROLS}))
    result, receipt = _consolidate(home, source.id)
    assert result.status is receipt.status is Status.PROVIDER_FAILED, receipt.attempt
    error = receipt.attempts[-1].error or ""
    assert error.startswith("the answer would take 18") and "a control character takes 6 bytes" in error
    assert "session log lines back only up to 8 MiB" in error and error.endswith(f"(asked {fake.base_url})")
    assert MemoryStore(home).read_global().content == global_before, "Global is not changed"
    _worker_logs_read_back(home)


def test_a_tool_answer_past_a_log_line_is_refused(home: Home, fake: FakeOpenAI, source: Source) -> None:
    """600 KB of arguments, each `1,` a change that is no object, draws a problem of some 40
    bytes each: the tool's answer would be 8.9 MB, one line of the worker session."""
    fake.reply(tool_call({"final": True, "outcome": "changes", "changes": [1] * 200_000}))
    result, receipt = _consolidate(home, source.id)
    assert result.status is receipt.status is Status.PROVIDER_FAILED, receipt.attempt
    error = receipt.attempts[-1].error or ""
    assert error.startswith("the tool's answer to one of its calls (its problems) would take "), error
    _worker_logs_read_back(home)


def test_an_input_past_a_log_line_once_escaped_is_refused_before_the_model_is_asked(
    home: Home, fake: FakeOpenAI, tmp_path: Path
) -> None:
    """1.6 MB of input, within `max_input_bytes`, of control characters the log writes in six
    bytes each: its worker session's first message would be a 9.6 MB line."""
    root = tmp_path / "dsh-sessions"
    configure(home, fake, root, max_input_bytes=2_000_000)
    turns = [ScriptedTurn("Remember this: " + "\x01" * 800_000, "Noted.") for _ in range(2)]
    draft = build_scripted_session(turns, seed=3, cwd=str(tmp_path / "project"))
    os.utime(write_session(root, draft), (OLD, OLD))
    result, receipt = _consolidate(home, draft.header.id)
    assert result.status is receipt.status is Status.EVIDENCE_TOO_LARGE
    assert fake.count == 0, "the model is not asked"
    error = receipt.attempts[-1].error or ""
    assert error.startswith("the review input is 1600") and "escaped as JSON" in error, error
    assert error.endswith("besides consolidation.max_input_bytes (2000000)"), error
    assert not list(home.sessions.rglob("session.jsonl*")), "no worker session is begun"


def test_max_input_bytes_is_bounded_by_the_line_a_worker_session_records_it_in() -> None:
    with pytest.raises(SettingsError) as refused:
        parse_settings(b"consolidation:\n  max_input_bytes: 30000000\n")
    assert str(refused.value) == (
        f"settings.yml:2: consolidation.max_input_bytes: Input should be less than or equal to "
        f"{SESSION_LINE_MAX_BYTES}"
    )
    largest = f"consolidation:\n  max_input_bytes: {SESSION_LINE_MAX_BYTES}\n".encode()
    assert parse_settings(largest).consolidation.max_input_bytes == SESSION_LINE_MAX_BYTES


# The lines that hold what the worker measures; the others hold remem's own words (the rules,
# a nudge) and numbers, of a fixed size.
MEASURED = ("user/message", "assistant/message", "tool/result")


def _measured(kind: str, data: dict[str, Any]) -> list[object]:
    """What the worker measures of a line of kind `kind`, taken from the line's `data`."""
    if kind == "user/message":
        return [block["text"] for block in data["content"]]
    message = data["message"]
    if kind == "assistant/message":
        return [message["content"], message["source"]["provider"], message["source"]["model"]]
    call = message["source"]["callId"]
    return [call, call, message["content"][0]["content"][0]["text"]]


def test_what_a_line_holds_besides_the_values_measured_is_within_its_frame(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    """The measure stands for the real lines: each is at most the values measured, encoded as
    the line encodes them (here all escaped, for a lone surrogate), and the frame the line's
    room leaves."""
    reasoning = "\x01\ud800" * 1000
    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence())), reasoning=reasoning))
    result, _ = _consolidate(home, source.id)
    assert result.status is Status.COMMITTED
    path = next(p for p in home.sessions.rglob("session.jsonl*") if p.is_file())
    lines = [e for e in read_session(path).events if e.type in MEASURED]
    assert sorted({e.type for e in lines}) == sorted(MEASURED)
    for event in lines:
        record = event.to_record()
        frame = len(json_line(record)) - worker.logged_bytes(*_measured(event.type, record["data"]))
        assert frame < SESSION_LINE_MAX_BYTES - worker.LINE_ROOM_BYTES, (event.type, frame)
