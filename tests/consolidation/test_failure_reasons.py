"""A failed attempt says why: what was wrong with the model's last answer when no valid final
proposal came within the steps, and the provider's refusal when the timeout met the SDK waiting
to retry it. The receipt says it, the logs only its kind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remem.daemon.consolidation.proposal import TOOL_NAME
from remem.daemon.consolidation.worker import MAX_STEPS
from remem.daemon.home import Home
from remem.daemon.protocol.consolidation import Status
from tests.fake_openai import FakeOpenAI, Reply, hang, status, text, tool_call

from .conftest import KEY_ENV, Source, configure, proposal, put, write_source
from .provider_failures import RawAnswers, configure_provider, failed_attempt

GAVE_UP = f"no valid final proposal within {MAX_STEPS} model steps; the last answer"


def _answered(home: Home, fake: FakeOpenAI, source: Source, *replies: Reply) -> tuple[str, list[str]]:
    fake.reply(*replies)
    return failed_attempt(home, source.id, Status.INVALID_PROPOSAL)


def test_arguments_that_are_not_json_are_named(home: Home, fake: FakeOpenAI, source: Source) -> None:
    broken = tool_call('{"final": true, "outcome": "changes", "changes": [')
    error, causes = _answered(home, fake, source, *[broken] * MAX_STEPS)
    assert (
        error
        == f"{GAVE_UP}: rejected: - arguments: Invalid JSON: EOF while parsing a list at line 1 column 50"
    )
    assert causes == [f"{GAVE_UP} was rejected"]


def test_an_evidence_range_that_does_not_exist_is_named(home: Home, fake: FakeOpenAI, source: Source) -> None:
    wrong = tool_call(proposal(put("prefer-uv", [{"fromSeq": 10_000, "toSeq": 10_001}])))
    error, causes = _answered(home, fake, source, *[wrong] * MAX_STEPS)
    assert error.startswith(f"{GAVE_UP}: rejected: - ") and "\n" not in error
    assert "evidence 10000-10001 is not one of the turn ranges shown" in error
    assert causes == [f"{GAVE_UP} was rejected"], "the logs get no word of the answer"


def test_a_wrong_tool_name_is_named_redacted(home: Home, fake: FakeOpenAI, source: Source) -> None:
    key = "sk-proj-" + "a1B2c3D4" * 4  # what the model quotes may be a secret of the session
    wrong = tool_call(proposal(put("prefer-uv", source.evidence())), name=key)
    error, causes = _answered(home, fake, source, *[wrong] * MAX_STEPS)
    assert error == f"{GAVE_UP}: rejected: there is no tool `[redacted api-key]`; use `{TOOL_NAME}`"
    assert causes == [f"{GAVE_UP} was rejected"]


def test_an_answer_without_a_tool_call_is_named(home: Home, fake: FakeOpenAI, source: Source) -> None:
    error, causes = _answered(home, fake, source, *[text("I would remember uv.")] * MAX_STEPS)
    assert error == causes[0] == f"{GAVE_UP} called no tool"


def test_drafts_never_sent_final_are_named(home: Home, fake: FakeOpenAI, source: Source) -> None:
    draft = tool_call(proposal(put("prefer-uv", source.evidence()), final=False))
    error, causes = _answered(home, fake, source, *[draft] * MAX_STEPS)
    assert error == causes[0] == f"{GAVE_UP} was a valid draft, never sent with `final: true`"


def test_the_last_answer_is_what_is_said(home: Home, fake: FakeOpenAI, source: Source) -> None:
    draft = tool_call(proposal(put("prefer-uv", source.evidence()), final=False))
    error, _ = _answered(home, fake, source, *[draft] * (MAX_STEPS - 1), text("Done."))
    assert error == f"{GAVE_UP} called no tool"


def test_a_long_rejection_is_cut_to_one_line(home: Home, fake: FakeOpenAI, source: Source) -> None:
    many = [put(f"Bad Name {n}", source.evidence()) for n in range(20)]
    error, _ = _answered(home, fake, source, *[tool_call(proposal(*many))] * MAX_STEPS)
    assert error.startswith(f"{GAVE_UP}: rejected: - ") and error.endswith("…")
    assert len(error) == len(GAVE_UP) + 2 + 300 and "\n" not in error


@pytest.mark.parametrize(
    ("provider_limit", "limit", "setting"),
    [(None, 8192, "consolidation.max_tokens"), (4096, 4096, "providers.fake.max_output_tokens")],
)
def test_an_answer_cut_off_by_the_token_limit_is_named(
    home: Home,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    provider_limit: int | None,
    limit: int,
    setting: str,
) -> None:
    """The advice names the setting that set the limit: a larger `consolidation.max_tokens`
    changes nothing while the provider's `max_output_tokens` is the lower."""
    monkeypatch.setenv(KEY_ENV, "sk-test")
    call = {"id": "c1", "type": "function", "function": {"name": TOOL_NAME, "arguments": '{"final": tr'}}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    choice = {"index": 0, "finish_reason": "length", "message": message}
    body = {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [choice]}
    with RawAnswers("application/json", json.dumps(body).encode()) as raw:
        root = tmp_path / "dsh-sessions"
        configure_provider(home, f"{raw.origin}/v1", root, provider_limit)
        session = write_source(root, str(tmp_path / "project"))
        error, causes = failed_attempt(home, session.id, Status.INVALID_PROPOSAL)
    cut = f"{GAVE_UP} was cut off at max_tokens {limit} (finish_reason length)"
    assert error == f"{cut}: raise {setting}"
    assert causes == [cut]


