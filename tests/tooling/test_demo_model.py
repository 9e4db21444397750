"""scripts/demo_model.py: the demo's consolidation, end to end, through the scripted demo model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.home import Home
from remem.daemon.settings import SettingsStore
from scripts import demo_model
from scripts.seed_demo import seed

KEY = "demo-key-for-this-test"


@pytest.fixture
def model_url() -> Iterator[str]:
    """The demo model, run as the demo runs it: its own process, its URL on its first line."""
    env = {**os.environ, demo_model.KEY_ENV: KEY}
    process = subprocess.Popen(
        [sys.executable, "-m", "scripts.demo_model"], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert process.stdout is not None
        yield process.stdout.readline().strip()
    finally:
        process.terminate()
        assert process.wait(timeout=30) == 0  # SIGTERM is how the demo stops it


def run(home: Home, *args: str) -> dict[str, object]:
    result = CliRunner().invoke(cli, ["--home", str(home.root), *args, "--json"])
    assert result.exit_code == 0, result.output
    return dict(json.loads(result.stdout))


def test_the_demo_commits_the_preference_and_the_project_fact_with_a_receipt(
    home: Home, tmp_path: Path, model_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(demo_model.KEY_ENV, KEY)
    project = tmp_path / "project"
    sessions = seed(home.root, tmp_path / "dsh", project, None, model_url)
    settings, _ = SettingsStore(home).read()
    assert settings.consolidation.provider == demo_model.PROVIDER
    assert settings.providers[demo_model.PROVIDER].base_url.startswith("http://127.0.0.1:")

    run(home, "consolidate", sessions.main)
    records = run(home, "memory", "show", "--cwd", str(project))["workspace"]["records"]
    by_name = {r["name"]: r for r in records}
    assert by_name["standard-library-first"]["type"] == "feedback"
    assert by_name["gateway-30-second-limit"]["type"] == "project"
    (receipt,) = run(home, "receipts")["receipts"]
    assert receipt["source"]["session"] == sessions.main and receipt["status"] == "committed"
    said = {t["turn"]: t for t in run(home, "sessions", "turns", sessions.main)["turns"]}
    cited = {c["name"]: c["evidence"] for c in receipt["changes"]}
    # Each record cites the turn the user said it in: the fact in turn 2, the preference in turn 3.
    for name, turn in (("gateway-30-second-limit", 2), ("standard-library-first", 3)):
        assert cited[name] == [{"fromSeq": said[turn]["startSeq"], "toSeq": said[turn]["endSeq"]}]


def test_a_review_that_shows_neither_turn_changes_nothing() -> None:
    review = "## Turn 1 (evidence 0-9)\n\nUser:\n> Rename the helper, please.\n"
    assert demo_model.proposal(review) == {"final": True, "outcome": "no-change", "changes": []}


def test_without_its_key_the_demo_model_refuses_to_start_and_says_which_variable() -> None:
    env = {k: v for k, v in os.environ.items() if k != demo_model.KEY_ENV}
    result = subprocess.run(
        [sys.executable, "-m", "scripts.demo_model"], capture_output=True, text=True, env=env, timeout=30
    )
    assert result.returncode == 2 and demo_model.KEY_ENV in result.stderr
