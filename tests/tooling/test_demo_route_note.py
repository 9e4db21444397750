"""After scripts/demo, its home routes to the scripted demo model, which serves only while the
demo runs. The settings the demo writes say so above the provider, where `remem settings model`
leaves the note true once it routes elsewhere, and a consolidation there names the way on (a
model of the user's), never the demo's key variable, which cannot bring the model back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.settings import SettingsStore
from scripts import demo_model
from scripts.seed_demo import DemoSessions, seed
from tests.cli_process import remem

CHOOSE = "remem settings model --provider P --model M"


def _seeded(home: Home, tmp_path: Path) -> DemoSessions:
    return seed(home.root, tmp_path / "dsh", tmp_path / "project", None, "http://127.0.0.1:9/v1")


def _note_and_what_follows(text: str) -> tuple[str, list[str]]:
    lines = text.splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("#"))
    end = next(n for n in range(start, len(lines)) if not lines[n].startswith("#"))
    return " ".join(line.lstrip("# ") for line in lines[start:end]), lines[end : end + 2]


def test_the_demo_models_provider_says_it_serves_only_while_the_demo_runs(home: Home, tmp_path: Path) -> None:
    _seeded(home, tmp_path)
    note, below = _note_and_what_follows(home.settings_file.read_text(encoding="utf-8"))
    assert f"the provider `{demo_model.PROVIDER}` below: remem's scripted demo model" in note, note
    assert "serves only while scripts/demo runs" in note, note
    assert "once the demo has ended, no key brings it back" in note, note
    assert CHOOSE in note, note
    assert below == ["providers:", f"  {demo_model.PROVIDER}:"], below
    settings, _ = SettingsStore(home).read()
    assert settings.consolidation.provider == demo_model.PROVIDER
    assert settings.providers[demo_model.PROVIDER].api_key_env == demo_model.KEY_ENV


def test_the_note_stays_true_once_the_route_is_another(home: Home, tmp_path: Path) -> None:
    _seeded(home, tmp_path)
    chosen = remem(home, "settings", "model", "--provider", "openai", "--model", "gpt-4o")
    assert chosen.returncode == 0, chosen.stderr
    text = home.settings_file.read_text(encoding="utf-8")
    assert "consolidation:\n  provider: openai\n  model: gpt-4o\n" in text, text
    note, below = _note_and_what_follows(text)
    assert f"the provider `{demo_model.PROVIDER}` below" in note, note
    assert below == ["providers:", f"  {demo_model.PROVIDER}:"], text


def test_after_the_demo_a_consolidation_names_a_model_of_yours_not_the_demos_key(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(demo_model.KEY_ENV, raising=False)
    sessions = _seeded(home, tmp_path)
    refused = remem(home, "consolidate", sessions.main, "--json")
    shown = json.loads(remem(home, "settings", "model", "--json").stdout)
    why = (
        f"`{demo_model.PROVIDER}` is remem's scripted demo model, which serves only while scripts/demo "
        f"runs: choose a model of yours with `{CHOOSE}`, or run scripts/demo again"
    )
    assert refused.returncode == 2, refused.stdout
    assert json.loads(refused.stdout)["error"] == {"code": "NO_ROUTE", "message": why}, refused.stdout
    assert (shown["keyReady"], shown["keyProblem"]) == (False, why), shown


def test_a_route_taken_from_the_users_settings_has_no_such_note(home: Home, tmp_path: Path) -> None:
    seed(home.root, tmp_path / "dsh", tmp_path / "project", None)
    assert "scripted demo model" not in home.settings_file.read_text(encoding="utf-8")
