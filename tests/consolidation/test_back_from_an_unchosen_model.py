"""The way back from a provider without a default model and none chosen (decision 0493): the
provider whose model the settings' default is (deepseek) is given that model, as a fresh
settings file routes to it; a provider of which no model is known still asks for --model."""

from __future__ import annotations

import json

import pytest

from remem.daemon.home import Home
from remem.daemon.settings import ConsolidationSettings, parse_settings
from tests.consolidation.test_anthropic_model_not_kept import through  # noqa: F401 - the fixture
from tests.daemon.helpers import remem

DEFAULTS = ConsolidationSettings()


@pytest.mark.usefixtures("through")
def test_switching_to_deepseek_takes_its_default_model(home: Home) -> None:
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
    written = parse_settings(home.settings_file.read_bytes()).consolidation
    assert (written.provider, written.chosen_model) == (DEFAULTS.provider, DEFAULTS.model)


@pytest.mark.usefixtures("through")
def test_a_provider_of_no_known_model_still_asks_for_one(home: Home) -> None:
    home.settings_file.write_text("consolidation:\n  provider: anthropic\n")
    before = home.settings_file.read_bytes()
    refused = remem(home, "settings", "model", "--provider", "ollama")
    assert refused.returncode == 2, refused.stderr
    assert (
        "anthropic has no model chosen, so there is none to keep for ollama: give --model" in refused.stderr
    )
    assert home.settings_file.read_bytes() == before
