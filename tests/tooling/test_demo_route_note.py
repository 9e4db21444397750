"""After scripts/demo, consolidating on its home says to set the demo model's key variable,
which cannot help: the model serves only while the demo runs. The settings the demo writes say so
beside the route, where the home's settings are read, and stay the settings remem reads."""

from __future__ import annotations

from pathlib import Path

from remem.daemon.home import Home
from remem.daemon.settings import SettingsStore
from scripts import demo_model
from scripts.seed_demo import seed


def test_the_demo_models_route_says_it_serves_only_while_the_demo_runs(home: Home, tmp_path: Path) -> None:
    seed(home.root, tmp_path / "dsh", tmp_path / "project", None, "http://127.0.0.1:9/v1")
    text = home.settings_file.read_text(encoding="utf-8")
    note = " ".join(line.lstrip("# ") for line in text.splitlines() if line.startswith("#"))
    assert f"Its provider `{demo_model.PROVIDER}` is remem's scripted demo model" in note, note
    assert "serves only while scripts/demo runs" in note, note
    assert "once the demo has ended, setting that variable does not bring the model back" in note, note
    assert "remem settings model --provider P --model M" in note, note
    settings, _ = SettingsStore(home).read()
    assert settings.consolidation.provider == demo_model.PROVIDER
    assert settings.providers[demo_model.PROVIDER].api_key_env == demo_model.KEY_ENV


def test_a_route_taken_from_the_users_settings_has_no_such_note(home: Home, tmp_path: Path) -> None:
    seed(home.root, tmp_path / "dsh", tmp_path / "project", None)
    assert "scripted demo model" not in home.settings_file.read_text(encoding="utf-8")
