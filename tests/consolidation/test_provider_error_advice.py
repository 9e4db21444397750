"""An HTTP error the provider answers ends the attempt saying, in words, what happened and what
to do (the key and where it came from, the model or base_url, when to retry), then what the
provider said; the logs get only what identifies it (decisions 0373, 0505)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.protocol.consolidation import Status
from tests.fake_openai import FakeOpenAI, Reply, ScriptedHandler, ScriptedServer, status

from .conftest import KEY_ENV, Source, configure, write_source
from .provider_failures import configure_provider, failed_attempt

MODEL = "`fake-model`"
CHOOSE = "choose another model (remem settings model)"


def _said(home: Home, source: Source, fake: FakeOpenAI, *replies: Reply) -> str:
    fake.reply(*replies)
    error, causes = failed_attempt(home, source.id, Status.PROVIDER_FAILED)
    assert causes and all(" — " not in cause for cause in causes), "the provider's words reach no log"
    return error


@pytest.mark.parametrize(
    ("code", "what", "todo"),
    [
        (403, "the provider refused access with this API key", f"check that the account of the key in "
         f"${KEY_ENV} may use model {MODEL}"),
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
        f"${KEY_ENV} — Incorrect API key provided (FakeOpenAI)."
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
        f"the provider refused the API key (HTTP 401 unauthorized, asked {fake.base_url}): check "
        "providers.fake.api_key in credentials.yml, or name the variable holding it in "
        "providers.fake.api_key_env — "
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
