"""Settings that route to openai, at the URL remem gives it, with deepseek's default model, which
`remem settings model --provider openai` wrote before decision 0500's amendment (it kept the
model the route had: from a fresh home, deepseek's default), choose no model (decision 0506): the
read and a consolidation say so, that an older remem wrote it, and how to choose one; nothing is
sent to openai, and the file is left as it is. A provider that may serve that model is sent it,
and choosing it for one is written: ollama, one of the user's own, and openai or anthropic at a
base_url the user set (a proxy: OpenRouter, a gateway; decision 0506, amended)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.settings import ConsolidationSettings, parse_settings
from tests.cli_process import remem
from tests.fake_openai import FakeOpenAI, tool_call

from .conftest import KEY_ENV, proposal, write_source

DEEPSEEK = ConsolidationSettings()  # deepseek and its default model
WHY = (
    f"`{DEEPSEEK.model}`, the consolidation.model of settings.yml, is {DEEPSEEK.provider}'s default "
    "model, which openai does not serve (an older remem wrote it there when `remem settings model "
    "--provider openai` was given no --model, or it was chosen for a base_url of "
    "providers.openai no longer set), so no model is chosen for openai: choose one with "
    "`remem settings model --provider openai --model …`, the model id as openai names it"
)


def _written(home: Home, fake: FakeOpenAI, provider: str, root: Path) -> None:
    """A route to `provider` with deepseek's default model, `provider` served by `fake` (a
    base_url of the user's own)."""
    home.ensure_layout()
    home.settings_file.write_text(
        f"consolidation:\n  provider: {provider}\n  model: {DEEPSEEK.model}\n"
        f"providers:\n  {provider}:\n    base_url: {fake.base_url}\n    api_key_env: {KEY_ENV}\n"
        f"sessions:\n  roots: [{str(root)!r}]\n"
    )


@pytest.mark.parametrize("daemon", [False, True], ids=["no-daemon", "daemon"])
def test_deepseeks_default_model_written_for_openai_is_no_choice(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, daemon: bool
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    root = tmp_path / "dsh-sessions"
    source = write_source(root, str(tmp_path / "project"))
    home.ensure_layout()
    home.settings_file.write_text(
        f"consolidation:\n  provider: openai\n  model: {DEEPSEEK.model}\n"
        f"sessions:\n  roots: [{str(root)!r}]\n"
    )
    written = home.settings_file.read_bytes()
    try:
        read = json.loads(remem(home, "settings", "model", "--json", daemon=daemon).stdout)
        refused = remem(home, "consolidate", source.id, "--json", daemon=daemon)
        unchanged = home.settings_file.read_bytes()
        chosen = remem(home, "settings", "model", "--model", "gpt-4.1-mini", "--json", daemon=daemon)
    finally:
        if daemon:
            remem(home, "daemon", "stop", daemon=True)
    assert (read["model"], read["keyReady"], read["keyProblem"]) == (None, False, WHY), read
    assert refused.returncode == 2, refused.stdout
    assert json.loads(refused.stdout)["error"] == {"code": "NO_ROUTE", "message": WHY}, refused.stdout
    assert unchanged == written, "a read never rewrites the user's file"
    assert chosen.returncode == 0, chosen.stderr
    route = json.loads(chosen.stdout)
    assert (route["model"], route["keyReady"]) == ("gpt-4.1-mini", True), route


def test_choosing_it_for_openai_is_refused(home: Home) -> None:
    """Written, it would read back as no model chosen."""
    home.ensure_layout()
    home.settings_file.write_text("consolidation:\n  max_tokens: 4096\n")
    refused = remem(home, "settings", "model", "--provider", "openai", "--model", DEEPSEEK.model)
    assert refused.returncode == 2, refused.stdout
    assert (
        f"`{DEEPSEEK.model}` is {DEEPSEEK.provider}'s default model, which openai does not serve: "
        "choose one it serves, the model id as openai names it"
    ) in refused.stderr, refused.stderr
    assert home.settings_file.read_text() == "consolidation:\n  max_tokens: 4096\n"


@pytest.mark.parametrize(
    "url",
    ["https://api.openai.com/v1/", "https://API.OpenAI.com/v1", "https://api.openai.com:443/v1"],
)
def test_the_providers_own_url_written_another_way_is_still_its_own(home: Home, url: str) -> None:
    """Capitals, its default port or a trailing slash ask the same server: no proxy, so the
    model OpenAI does not serve is still refused before it is written."""
    home.ensure_layout()
    own = f"providers:\n  openai:\n    base_url: {url}\n    api_key_env: OPENAI_API_KEY\n"
    home.settings_file.write_text(own)
    refused = remem(home, "settings", "model", "--provider", "openai", "--model", DEEPSEEK.model)
    assert refused.returncode == 2, refused.stdout
    assert "which openai does not serve" in refused.stderr, refused.stderr
    assert home.settings_file.read_text() == own


@pytest.mark.parametrize("provider", ["ollama", "mine", "openai", "anthropic"])
def test_a_provider_that_may_serve_it_is_sent_it(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: str
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    root = tmp_path / "dsh-sessions"
    source = write_source(root, str(tmp_path / "project"))
    with FakeOpenAI(api_key="sk-test") as fake:
        _written(home, fake, provider, root)
        read = json.loads(remem(home, "settings", "model", "--json").stdout)
        fake.reply(tool_call(proposal()))
        reviewed = remem(home, "consolidate", source.id, "--json")
        sent = [request["model"] for request in fake.requests]
    assert (read["model"], read["keyReady"]) == (DEEPSEEK.model, True), read
    assert json.loads(reviewed.stdout)["status"] == "no-change", reviewed.stdout
    assert sent == [DEEPSEEK.model]


@pytest.mark.parametrize("daemon", [False, True], ids=["no-daemon", "daemon"])
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_choosing_it_for_a_base_url_of_the_users_own_is_written(
    home: Home, monkeypatch: pytest.MonkeyPatch, provider: str, daemon: bool
) -> None:
    """The user who points openai at a proxy chose deepseek's model there on purpose."""
    monkeypatch.setenv(KEY_ENV, "sk-test")
    home.ensure_layout()
    home.settings_file.write_text(
        f"providers:\n  {provider}:\n    base_url: https://openrouter.example/api/v1\n"
        f"    api_key_env: {KEY_ENV}\n"
    )
    try:
        chosen = remem(
            home, "settings", "model", "--provider", provider, "--model", DEEPSEEK.model, daemon=daemon
        )
    finally:
        if daemon:
            remem(home, "daemon", "stop", daemon=True)
    assert chosen.returncode == 0, chosen.stderr
    assert chosen.stdout.startswith(f"{provider}/{DEEPSEEK.model} "), chosen.stdout
    written = parse_settings(home.settings_file.read_bytes())
    assert (written.consolidation.provider, written.chosen_model) == (provider, DEEPSEEK.model)
