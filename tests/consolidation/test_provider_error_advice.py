"""An HTTP error the provider answers ends the attempt saying, in words, what happened and what
to do (the key and where it came from, the model or base_url, when to retry), then what the
provider said; the logs get only what identifies it (decisions 0373, 0505)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.protocol.consolidation import Status
from tests.daemon.helpers import remem
from tests.fake_openai import FakeOpenAI, Reply, ScriptedHandler, ScriptedServer, status, tool_call

from .conftest import KEY_ENV, Source, configure, proposal, put, write_source
from .provider_failures import configure_provider, failed_attempt

MODEL = "`fake-model`"
CHOOSE = "choose another model (remem settings model)"
RESTART = (
    f"(remem read ${KEY_ENV} when it started, and a running daemon keeps that value: "
    "after changing it, run `remem daemon stop`)"
)


def _said(home: Home, source: Source, fake: FakeOpenAI, *replies: Reply) -> str:
    fake.reply(*replies)
    error, causes = failed_attempt(home, source.id, Status.PROVIDER_FAILED)
    assert causes and all(" — " not in cause for cause in causes), "the provider's words reach no log"
    return error


@pytest.mark.parametrize(
    ("code", "what", "todo"),
    [
        (403, "the provider refused access with this API key", f"check that the account of the key in "
         f"${KEY_ENV} may use model {MODEL} {RESTART}"),
        (402, "the provider's account has no balance or quota left",
         f"top it up at the provider, or {CHOOSE}"),
        (400, "the provider refused the request", f"check that model {MODEL} takes max_tokens 8192 "
         f"(consolidation.max_tokens) and an input this long, or {CHOOSE}"),
    ],
)  # fmt: skip
def test_a_refusal_says_what_to_check(
    home: Home, fake: FakeOpenAI, source: Source, code: int, what: str, todo: str
) -> None:
    error = _said(home, source, fake, status(code, "the provider's own words"))
    name = {403: "forbidden", 402: "payment required", 400: "bad request"}
    assert (
        error
        == f"{what} (HTTP {code} {name[code]}, asked {fake.base_url}): {todo} — the provider's own words"
    )
    assert fake.count == 1, "a refusal is not retried"


def test_a_refused_key_names_the_variable_it_came_from_never_the_key(
    home: Home, fake: FakeOpenAI, source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-wrong-key-1234")
    error, causes = failed_attempt(home, source.id, Status.PROVIDER_FAILED)
    assert error == (
        f"the provider refused the API key (HTTP 401 unauthorized, asked {fake.base_url}): check the key in "
        f"${KEY_ENV} {RESTART} — Incorrect API key provided (FakeOpenAI)."
    )
    assert "sk-wrong" not in error + " ".join(causes)


def test_a_refused_key_from_credentials_yml_names_its_place(
    home: Home, fake: FakeOpenAI, source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV)
    home.credentials_file.write_text("providers: {fake: {api_key: sk-stored-wrong}}\n")
    os.chmod(home.credentials_file, 0o600)
    error = failed_attempt(home, source.id, Status.PROVIDER_FAILED)[0]
    assert error.startswith(
        f"the provider refused the API key (HTTP 401 unauthorized, asked {fake.base_url}): check the key at "
        f"providers.fake.api_key in credentials.yml (read as remem's environment has no ${KEY_ENV}) — "
    ), error


@pytest.mark.parametrize("refusal", [401, 403])
def test_a_provider_naming_no_key_variable_is_said_to_send_none_whatever_credentials_yml_holds(
    home: Home, tmp_path: Path, refusal: int
) -> None:
    """Without api_key_env the route sends no key of the user's and never reads credentials.yml:
    the key stored there for it, the one the server takes, changes nothing, and is not the place
    to check."""
    root = tmp_path / "dsh-sessions"
    home.ensure_layout()
    home.credentials_file.write_text("providers: {mine: {api_key: sk-right}}\n")
    os.chmod(home.credentials_file, 0o600)
    with FakeOpenAI(api_key="sk-right" if refusal == 401 else None) as fake:
        home.settings_file.write_text(
            "consolidation:\n  provider: mine\n  model: fake-model\n"
            f"providers:\n  mine:\n    base_url: {fake.base_url}\n"
            f"sessions:\n  roots: [{str(root)!r}]\n"
        )
        source = write_source(root, str(tmp_path / "project"))
        if refusal == 403:  # a 401 is the fake's own, refusing the key the SDK sends, none of the user's
            fake.reply(status(refusal, "no key"))
        error, _ = failed_attempt(home, source.id, Status.PROVIDER_FAILED)
        url = fake.base_url
    name = {401: "unauthorized", 403: "forbidden"}[refusal]
    assert error == (
        f"the provider wants an API key (HTTP {refusal} {name}, asked {url}): remem sends none, as "
        "providers.mine.api_key_env is not set; set it to the variable holding the key (credentials.yml "
        "is read only for a provider that names one)"
        + (" — Incorrect API key provided (FakeOpenAI)." if refusal == 401 else " — no key")
    ), error


def test_a_base_url_without_the_api_path_is_said_to_be_checked(
    home: Home, fake: FakeOpenAI, tmp_path: Path
) -> None:
    """The fake serves /v1/chat/completions only: without /v1, the server itself answers 404."""
    root = tmp_path / "dsh-sessions"
    configure(home, fake, root)
    settings = home.settings_file.read_text()
    home.settings_file.write_text(settings.replace(fake.base_url, fake.origin))
    source = write_source(root, str(tmp_path / "project"))
    error, _ = failed_attempt(home, source.id, Status.PROVIDER_FAILED)
    assert error.startswith(
        f"the provider has no model {MODEL}, or no chat completions API there (HTTP 404 not found, asked "
        f"{fake.origin}): check the model id (remem settings model) and that base_url is the API's (most "
        "end in /v1) — FakeOpenAI: no route POST /chat/completions"
    ), error


@pytest.mark.parametrize(
    ("code", "said"),
    [
        (429, "the provider is rate limiting this key (HTTP 429 rate limited, asked {url}): retry in 0.01 s, "
         "as it asks, or raise the account's limits"),
        (503, "the provider failed on its side (HTTP 503 service unavailable, asked {url}): retry in 0.01 s, "
         "as it asks, or see that server's log"),
    ],
)  # fmt: skip
def test_a_provider_still_refusing_after_the_retries_says_when_to_retry(
    home: Home, fake: FakeOpenAI, source: Source, code: int, said: str
) -> None:
    """The SDK retries these twice, waiting what `Retry-After` asks; the last answer is said."""
    error = _said(home, source, fake, *[status(code, "busy", retry_after=0.01)] * 3)
    assert error == said.format(url=fake.base_url) + " — busy"
    assert fake.count == 3


class _QuotaHandler(ScriptedHandler):
    """Answers every request 429 as OpenAI does when the account's quota is spent."""

    fake_name = "SpentQuota"

    def do_POST(self) -> None:  # noqa: N802 (stdlib naming)
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._record({})
        error = {"message": "You exceeded your current quota", "type": "insufficient_quota"}
        self._send_json(429, {"error": {**error, "param": None, "code": "insufficient_quota"}})


