"""An API key goes in an HTTP header, printable ASCII only. One with any other character was
stored and said ready, and every consolidation then failed `provider-failed`, said as an answer
that is not JSON or as a server that is down. It is refused when stored, and said as what it is
wherever it was found, by the character and its position: never the key itself."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.cli.backend import NO_DAEMON_ENV, Backend
from remem.daemon.home import Home
from remem.daemon.protocol.rpc import RpcError, SetApiKeyParams
from tests.daemon.helpers import remem
from tests.fake_openai import FakeOpenAI

from .conftest import KEY_ENV, Source

# A key pasted with a line break in it, one with a letter no header holds, one with a NUL, one
# with an invisible character, and what is said of each (after the surrounding blanks go).
UNSENDABLE = [
    ("  sk-a\nb\n", "character 5 of it is U+000A (a control character)"),
    ("sk-tést", "character 5 of it is U+00E9 (LATIN SMALL LETTER E WITH ACUTE)"),
    ("sk-\x00zero", "character 4 of it is U+0000 (a control character)"),
    ("sk-a\u200bb", "character 5 of it is U+200B (ZERO WIDTH SPACE)"),
]
ASCII_ONLY = ", and an API key is printable ASCII only; "


def run(home: Home, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--home", str(home.root), *args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def refusal_of(home: Home, source: Source) -> dict[str, str]:
    """What `remem consolidate` says of the session, and of the route (`settings model`)."""
    code, out, _ = run(home, "consolidate", source.id, "--json")
    assert code == 2, out
    _, shown, _ = run(home, "settings", "model", "--json")
    settings = json.loads(shown)
    assert settings["keyReady"] is False, settings
    return {**json.loads(out)["error"], "keyProblem": settings["keyProblem"]}


@pytest.mark.parametrize(("key", "said"), UNSENDABLE)
def test_a_key_that_cannot_be_sent_is_refused_and_not_stored(
    home: Home, source: Source, key: str, said: str
) -> None:
    """Through the daemon's `consolidation/credentials/set` (the editor's "Enter API Key…"), as
    any other invalid key is refused there: the stored key and the route are left as they were."""
    api = Backend(home, use_daemon=False).api()
    api.set_api_key(SetApiKeyParams(provider="fake", apiKey="sk-good"))
    before = home.credentials_file.read_bytes()
    with pytest.raises(RpcError) as refused:
        api.set_api_key(SetApiKeyParams(provider="fake", apiKey=key))
    assert refused.value.data == {"code": "INVALID"}
    assert refused.value.message == (
        f"the API key given for `fake` was not stored: {said}{ASCII_ONLY}enter it again"
    )
    assert home.credentials_file.read_bytes() == before


def test_a_blank_key_is_refused_and_does_not_replace_the_stored_one(home: Home, source: Source) -> None:
    api = Backend(home, use_daemon=False).api()
    api.set_api_key(SetApiKeyParams(provider="fake", apiKey="sk-good"))
    with pytest.raises(RpcError) as refused:
        api.set_api_key(SetApiKeyParams(provider="fake", apiKey=" \n"))
    assert refused.value.message == "the API key given for `fake` was not stored: it is blank; enter it again"
    assert "sk-good" in home.credentials_file.read_text()


@pytest.mark.parametrize(
    ("key", "said"),
    [
        UNSENDABLE[0],
        UNSENDABLE[1],
        # A byte that is not UTF-8 (no NUL can be in the environment): Python reads it escaped.
        ("sk-\udcffbyte", "character 4 of it is the byte 0xFF, not UTF-8"),
    ],
)
def test_a_key_in_the_environment_that_cannot_be_sent_is_said_before_any_request(
    home: Home, source: Source, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, key: str, said: str
) -> None:
    monkeypatch.setenv(KEY_ENV, key)
    problem = f"the API key in ${KEY_ENV} cannot be sent: {said}{ASCII_ONLY}"
    problem += f"set {KEY_ENV} to the key as the provider shows it"
    assert refusal_of(home, source) == {"code": "NO_ROUTE", "message": problem, "keyProblem": problem}
    assert fake.count == 0


def test_a_key_in_credentials_yml_that_cannot_be_sent_is_said_before_any_request(
    home: Home, source: Source, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Written by hand (or before remem refused it): read, it is said where it is."""
    monkeypatch.delenv(KEY_ENV)
    home.credentials_file.write_text('providers:\n  fake:\n    api_key: "sk-tést"\n')
    home.credentials_file.chmod(0o600)
    problem = (
        f"the API key at providers.fake.api_key in {home.credentials_file} cannot be sent: "
        f"{UNSENDABLE[1][1]}{ASCII_ONLY}correct it there, or enter the key again"
    )
    assert refusal_of(home, source) == {"code": "NO_ROUTE", "message": problem, "keyProblem": problem}
    assert fake.count == 0


@pytest.mark.slow
def test_a_key_the_daemon_has_and_cannot_send_is_not_said_missing_from_it(
    home: Home, source: Source, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the daemon, a shell holding the key variable heard how to give the daemon its
    key whenever the route had none ready: "the daemon was started without it", though the
    daemon had it, and it was the key that could not be sent."""
    monkeypatch.delenv(NO_DAEMON_ENV, raising=False)
    monkeypatch.setenv(KEY_ENV, UNSENDABLE[1][0])
    try:
        shown = remem(home, "settings", "model")  # starts the daemon in this environment
        refused = remem(home, "consolidate", source.id)
    finally:
        remem(home, "daemon", "stop")
    for said in (shown.stdout, refused.stderr):
        assert f"the API key in ${KEY_ENV} cannot be sent" in said and "started without it" not in said, said
    assert refused.returncode == 2 and fake.count == 0
