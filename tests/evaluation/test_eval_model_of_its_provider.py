"""`remem eval --provider P` without `--model` sends P a model of P's own: the one your settings
chose when they route to P, else P's default; never another provider's default or choice
(decision 0500). What is sent is read from the requests the real `openai` client made."""

from __future__ import annotations

import pytest

from remem.daemon.home import Home
from remem.daemon.settings import ConsolidationSettings
from tests.fake_openai import FakeOpenAI
from tests.scripted_model import serve

from .conftest import KEY_ENV
from .eval_command import remem

pytestmark = pytest.mark.slow  # each run is the real CLI in its own process
CASE = "dsh/decision"  # one case that asks the model
DEEPSEEK = ConsolidationSettings()  # the default route: deepseek and its default model


def _route(home: Home, fake: FakeOpenAI, consolidation: str) -> None:
    """`consolidation` as the user's route, every provider eval may run with served by `fake`."""
    served = "".join(
        f"  {name}:\n    base_url: {fake.base_url}\n    api_key_env: {KEY_ENV}\n"
        for name in ("deepseek", "openai", "anthropic")
    )
    home.settings_file.write_text(f"consolidation:\n{consolidation}providers:\n{served}")


def _sent(fake: FakeOpenAI) -> set[str]:
    return {request["model"] for request in fake.requests}


@pytest.mark.parametrize(
    ("route", "chosen_for"),
    [
        ("  provider: anthropic\n", "no provider: none is chosen for anthropic"),
        (f"  provider: {DEEPSEEK.provider}\n  model: deepseek-v4-pro\n", DEEPSEEK.provider),
    ],
    ids=["none-chosen", "chosen-for-deepseek"],
)
def test_a_provider_of_no_known_model_is_not_sent_another_providers(
    user_home: Home, fake: FakeOpenAI, route: str, chosen_for: str
) -> None:
    _route(user_home, fake, route)
    serve(fake, "good")
    refused = remem(user_home, "--provider", "openai", "--cases", CASE)
    assert refused.returncode == 2, (chosen_for, refused.stdout, refused.stderr)
    assert "give --model, the model id as openai names it" in refused.stderr, refused.stderr
    assert fake.count == 0, f"sent {_sent(fake)} to openai"


def test_a_provider_is_sent_its_own_default_or_the_model_chosen_for_it(
    user_home: Home, fake: FakeOpenAI
) -> None:
    serve(fake, "good")
    _route(user_home, fake, "  provider: anthropic\n  model: claude-sonnet-4-5\n")
    default = remem(user_home, "--provider", DEEPSEEK.provider, "--cases", CASE)
    assert default.returncode == 0, default.stderr
    assert _sent(fake) == {DEEPSEEK.model}, "deepseek's default, not the model chosen for anthropic"

    _route(user_home, fake, "  provider: openai\n  model: gpt-4.1-mini\n")
    kept = remem(user_home, "--provider", "openai", "--cases", CASE)
    given = remem(user_home, "--provider", "anthropic", "--model", "claude-opus-4-6", "--cases", CASE)
    assert kept.returncode == 0 and given.returncode == 0, (kept.stderr, given.stderr)
    assert _sent(fake) == {DEEPSEEK.model, "gpt-4.1-mini", "claude-opus-4-6"}
