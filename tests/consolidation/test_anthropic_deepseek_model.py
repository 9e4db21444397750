"""Settings that route to anthropic, at the URL remem gives it, with deepseek's default model
(written by a remem before decision 0493, which kept the model when the provider changed, or by
hand) choose no model (decision 0500): the read and `remem settings model` say so and why, a
consolidation refuses naming `remem settings model --model` before anything is sent, and the
user's file is left as it is. A base_url of the user's own may serve it: see
test_deepseek_model_written_for_openai (decision 0506, amended)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.settings import ConsolidationSettings
from tests.daemon.helpers import remem

from .conftest import write_source

KEY = "sk-ant-test"
DEEPSEEK = ConsolidationSettings()  # deepseek and its default model
WHY = (
    f"`{DEEPSEEK.model}`, the consolidation.model of settings.yml, is {DEEPSEEK.provider}'s default "
    "model, which anthropic does not serve (an older remem wrote it there when `remem settings model "
    "--provider anthropic` was given no --model, or it was chosen for a base_url of "
    "providers.anthropic no longer set), so no model is chosen for anthropic: "
    "choose one with `remem settings model --provider anthropic --model …`"
)


def test_deepseeks_default_model_is_no_choice_for_anthropic(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(NO_DAEMON_ENV, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    root = tmp_path / "dsh-sessions"
    source = write_source(root, str(tmp_path / "project"))
    home.ensure_layout()
    home.settings_file.write_text(
        f"consolidation:\n  provider: anthropic\n  model: {DEEPSEEK.model}\n"
        f"sessions:\n  roots: [{str(root)!r}]\n"
    )
    written = home.settings_file.read_bytes()
    try:
        read = remem(home, "settings", "model", "--json")
        shown = remem(home, "settings", "model")
        refused = remem(home, "consolidate", source.id)
        unchanged = home.settings_file.read_bytes()
        chosen = remem(home, "settings", "model", "--model", "claude-sonnet-4-5", "--json")
    finally:
        remem(home, "daemon", "stop")
    answer = json.loads(read.stdout)
    assert (answer["model"], answer["keyReady"]) == (None, False), answer
    assert answer["keyProblem"].startswith(WHY), answer["keyProblem"]
    assert shown.stdout.startswith(f"anthropic/(no model chosen) — {WHY}"), shown.stdout
    assert refused.returncode == 2 and WHY in refused.stderr, refused.stderr
    assert unchanged == written, "a read never rewrites the user's file"
    assert chosen.returncode == 0, chosen.stderr
    route = json.loads(chosen.stdout)
    assert (route["model"], route["keyReady"]) == ("claude-sonnet-4-5", True), route
