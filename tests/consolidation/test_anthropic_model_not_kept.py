"""`remem settings model` without `--model` for a provider without a default model (decision
0493): the model another provider was given, or the settings' default (deepseek's), is never
written as its choice; the read says no model is chosen (`model: null`)."""

from __future__ import annotations

import json

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.settings import ConsolidationSettings, parse_settings
from tests.daemon.helpers import remem

MODEL = "claude-sonnet-4-5"
DEFAULTS = ConsolidationSettings()


@pytest.fixture(params=["daemon", "no-daemon"])
def through(request: pytest.FixtureRequest, home: Home, monkeypatch: pytest.MonkeyPatch) -> object:
    if request.param == "daemon":
        monkeypatch.delenv(NO_DAEMON_ENV, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    home.ensure_layout()
    yield
    remem(home, "daemon", "stop")


@pytest.mark.usefixtures("through")
def test_a_current_provider_without_a_chosen_model_asks_for_one(home: Home) -> None:
    home.settings_file.write_text("consolidation:\n  provider: anthropic\n")
    before = home.settings_file.read_bytes()
    read = remem(home, "settings", "model", "--json")
    shown = remem(home, "settings", "model")
    again = remem(home, "settings", "model", "--provider", "anthropic")
    elsewhere = remem(home, "settings", "model", "--provider", "openai")
    assert json.loads(read.stdout)["model"] is None, read.stdout
    assert json.loads(read.stdout)["keyReady"] is False
    assert shown.stdout.startswith("anthropic/(no model chosen) — anthropic has no default model"), (
        shown.stdout
    )
    assert again.returncode == 2, again.stderr
    assert "anthropic has no default model: give --model" in again.stderr
    assert elsewhere.returncode == 2, elsewhere.stderr
    assert "remem knows no default model of openai: give --model" in elsewhere.stderr
    assert home.settings_file.read_bytes() == before


@pytest.mark.usefixtures("through")
def test_switching_to_it_does_not_carry_another_providers_model(home: Home) -> None:
    home.settings_file.write_text("consolidation:\n  provider: deepseek\n  model: deepseek-v4-flash\n")
    before = home.settings_file.read_bytes()
    switched = remem(home, "settings", "model", "--provider", "anthropic")
    assert switched.returncode == 2, switched.stderr
    assert (
        "anthropic has no default model, and `deepseek-v4-flash` is the one chosen for deepseek: give --model"
        in switched.stderr
    )
    assert home.settings_file.read_bytes() == before
    chosen = remem(home, "settings", "model", "--provider", "anthropic", "--model", MODEL)
    kept = remem(home, "settings", "model", "--provider", "anthropic", "--json")
    assert chosen.returncode == 0 and kept.returncode == 0, kept.stderr
    assert json.loads(kept.stdout)["model"] == MODEL and json.loads(kept.stdout)["keyReady"] is True


@pytest.mark.usefixtures("through")
def test_switching_to_deepseek_takes_its_default_model(home: Home) -> None:
    """The way back: the provider whose model the settings' default is (deepseek) is given that
    model, as a fresh settings file routes to it; one of which no model is known asks (above)."""
    home.settings_file.write_text("consolidation:\n  provider: anthropic\n")
    shown = remem(home, "settings", "model", "--provider", DEFAULTS.provider)
    read = remem(home, "settings", "model", "--json")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f"{DEFAULTS.provider}/{DEFAULTS.model}"), shown.stdout
    assert "was kept from" not in shown.stderr, "no model was chosen to keep: the default is given"
    assert (json.loads(read.stdout)["provider"], json.loads(read.stdout)["model"]) == (
        DEFAULTS.provider,
        DEFAULTS.model,
    )
    written = parse_settings(home.settings_file.read_bytes())
    assert (written.consolidation.provider, written.chosen_model) == (DEFAULTS.provider, DEFAULTS.model)


def test_no_model_chosen_is_said_before_a_missing_key(home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    """The editor offers the fix of the problem said: a key entered first would leave the route
    as unusable, and choosing the model says the key is missing next."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    home.ensure_layout()
    home.settings_file.write_text("consolidation:\n  provider: anthropic\n")
    unchosen = json.loads(remem(home, "settings", "model", "--json").stdout)
    chosen = remem(home, "settings", "model", "--model", MODEL, "--json")
    assert unchosen["keyProblem"].startswith("anthropic has no default model: choose one"), unchosen
    assert json.loads(chosen.stdout)["keyProblem"].startswith("no API key for provider `anthropic`")
