"""A provider that answers 200 with what is not a chat completion, or cannot be reached at all
for its base_url: the attempt ends `provider-failed`, saying what was wrong, and nothing crashes."""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
from pathlib import Path

import pytest

from remem.daemon.consolidation.models import list_models
from remem.daemon.consolidation.proposal import TOOL_NAME
from remem.daemon.consolidation.route import Route
from remem.daemon.consolidation.runner import Consolidator
from remem.daemon.consolidation.worker import ANSWER_MAX_BYTES
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.consolidation import Status
from remem.daemon.sessions.reader import read_session

from .conftest import KEY_ENV, proposal, put, write_source
from .provider_failures import (
    GzipBomb,
    HugeAnswers,
    RawAnswers,
    chat_answer,
    configure_provider,
    failed_with,
)

_GOOD = {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "usage": None}


def _json(**fields: object) -> tuple[str, bytes]:
    return "application/json", json.dumps({**_GOOD, **fields}).encode()


ANSWERS = {
    "html": (("text/html", b"<html>proxy login</html>"), "the answer is text, not a chat completion"),
    "sse": (("text/event-stream", b'data: {"choices": []}\n\n'), "the answer is text, not a chat completion"),
    "not-json": (("application/json", b'{"choices": [ {"mess'), "the answer is not valid JSON"),
    "a-list": (("application/json", b"[1, 2]"), "the answer is a JSON list, not a chat completion"),
    "no-choices": (_json(choices=[]), "the answer holds no choices"),
    "null-choices": (_json(choices=None), "the answer holds no choices"),
    "no-message": (_json(choices=[{"index": 0, "finish_reason": "stop"}]), "first choice holds no message"),
}


