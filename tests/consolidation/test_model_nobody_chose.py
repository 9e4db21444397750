"""A route to a provider whose default model remem does not know (every one but deepseek) sends
no model unless the settings name one (decision 0500, amended): no consolidation sends it
deepseek's default, `remem settings model` never writes that default for it, and deepseek's
default chosen for a provider that does not serve it is refused at the write. What a run sends
is read from the requests the real `openai` client made to a fake server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.settings import ConsolidationSettings
from tests.cli_process import remem as cli_remem
from tests.daemon.helpers import remem
from tests.fake_openai import FakeOpenAI, tool_call

from .conftest import KEY_ENV, proposal, write_source

DEEPSEEK = ConsolidationSettings()  # deepseek and its default model


def _settings(home: Home, fake: FakeOpenAI, consolidation: str, root: Path | None = None) -> None:
    """`consolidation` as the route; every provider a test chooses served by `fake`."""
    served = "".join(
        f"  {name}:\n    base_url: {fake.base_url}\n    api_key_env: {KEY_ENV}\n"
        for name in ("openai", "ollama", "mine")
    )
    roots = f"sessions:\n  roots: [{str(root)!r}]\n" if root is not None else ""
    home.ensure_layout()
    home.settings_file.write_text(f"consolidation:\n{consolidation}providers:\n{served}{roots}")


@pytest.mark.parametrize("provider", ["openai", "ollama", "mine"])
def test_a_route_without_a_model_is_refused_until_one_is_chosen(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: str
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    root = tmp_path / "dsh-sessions"
    source = write_source(root, str(tmp_path / "project"))
    why = (
        f"remem knows no default model of {provider}: choose one with "
        f"`remem settings model --provider {provider} --model …`, the model id as {provider} names it"
    )
    with FakeOpenAI(api_key="sk-test") as fake:
        _settings(home, fake, f"  provider: {provider}\n", root)
        read = json.loads(remem(home, "settings", "model", "--json").stdout)
        shown = remem(home, "settings", "model")
        refused = remem(home, "consolidate", source.id, "--json")
        unsent = fake.count
        chosen = remem(home, "settings", "model", "--model", "its-own-model")
        fake.reply(tool_call(proposal()))
        reviewed = remem(home, "consolidate", source.id, "--json")
        sent = [request["model"] for request in fake.requests]
    assert (read["model"], read["keyReady"], read["keyProblem"]) == (None, False, why), read
    assert shown.stdout == f"{provider}/(no model chosen) — {why}\n", shown.stdout
    assert refused.returncode == 2, refused.stdout
    assert json.loads(refused.stdout)["error"] == {"code": "NO_ROUTE", "message": why}, refused.stdout
    assert unsent == 0, "deepseek's default model was never sent"
    assert chosen.returncode == 0, chosen.stderr
    assert json.loads(reviewed.stdout)["status"] == "no-change", reviewed.stdout
    assert sent == ["its-own-model"]


@pytest.mark.parametrize("provider", ["openai", "mine"])
def test_choosing_a_provider_without_a_model_asks_for_one(
    home: Home, monkeypatch: pytest.MonkeyPatch, provider: str
) -> None:
    """From the default route, the model kept would be deepseek's, which `provider` never had;
    it is the key's default, nobody's choice, so it is not named as the one chosen for deepseek."""
    monkeypatch.setenv(KEY_ENV, "sk-test")
    with FakeOpenAI(api_key="sk-test") as fake:
        _settings(home, fake, "  max_tokens: 4096\n")
    written = home.settings_file.read_bytes()
    refused = remem(home, "settings", "model", "--provider", provider)
    assert refused.returncode == 2, refused.stdout
    said = f"remem knows no default model of {provider}: give --model, the model id as {provider} names it"
    assert refused.stderr == f"remem: {said}\n", refused.stderr
    assert home.settings_file.read_bytes() == written


@pytest.mark.parametrize("daemon", [False, True], ids=["no-daemon", "daemon"])
def test_an_empty_home_names_no_model_chosen_for_deepseek(home: Home, daemon: bool) -> None:
    """The daemon's answer names the model, not whether the file set it: the CLI reads that."""
    try:
        refused = cli_remem(home, "settings", "model", "--provider", "openai", daemon=daemon)
    finally:
        if daemon:
            cli_remem(home, "daemon", "stop", daemon=True)
    assert refused.returncode == 2, refused.stdout
    assert refused.stderr == (
        "remem: remem knows no default model of openai: give --model, the model id as openai names it\n"
    )
    assert not home.settings_file.exists()


def test_a_model_the_file_sets_for_deepseek_is_named(home: Home) -> None:
    home.ensure_layout()
    home.settings_file.write_text(f"consolidation:\n  model: {DEEPSEEK.model}\n")
    refused = remem(home, "settings", "model", "--provider", "openai")
    assert refused.returncode == 2, refused.stdout
    assert f"`{DEEPSEEK.model}` is the one chosen for {DEEPSEEK.provider}: give --model" in refused.stderr


def test_the_model_chosen_for_the_provider_is_kept(home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    with FakeOpenAI(api_key="sk-test") as fake:
        _settings(home, fake, "  provider: openai\n  model: gpt-4.1-mini\n")
    kept = remem(home, "settings", "model", "--provider", "openai", "--json")
    assert kept.returncode == 0, kept.stderr
    assert json.loads(kept.stdout)["model"] == "gpt-4.1-mini"


def test_deepseeks_default_chosen_for_anthropic_is_refused_at_the_write(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Written, it would read back as no model chosen (decision 0500)."""
    home.ensure_layout()
    home.settings_file.write_text("consolidation:\n  max_tokens: 4096\n")
    written = home.settings_file.read_bytes()
    refused = remem(home, "settings", "model", "--provider", "anthropic", "--model", DEEPSEEK.model)
    assert refused.returncode != 0, refused.stdout
    assert (
        f"`{DEEPSEEK.model}` is {DEEPSEEK.provider}'s default model, which anthropic does not serve: "
        "choose one it serves, the model id as anthropic names it"
    ) in refused.stderr, refused.stderr
    assert home.settings_file.read_bytes() == written
