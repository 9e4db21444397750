"""Contract tests: the real ``openai`` SDK (3.x) against tests.fake_openai.FakeOpenAI."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from openai import AsyncOpenAI, OpenAI

from tests.fake_openai import FakeOpenAI, hang, slow, status, text, tool_call
from tests.waiting import until, wait_until

KEY = "sk-fake-test"
MODEL = "test-model"
# "Promptly" in these tests means long before a 30 s reply (or a hang) would end: a bound that a
# loaded 2-core machine cannot miss, never a speed figure (the 1-3 s bounds before this did).
PROMPT_S = 10
SLOW_S = 30
TOOLS: Any = [
    {
        "type": "function",
        "function": {
            "name": "memory_review_propose",
            "description": "Propose memory operations.",
            "parameters": {"type": "object", "properties": {"ops": {"type": "array"}}},
        },
    }
]


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    before = set(threading.enumerate())
    with FakeOpenAI(api_key=KEY) as server:
        port = int(server.base_url.rsplit(":", 1)[1].split("/")[0])
        yield server
    leftover = [t for t in threading.enumerate() if t not in before and t.is_alive()]
    assert not leftover, f"threads left behind: {leftover}"
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port), timeout=1):
        pass


def aclient(fake: FakeOpenAI, **options: Any) -> AsyncOpenAI:
    return AsyncOpenAI(
        **{"base_url": fake.base_url, "api_key": KEY, "max_retries": 0, "timeout": 5, **options}
    )


def ask(content: str = "hi") -> list[Any]:
    return [{"role": "user", "content": content}]


def test_tool_call_round_trip_keeps_reasoning_content(fake: FakeOpenAI) -> None:
    fake.reply(
        tool_call({"ops": [{"op": "add", "text": "x"}]}, reasoning="Because the user said so."), text("done")
    )

    async def main() -> str:
        async with aclient(fake) as client:
            first = await client.chat.completions.create(model=MODEL, messages=ask(), tools=TOOLS)
            msg = first.choices[0].message
            assert first.model == MODEL and first.object == "chat.completion"
            assert first.choices[0].finish_reason == "tool_calls"
            assert first.usage is not None and first.usage.total_tokens > 0
            assert msg.content is None and msg.tool_calls is not None and len(msg.tool_calls) == 1
            call = msg.tool_calls[0]
            assert call.type == "function"
            assert call.function.name == "memory_review_propose"
            assert json.loads(call.function.arguments) == {"ops": [{"op": "add", "text": "x"}]}
            assert getattr(msg, "reasoning_content", None) == "Because the user said so."
            assert msg.model_dump()["reasoning_content"] == "Because the user said so."

            history = [
                *ask(),
                msg.model_dump(exclude_none=True),
                {"role": "tool", "tool_call_id": call.id, "content": "ok"},
            ]
            second = await client.chat.completions.create(model=MODEL, messages=history, tools=TOOLS)
            assert second.choices[0].message.content == "done"
            assert second.choices[0].finish_reason == "stop"
            return call.id

    call_id = asyncio.run(main())
    assert fake.count == 2 and fake.pending == 0
    first_req, second_req = fake.requests
    assert (
        first_req["model"] == MODEL and first_req["tools"][0]["function"]["name"] == "memory_review_propose"
    )
    sent_back = second_req["messages"][1]
    assert sent_back["role"] == "assistant"
    assert sent_back["reasoning_content"] == "Because the user said so."
    assert sent_back["tool_calls"][0]["id"] == call_id
    assert second_req["messages"][2] == {"role": "tool", "tool_call_id": call_id, "content": "ok"}


def test_malformed_arguments_arrive_verbatim_sync_client(fake: FakeOpenAI) -> None:
    fake.reply(tool_call('{"ops": [', name="other_tool", content="partial"))
    with OpenAI(base_url=fake.base_url, api_key=KEY, max_retries=0, timeout=5) as client:
        resp = client.chat.completions.create(model=MODEL, messages=ask(), tools=TOOLS)
    msg = resp.choices[0].message
    assert msg.content == "partial"
    assert msg.tool_calls is not None
    call = msg.tool_calls[0]
    assert call.type == "function"
    assert call.function.name == "other_tool"
    assert call.function.arguments == '{"ops": ['
    assert getattr(msg, "reasoning_content", None) is None


def test_rate_limit_then_success_is_retried(fake: FakeOpenAI) -> None:
    fake.reply(status(429, "slow down", retry_after=0.01), text("ok"))

    async def main() -> str | None:
        async with aclient(fake, max_retries=1) as client:
            resp = await client.chat.completions.create(model=MODEL, messages=ask())
            return resp.choices[0].message.content

    assert asyncio.run(main()) == "ok"
    assert fake.count == 2


def test_server_error_without_retries(fake: FakeOpenAI) -> None:
    fake.reply(status(500, "boom"))

    async def main() -> None:
        async with aclient(fake) as client:
            await client.chat.completions.create(model=MODEL, messages=ask())

    with pytest.raises(openai.InternalServerError) as excinfo:
        asyncio.run(main())
    assert excinfo.value.status_code == 500
    assert excinfo.value.body == {"message": "boom", "type": "server_error", "param": None, "code": None}
    assert fake.count == 1


def test_wrong_or_missing_api_key_is_401(fake: FakeOpenAI) -> None:
    fake.reply(text("unused"))

    async def main() -> None:
        async with aclient(fake, api_key="sk-wrong") as client:
            await client.chat.completions.create(model=MODEL, messages=ask())

    with pytest.raises(openai.AuthenticationError) as excinfo:
        asyncio.run(main())
    assert excinfo.value.status_code == 401
    assert excinfo.value.code == "invalid_api_key"

    bare = urllib.request.Request(
        fake.base_url + "/chat/completions",
        data=json.dumps({"model": MODEL, "messages": ask()}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as http_error:
        urllib.request.urlopen(bare, timeout=5)
    assert http_error.value.code == 401
    assert json.loads(http_error.value.read())["error"]["type"] == "authentication_error"
    http_error.value.close()
    assert fake.count == 2 and fake.pending == 1  # recorded, but no scripted reply consumed


def test_hang_times_out(fake: FakeOpenAI) -> None:
    fake.reply(hang(), text("after"))

    async def main() -> str | None:
        async with aclient(fake, timeout=0.5) as client:
            started = time.monotonic()
            with pytest.raises(openai.APITimeoutError):
                await client.chat.completions.create(model=MODEL, messages=ask())
            assert time.monotonic() - started < PROMPT_S, "the client's 0.5 s timeout ended the hang"
            resp = await client.chat.completions.create(model=MODEL, messages=ask())
            return resp.choices[0].message.content

    assert asyncio.run(main()) == "after"
    assert fake.count == 2


def test_cancelling_a_slow_request_is_prompt_and_server_keeps_serving(fake: FakeOpenAI) -> None:
    fake.reply(slow(SLOW_S, then=text("too late")), text("next"))

    async def main() -> str | None:
        async with aclient(fake, timeout=60) as client:
            task = asyncio.create_task(client.chat.completions.create(model=MODEL, messages=ask()))
            await until(lambda: fake.count > 0, what="the request to reach the fake")
            started = time.monotonic()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(task, PROMPT_S)
            assert time.monotonic() - started < PROMPT_S, "the cancel did not wait for the slow reply"
            resp = await client.chat.completions.create(model=MODEL, messages=ask())
            return resp.choices[0].message.content

    assert asyncio.run(main()) == "next"
    assert fake.count == 2


def test_slow_reply_arrives_after_the_delay(fake: FakeOpenAI) -> None:
    fake.reply(slow(0.2, then=tool_call({"a": 1})))
    with OpenAI(base_url=fake.base_url, api_key=KEY, max_retries=0, timeout=5) as client:
        started = time.monotonic()
        resp = client.chat.completions.create(model=MODEL, messages=ask())
    assert time.monotonic() - started >= 0.2
    assert resp.choices[0].message.tool_calls is not None


def test_script_exhausted_fails_loudly_without_retries(fake: FakeOpenAI) -> None:
    async def main() -> None:
        async with aclient(fake, max_retries=2) as client:  # x-should-retry: false wins
            await client.chat.completions.create(model=MODEL, messages=ask())

    for expected_count in (1, 2):
        with pytest.raises(openai.InternalServerError, match="script exhausted"):
            asyncio.run(main())
        assert fake.count == expected_count


def test_reply_with_computes_from_the_request(fake: FakeOpenAI) -> None:
    def echo(body: dict[str, Any]) -> Any:
        return text(body["messages"][-1]["content"].upper())

    def strict(body: dict[str, Any]) -> Any:
        assert body["temperature"] == 0, "model must be called deterministically"
        return text("never")

    fake.reply_with(echo)
    fake.reply_with(strict)
    with OpenAI(base_url=fake.base_url, api_key=KEY, max_retries=0, timeout=5) as client:
        resp = client.chat.completions.create(model=MODEL, messages=ask("hello"))
        assert resp.choices[0].message.content == "HELLO"
        with pytest.raises(openai.InternalServerError, match="deterministically"):
            client.chat.completions.create(model=MODEL, messages=ask(), temperature=1)
    assert fake.count == 2


def test_exit_interrupts_a_pending_slow_reply() -> None:
    outcome: list[BaseException] = []
    with FakeOpenAI() as server:
        server.reply(slow(SLOW_S))

        def call() -> None:
            with OpenAI(base_url=server.base_url, api_key="k", max_retries=0, timeout=30) as client:
                try:
                    client.chat.completions.create(model=MODEL, messages=ask())
                except openai.APIError as exc:
                    outcome.append(exc)

        caller = threading.Thread(target=call)
        caller.start()
        wait_until(lambda: server.count > 0, what="the request to reach the fake")
        started = time.monotonic()
    assert time.monotonic() - started < PROMPT_S, "exit did not wait for the slow reply"
    caller.join(PROMPT_S)
    assert not caller.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], openai.APIConnectionError)