@pytest.mark.parametrize("case", sorted(ANSWERS))
def test_a_200_that_is_no_chat_completion_fails_the_attempt_saying_why(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    (content_type, body), why = ANSWERS[case]
    with RawAnswers(content_type, body) as raw:
        url = f"{raw.origin}/v1"
        error = failed_with(home, tmp_path, url)
        assert raw.count == 1, "a malformed answer is not retried"
    assert why in error and error.endswith(f"(asked {url})")


def test_an_answer_too_large_to_record_fails_the_attempt_and_its_log_reads_back(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step is recorded in the worker log, one line, which settles a crash: an answer past
    what a line may hold (here a 9 MiB tool call) would leave a log no one reads back, so a
    Global commit made after it went unrecorded. The answer is refused before it is recorded."""
    monkeypatch.setenv(KEY_ENV, "sk-test")
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": TOOL_NAME, "arguments": "x" * (9 << 20)},
    }
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    body = _json(choices=[{"index": 0, "finish_reason": "tool_calls", "message": message}])
    with RawAnswers(*body) as raw:
        error = failed_with(home, tmp_path, f"{raw.origin}/v1")
    assert error.startswith(f"the answer is {9 << 20} bytes of text and tool arguments; a consolidation step")
    logs = [p for p in home.sessions.rglob("session.jsonl*") if p.is_file()]
    assert logs and all(read_session(p).header for p in logs), "every worker log reads back"


@pytest.mark.parametrize("url", ["http://[::1", "not-a-url", "ftp://127.0.0.1/v1", "127.0.0.1:8000/v1"])
def test_a_base_url_that_is_no_url_fails_the_attempt_saying_so(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    """Without an http(s) scheme the client fails only when it asks, as if nothing answered
    there: the user was told to start the provider's server."""
    monkeypatch.setenv(KEY_ENV, "sk-test")
    error = failed_with(home, tmp_path, url)
    assert error.startswith("the provider's base_url is not a valid URL") and f"(asked {url})" in error
    assert "nothing answered" not in error, error


def test_a_login_in_the_base_url_is_never_reported(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    with RawAnswers("text/html", b"<html>proxy login</html>") as raw:
        host = raw.origin.removeprefix("http://")
        error = failed_with(home, tmp_path, f"http://alice:hunter2@{host}/v1")
    assert "hunter2" not in error and "alice" not in error
    assert error.endswith(f"(asked http://[redacted userinfo]@{host}/v1)")


def test_a_base_url_that_is_no_url_lists_no_models_and_says_so() -> None:
    route = Route(
        provider="mine", model="m", base_url="http://alice:hunter2@[::1", api_key="k",
        max_tokens=10, max_tokens_setting="consolidation.max_tokens", timeout_seconds=5,
        max_input_bytes=1000, debug=False,
    )  # fmt: skip
    models, note = asyncio.run(list_models(route))
    assert models == [] and note is not None and "hunter2" not in note
    assert note.startswith("mine's base_url http://[redacted userinfo]@[::1 is not a valid URL")


def test_a_provider_nothing_listens_for_is_said_once_with_what_to_do(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refused connection is said in words, that nothing answered there and what to do: not
    httpx's chain of errors of the same name and words, which is for the log."""
    monkeypatch.setenv(KEY_ENV, "sk-test")
    with socket.socket() as probe:  # a port nothing listens on once it is closed
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    error = failed_with(home, tmp_path, url)
    assert error == (
        f"no whole answer from {url}: nothing answered there: start the provider's server, or choose "
        "another model (remem settings model)"
    ), error


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_an_oversized_answer_is_refused_before_it_is_read_whole(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunked: bool
) -> None:
    """A broken proxy's answer of 96 MiB, far past any answer the step limit lets through even
    with every byte escaped: refused before it is all read (the server sees the client close
    early), where it was read whole into memory and only then measured, and not asked again."""
    monkeypatch.setenv(KEY_ENV, "sk-test")
    total = 32 * ANSWER_MAX_BYTES
    with HugeAnswers(total, chunked=chunked) as huge:
        error = failed_with(home, tmp_path, f"{huge.origin}/v1")
    assert len(huge.sent) == 1, "an oversized answer is not asked for again"
    assert huge.sent[0] < total // 2, f"{huge.sent[0]} of {total} bytes were sent before the refusal"
    size = f"{total + len(chat_answer({'content': ''}))} bytes" if not chunked else "over "
    assert error.startswith(f"the answer is {size}"), error
    assert "a consolidation step may be at most 3 MiB of text and tool arguments" in error


def test_a_gzip_answer_decoding_past_the_bound_is_refused_as_it_decodes(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A few KB of gzip that decode to 27 MiB, the rest held back: refused once what it decoded
    passed the bound, the client closing without waiting for the rest, where the bound counted
    the KB sent and a bomb was decoded whole into memory; and not asked again."""
    monkeypatch.setenv(KEY_ENV, "sk-test")
    with GzipBomb(9 * ANSWER_MAX_BYTES) as bomb:
        error = failed_with(home, tmp_path, f"{bomb.origin}/v1")
    assert bomb.closed == [True], "the client waited for the rest of the answer"
    assert error.startswith(f"the answer is over {8 * ANSWER_MAX_BYTES} bytes"), error


def test_a_gzip_answer_commits(home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    root = tmp_path / "dsh-sessions"
    source = write_source(root, str(tmp_path / "project"))
    arguments = json.dumps(proposal(put("prefer-uv", source.evidence())))
    call = {"id": "c1", "type": "function", "function": {"name": TOOL_NAME, "arguments": arguments}}
    body = gzip.compress(chat_answer({"tool_calls": [call]}))
    with RawAnswers("application/json", body, encoding="gzip") as raw:
        configure_provider(home, f"{raw.origin}/v1", root)
        result = asyncio.run(Consolidator(home).consolidate(source.id, lambda phase, data: None))
    assert result.status is Status.COMMITTED
    workspace = MemoryStore(home).read_workspace(WorkspaceId.from_cwd(source.cwd))
    assert [r.name for r in workspace.records] == ["prefer-uv"]
