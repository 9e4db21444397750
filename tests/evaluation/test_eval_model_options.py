"""`remem eval`'s refusals of a model name what the user wrote: the `--model` option when it is
the model a provider does not serve (not settings.yml, which holds none such), and a model the
settings chose only when they set one (decision 0500)."""

from __future__ import annotations

import pytest

from remem.daemon.home import Home
from remem.daemon.settings import ConsolidationSettings
from tests.fake_openai import FakeOpenAI

from .conftest import KEY_ENV
from .eval_command import remem

pytestmark = pytest.mark.slow  # the real CLI in its own process
CASE = "dsh/decision"  # one case that asks the model
DEEPSEEK = ConsolidationSettings()  # the default route: deepseek and its default model


@pytest.mark.parametrize(
    ("route", "options"),
    [
        ("  provider: openai\n  model: gpt-4o\n", ("--provider", "anthropic")),
        ("  provider: anthropic\n  model: claude-sonnet-4-5\n", ()),
    ],
    ids=["provider-given", "provider-configured"],
)
def test_deepseeks_default_given_for_anthropic_is_refused_naming_the_option(
    user_home: Home, fake: FakeOpenAI, route: str, options: tuple[str, ...]
) -> None:
    """At the URL remem gives anthropic: one of the user's own may serve it (below)."""
    user_home.settings_file.write_text(f"consolidation:\n{route}")
    refused = remem(user_home, *options, "--model", DEEPSEEK.model, "--cases", CASE)
    assert refused.returncode == 2, (refused.stdout, refused.stderr)
    assert (
        f"--model `{DEEPSEEK.model}` is {DEEPSEEK.provider}'s default model, which anthropic does not serve: "
        "give --model, the model id as anthropic names it"
    ) in " ".join(refused.stderr.split()), refused.stderr
    assert "settings.yml" not in refused.stderr, "the settings hold no such model"
    assert fake.count == 0


@pytest.mark.parametrize(
    "settings", ["", "consolidation:\n  provider: deepseek\n"], ids=["empty", "provider-only"]
)
def test_a_default_nobody_chose_is_not_named_as_chosen(
    user_home: Home, fake: FakeOpenAI, settings: str
) -> None:
    user_home.settings_file.write_text(settings)
    refused = remem(user_home, "--provider", "openai", "--cases", CASE)
    assert refused.returncode == 2, (refused.stdout, refused.stderr)
    said = " ".join(refused.stderr.split())
    assert "remem knows no default model of openai: give --model, the model id as openai names it" in said, (
        said
    )
    assert "chosen for" not in said and DEEPSEEK.model not in said, said
    assert fake.count == 0


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_deepseeks_default_given_for_a_proxy_of_the_users_own_is_measured(
    user_home: Home, fake: FakeOpenAI, provider: str
) -> None:
    """A base_url the user set (OpenRouter, a gateway) may serve it (decision 0506, amended)."""
    user_home.settings_file.write_text(
        f"providers:\n  {provider}:\n    base_url: {fake.base_url}\n    api_key_env: {KEY_ENV}\n"
    )
    measured = remem(user_home, "--provider", provider, "--model", DEEPSEEK.model, "--cases", "dsh/empty")
    assert measured.returncode == 0, measured.stderr
    assert f"Measured {provider}/{DEEPSEEK.model}" in measured.stdout, measured.stdout
