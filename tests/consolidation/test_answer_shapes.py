"""Answers of shapes the API allows or servers send: many tool calls at once, a call without a
`type`, a call of another type, and the provider's `message.refusal`. Each is driven through the
real pipeline by a local server answering as such a provider would."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.consolidation.evidence import shown_turns
from remem.daemon.consolidation.proposal import TOOL_NAME
from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.consolidation.runner import Consolidator
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.consolidation import Status
from tests.fake_openai import ScriptedHandler, ScriptedServer

from .conftest import KEY_ENV, Source, write_source

MAX_TOOL_CALLS = 16  # worker.MAX_TOOL_CALLS, as the user reads it
Message = Callable[[dict[str, Any], int], dict[str, Any]]  # the request, its number → the message


class _Handler(ScriptedHandler):
    fake_name = "ShapedAnswers"
    message: Message

    def do_POST(self) -> None:  # noqa: N802 (stdlib naming)
        body = self._read_json()
        if body is None:
            return
        number = self._record(body)
        message = type(self).message(body, number)
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        choice = {"index": 0, "finish_reason": finish, "message": {"role": "assistant", **message}}
        self._send_json(200, {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                              "choices": [choice]})  # fmt: skip


class ShapedAnswers(ScriptedServer):
    """A provider whose `number`th answer to `body` holds the message `message` makes."""

    def __init__(self, message: Message) -> None:
        super().__init__()
        self.handler = type("Handler", (_Handler,), {"message": staticmethod(message)})


def _arguments(body: dict[str, Any], final: bool = True) -> str:
    shown = shown_turns(body["messages"][1]["content"])[0][0].model_dump()
    record = {"name": "prefer-uv", "description": "Tooling", "type": "feedback", "content": "Use uv.\n"}
    change = {"action": "put", "record": record, "evidence": [shown]}
    return json.dumps({"final": final, "outcome": "changes", "changes": [change]})


def _call(number: int, arguments: str, **fields: Any) -> dict[str, Any]:
    call = {"id": f"c{number}", "type": "function", "function": {"name": TOOL_NAME, "arguments": arguments}}
    return {**call, **fields}


def _consolidate(home: Home, tmp_path: Path, server: ShapedAnswers) -> tuple[Source, Any]:
    root = tmp_path / "dsh-sessions"
    home.ensure_layout()
    home.settings_file.write_text(
        "consolidation:\n  provider: fake\n  model: fake-model\n  timeout_seconds: 60\n"
        f"providers:\n  fake:\n    base_url: {server.origin}/v1\n    api_key_env: {KEY_ENV}\n"
        f"sessions:\n  roots: [{str(root)!r}]\n"
    )
    source = write_source(root, str(tmp_path / "project"))
    result = asyncio.run(Consolidator(home).consolidate(source.id, lambda phase, data: None))
    receipt = ReceiptStore(home).read(result.review)
    assert receipt is not None and receipt.status is result.status
    return source, receipt


def _records(home: Home, source: Source) -> list[str]:
    return [r.name for r in MemoryStore(home).read_workspace(WorkspaceId.from_cwd(source.cwd)).records]


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")


def test_an_answer_of_thousands_of_tool_calls_is_refused_whole_saying_how_many(
    home: Home, tmp_path: Path
) -> None:
    """Each call would be parsed and planned against the frozen memory: 10 000 of them stalled
    the daemon for seconds. The answer is refused before any is checked, and not asked again."""

    def many(body: dict[str, Any], number: int) -> dict[str, Any]:
        arguments = _arguments(body, final=False)
        return {"content": None, "tool_calls": [_call(n, arguments) for n in range(10_000)]}

    with ShapedAnswers(many) as server:
        source, receipt = _consolidate(home, tmp_path, server)
        assert server.count == 1
    assert receipt.status is Status.PROVIDER_FAILED and _records(home, source) == []
    error = receipt.attempts[-1].error or ""
    assert error.startswith(
        f"the answer holds 10000 tool calls; a consolidation step may hold at most {MAX_TOOL_CALLS}"
    )


def test_as_many_tool_calls_as_the_bound_are_each_answered(home: Home, tmp_path: Path) -> None:
    """Up to the bound, each call is answered (the same call once checked): drafts, then a final."""

    def drafts_then_final(body: dict[str, Any], number: int) -> dict[str, Any]:
        if number == 1:
            arguments = _arguments(body, final=False)
            return {"content": None, "tool_calls": [_call(n, arguments) for n in range(MAX_TOOL_CALLS)]}
        return {"content": None, "tool_calls": [_call(0, _arguments(body))]}

    with ShapedAnswers(drafts_then_final) as server:
        source, receipt = _consolidate(home, tmp_path, server)
        second = server.requests[1]["messages"]
    assert receipt.status is Status.COMMITTED and _records(home, source) == ["prefer-uv"]
    answers = [m for m in second if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in answers] == [f"c{n}" for n in range(MAX_TOOL_CALLS)]
    assert all(m["content"].startswith("valid draft") for m in answers)


def test_a_tool_call_without_a_type_is_a_function_call_and_goes_back_typed(
    home: Home, tmp_path: Path
) -> None:
    """Some servers leave `type` out. The call is answered (not dropped, which ended the attempt
    "called no tool" after six billed steps) and goes back into the history typed, as the API
    requires of it."""

    def untyped(body: dict[str, Any], number: int) -> dict[str, Any]:
        call = _call(number, _arguments(body, final=number > 1))
        del call["type"]
        return {"content": None, "tool_calls": [call]}

    with ShapedAnswers(untyped) as server:
        source, receipt = _consolidate(home, tmp_path, server)
        history = server.requests[1]["messages"]
    assert receipt.status is Status.COMMITTED and _records(home, source) == ["prefer-uv"]
    [sent_back] = [m for m in history if m["role"] == "assistant"]
    assert [c["type"] for c in sent_back["tool_calls"]] == ["function"]
    assert [m["tool_call_id"] for m in history if m["role"] == "tool"] == ["c1"]


def test_a_tool_call_of_another_type_fails_the_attempt_naming_it(home: Home, tmp_path: Path) -> None:
    def custom(body: dict[str, Any], number: int) -> dict[str, Any]:
        call = {"id": "c1", "type": "custom", "custom": {"name": TOOL_NAME, "input": _arguments(body)}}
        return {"content": None, "tool_calls": [call]}

    with ShapedAnswers(custom) as server:
        source, receipt = _consolidate(home, tmp_path, server)
        assert server.count == 1
    assert receipt.status is Status.PROVIDER_FAILED and _records(home, source) == []
    assert (receipt.attempts[-1].error or "").startswith("a tool call in the answer is of type 'custom'")


def test_a_refusal_ends_the_attempt_at_once_saying_it_redacted(home: Home, tmp_path: Path) -> None:
    """Asked again, a provider refuses again, each time billed: the first refusal ends the attempt,
    and the receipt says what the model said (redacted, bounded), not "called no tool"."""
    said = "I cannot help with that request; it holds password=hunter2xyz and more. " + "Sorry. " * 200

    def refusal(body: dict[str, Any], number: int) -> dict[str, Any]:
        return {"content": None, "refusal": said}

    with ShapedAnswers(refusal) as server:
        source, receipt = _consolidate(home, tmp_path, server)
        assert server.count == 1
    assert receipt.status is Status.INVALID_PROPOSAL and _records(home, source) == []
    error = receipt.attempts[-1].error or ""
    assert error.startswith("the model refused to review the session (asked ")
    assert "I cannot help with that request; it holds password=[redacted secret] and more." in error
    assert "hunter2xyz" not in error and len(error) < 500