def test_a_timeout_while_the_sdk_waits_out_a_429_names_it(
    home: Home, fake: FakeOpenAI, tmp_path: Path
) -> None:
    """The SDK sleeps the 30 s the provider asked before it retries: the timeout lands in the
    sleep, and the user must read the provider's refusal, not a slow model."""
    root = tmp_path / "dsh-sessions"
    configure(home, fake, root, timeout_seconds=0.5)
    source = write_source(root, str(tmp_path / "project"))
    fake.reply(status(429, "slow down", retry_after=30))
    error, causes = failed_attempt(home, source.id, Status.PROVIDER_FAILED)
    assert (
        error
        == causes[0]
        == (
            f"no final proposal within 0.5 s from {fake.base_url}: the provider answered 429 (rate limited) "
            "and asked to wait 30 s; raise consolidation.timeout_seconds or try later"
        )
    )
    assert fake.count == 1


def test_a_timeout_after_the_provider_answered_is_only_a_timeout(
    home: Home, fake: FakeOpenAI, tmp_path: Path
) -> None:
    """A 503 answered and retried, then a model that never answers: the last answer was no error,
    and the network reached the provider."""
    root = tmp_path / "dsh-sessions"
    configure(home, fake, root, timeout_seconds=1.5)
    source = write_source(root, str(tmp_path / "project"))
    fake.reply(text("Let me look."), status(503, retry_after=0.1), hang())
    error, _ = failed_attempt(home, source.id, Status.PROVIDER_FAILED)
    assert error == (
        f"no final proposal within 1.5 s from {fake.base_url}: the provider answered before, not this "
        "step in time; raise consolidation.timeout_seconds"
    )


def test_a_timeout_with_no_answer_at_all_says_what_to_do(
    home: Home, fake: FakeOpenAI, tmp_path: Path
) -> None:
    root = tmp_path / "dsh-sessions"
    configure(home, fake, root, timeout_seconds=0.5)
    source = write_source(root, str(tmp_path / "project"))
    fake.reply(hang())
    error, causes = failed_attempt(home, source.id, Status.PROVIDER_FAILED)
    assert (
        error
        == causes[0]
        == (
            f"no final proposal within 0.5 s from {fake.base_url}: no answer came; raise "
            "consolidation.timeout_seconds if the model is that slow, or check the network and base_url"
        )
    )
