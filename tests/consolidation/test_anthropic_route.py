"""The predefined `anthropic` provider: Anthropic's OpenAI SDK compatibility layer, reached by the
real `openai` client through `remem` and its daemon (the layer here the local fake, its base_url
overridden in settings.yml)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.settings import parse_settings
from tests.daemon.helpers import calls, remem
from tests.fake_openai import FakeOpenAI, tool_call

from .conftest import proposal, write_source

KEY = "sk-ant-test"
MODEL = "claude-sonnet-4-5"
# What the compatibility layer takes (decision 0493): these fields, and no other.
ACCEPTED = {"model", "messages", "tools", "max_tokens"}
CHOOSE = (
    "anthropic has no default model: choose one with `remem settings model --provider anthropic --model …`"
)


def test_anthropic_is_predefined_with_its_key_variable() -> None:
    settings = parse_settings(f"consolidation:\n  provider: anthropic\n  model: {MODEL}\n".encode())
    provider = settings.all_providers()["anthropic"]
    assert provider.base_url == "https://api.anthropic.com/v1"
    assert provider.api_key_env == "ANTHROPIC_API_KEY"
    assert "ANTHROPIC_API_KEY" in settings.key_variables()


def test_a_review_through_anthropic_needs_a_chosen_model_and_sends_what_the_layer_takes(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(NO_DAEMON_ENV, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    root = tmp_path / "dsh-sessions"
    source = write_source(root, str(tmp_path / "project"))
    with FakeOpenAI(api_key=KEY) as layer:  # it lists no models (404), as the layer documents none
        home.ensure_layout()
        home.settings_file.write_text(
            "consolidation:\n  provider: anthropic\n"
            f"providers:\n  anthropic:\n    base_url: {layer.origin + '/v1'!r}\n"
            "    api_key_env: ANTHROPIC_API_KEY\n"
            f"sessions:\n  roots: [{str(root)!r}]\n"
        )
        try:
            unchosen = remem(home, "consolidate", source.id)
            [listed] = calls(home, [("consolidation/models", {"provider": "anthropic"})])
            chosen = remem(home, "settings", "model", "--provider", "anthropic", "--model", MODEL)
            layer.reply(tool_call(proposal()))
            reviewed = remem(home, "consolidate", source.id, "--json")
        finally:
            remem(home, "daemon", "stop")
        [request] = layer.requests
    assert unchosen.returncode == 2 and CHOOSE in unchosen.stderr, unchosen.stderr
    assert listed["keyReady"] and listed["models"] == [], "a model need not be chosen to list them"
    # Its base_url is one of the user's here (the fake), which may list models the layer does
    # not: the why of the predefined URL is not said (test_anthropic_models_note.py says it).
    assert listed["note"].endswith("(HTTP 404)"), listed["note"]
    assert chosen.returncode == 0, chosen.stderr
    assert json.loads(reviewed.stdout)["status"] == "no-change", reviewed.stdout
    assert set(request) == ACCEPTED, "no n, stream, tool_choice, response_format nor parallel_tool_calls"
    assert request["model"] == MODEL and request["max_tokens"] > 0
    [tool] = request["tools"]
    assert tool["type"] == "function" and set(tool["function"]) == {"name", "description", "parameters"}
    roles = [message["role"] for message in request["messages"]]
    assert roles[0] == "system" and "system" not in roles[1:], "one system message, first"