class SpentQuota(ScriptedServer):
    handler = _QuotaHandler


def test_a_spent_quota_is_not_said_to_be_a_rate_limit(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Retrying later does nothing for a spent quota, which OpenAI answers 429 too."""
    monkeypatch.setenv(KEY_ENV, "sk-test")
    with SpentQuota() as spent:
        url = f"{spent.origin}/v1"
        root = tmp_path / "dsh-sessions"
        configure_provider(home, url, root)
        source = write_source(root, str(tmp_path / "project"))
        error, _ = failed_attempt(home, source.id, Status.PROVIDER_FAILED)
    assert error == (
        f"the provider's account has no balance or quota left (HTTP 429 rate limited, asked {url}): top it "
        f"up at the provider, or {CHOOSE} — You exceeded your current quota"
    )


class _ContextHandler(ScriptedHandler):
    """Answers every request 400 as OpenAI does when the input and max_tokens overflow the model's
    context window."""

    fake_name = "ContextTooLong"

    def do_POST(self) -> None:  # noqa: N802 (stdlib naming)
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._record({})
        error = {
            "message": "This model's maximum context length is 8192 tokens",
            "type": "invalid_request_error",
        }
        self._send_json(400, {"error": {**error, "param": "messages", "code": "context_length_exceeded"}})


class ContextTooLong(ScriptedServer):
    handler = _ContextHandler


def test_an_input_longer_than_the_model_takes_names_what_to_change(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """consolidation.max_input_bytes does not cut an input: lowered, it ends a longer one
    evidence-too-large unsent, as the advice says."""
    monkeypatch.setenv(KEY_ENV, "sk-test")
    with ContextTooLong() as small:
        url = f"{small.origin}/v1"
        root = tmp_path / "dsh-sessions"
        configure_provider(home, url, root)
        source = write_source(root, str(tmp_path / "project"))
        error, _ = failed_attempt(home, source.id, Status.PROVIDER_FAILED)
        assert small.count == 1, "a context too long is not retried"
    assert error == (
        f"the input is longer than model {MODEL} takes (HTTP 400 bad request, asked {url}): choose a model "
        "with a longer context (remem settings model), or lower max_tokens 8192 (consolidation.max_tokens); "
        "consolidation.max_input_bytes (131072), set under what the model takes, ends a longer input "
        "evidence-too-large before it is sent — This model's maximum context length is 8192 tokens"
    )


@pytest.mark.slow
def test_a_key_changed_since_the_daemon_started_is_said_to_need_a_restart(
    home: Home, fake: FakeOpenAI, source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon keeps the environment it was started in: a key corrected in this shell since
    is not the one it sends, which the refusal says, with how to have it read again."""
    monkeypatch.delenv(NO_DAEMON_ENV, raising=False)
    monkeypatch.setenv(KEY_ENV, "sk-wrong-key-1234")
    try:
        assert remem(home, "daemon", "start").returncode == 0
        monkeypatch.setenv(KEY_ENV, "sk-test")  # corrected here, after the daemon started
        refused = remem(home, "consolidate", source.id)
        assert refused.returncode == 1 and f"check the key in ${KEY_ENV} {RESTART}" in refused.stdout, refused
        assert remem(home, "daemon", "stop").returncode == 0
        fake.reply(tool_call(proposal(put("prefer-uv", source.evidence()))))
        done = remem(home, "consolidate", source.id)
        assert done.returncode == 0 and done.stdout.startswith("committed"), done
    finally:
        remem(home, "daemon", "stop")


NO_CREDIT = (
    "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade "
    "or purchase credits."
)


class _NoCreditHandler(ScriptedHandler):
    """Answers every request 400 with the body Anthropic answers for an organization whose credit is
    spent: its own error shape, with no `code`."""

    fake_name = "NoCredit"

    def do_POST(self) -> None:  # noqa: N802 (stdlib naming)
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._record({})
        self._send_json(
            400, {"type": "error", "error": {"type": "invalid_request_error", "message": NO_CREDIT}}
        )


class NoCredit(ScriptedServer):
    handler = _NoCreditHandler


def test_a_spent_anthropic_credit_says_where_to_buy_it_not_to_check_the_request(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Anthropic says it with a 400 like a refused parameter: checking max_tokens would not help."""
    monkeypatch.setenv(KEY_ENV, "sk-test")
    with NoCredit() as spent:
        url = f"{spent.origin}/v1"
        root = tmp_path / "dsh-sessions"
        configure_provider(home, url, root)
        source = write_source(root, str(tmp_path / "project"))
        error, causes = failed_attempt(home, source.id, Status.PROVIDER_FAILED)
        assert spent.count == 1, "a spent credit is not retried"
    assert error == (
        f"the Anthropic account has no credit left (HTTP 400 bad request, asked {url}): buy credits for the "
        f"organization of the key in ${KEY_ENV} in the Anthropic Console, under Plans & Billing (another "
        f"organization's credit does not count), or {CHOOSE} — {NO_CREDIT}"
    )
    assert not any("credit" in cause for cause in causes), "the provider's words reach no log"
