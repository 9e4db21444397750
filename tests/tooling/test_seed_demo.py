"""scripts/seed_demo.py: the demo's sessions, and the model route it takes from the user's settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.home import Home
from remem.daemon.settings import SessionRootSetting, SettingsStore
from scripts.seed_demo import seed

USER_SETTINGS = """\
consolidation:
  provider: mine
  model: small-model
  timeout_seconds: 30
providers:
  mine:
    base_url: http://127.0.0.1:9/v1
    api_key_env: MY_MODEL_KEY
daemon:
  idle_minutes: 5
"""


def demo_roots(tmp_path: Path) -> list[str | SessionRootSetting]:
    """The roots of a demo seeded with its DSH root at `tmp_path / "dsh"`: it, and the harness
    homes beside it."""
    return [
        str(tmp_path / "dsh"),
        SessionRootSetting(path=str(tmp_path / "claude"), format="claude-code"),
        SessionRootSetting(path=str(tmp_path / "codex"), format="codex"),
    ]


def tree(home: Home, project: Path) -> list[dict[str, object]]:
    result = CliRunner().invoke(
        cli, ["--home", str(home.root), "sessions", "tree", "--cwd", str(project), "--json"]
    )
    assert result.exit_code == 0, result.output
    return list(json.loads(result.stdout)["nodes"])


def test_the_demo_workspace_has_a_fork_a_subagent_and_an_orphan_all_finished(
    home: Home, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    sessions = seed(home.root, tmp_path / "dsh", project, None)
    nodes = {node["id"]: node for node in tree(home, project)}  # found through the seeded settings' roots
    assert set(nodes) == {
        sessions.main,
        sessions.fork,
        sessions.subagent,
        sessions.orphan,
        sessions.claude_code,
        sessions.codex,
    }
    roots = {i for i, n in nodes.items() if n["parent"] is None}
    assert roots == {sessions.main, sessions.orphan, sessions.claude_code, sessions.codex}
    assert nodes[sessions.fork]["parent"] == sessions.main and nodes[sessions.fork]["forkTurn"] == 2
    assert nodes[sessions.subagent]["parent"] == sessions.main
    assert nodes[sessions.subagent]["kind"] == "subagent"
    assert nodes[sessions.orphan]["flags"] == ["orphan"]
    assert not any(n["live"] for n in nodes.values())  # so they can be consolidated and branched at once


def test_the_demo_workspace_has_a_claude_code_and_a_codex_session_read_as_theirs(
    home: Home, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    sessions = seed(home.root, tmp_path / "dsh", project, None)
    formats = {node["id"]: node["format"] for node in tree(home, project)}
    assert (formats[sessions.claude_code], formats[sessions.codex], formats[sessions.main]) == (
        "claude-code",
        "codex",
        "dsh",
    )
    for session, prompts in ((sessions.claude_code, 2), (sessions.codex, 1)):
        result = CliRunner().invoke(cli, ["--home", str(home.root), "sessions", "turns", session, "--json"])
        assert result.exit_code == 0, result.output
        turns = json.loads(result.stdout)["turns"]
        assert [t["status"] for t in turns] == ["completed"] * prompts  # each can be forked


def test_the_users_model_route_is_taken_but_nothing_else_and_no_key(home: Home, tmp_path: Path) -> None:
    user = tmp_path / "user-home"
    user.mkdir()
    (user / "settings.yml").write_text(USER_SETTINGS)
    (user / "credentials.yml").write_text("providers: {mine: {api_key: sk-secret}}\n")
    seed(home.root, tmp_path / "dsh", tmp_path / "project", user / "settings.yml")
    settings, _ = SettingsStore(home).read()
    assert (settings.consolidation.provider, settings.consolidation.model) == ("mine", "small-model")
    assert settings.consolidation.timeout_seconds == 30
    assert settings.providers["mine"].api_key_env == "MY_MODEL_KEY"
    assert settings.sessions.roots == demo_roots(tmp_path)
    assert settings.daemon.idle_minutes == 60  # the user's daemon settings stay theirs
    assert not home.credentials_file.exists()
    assert "sk-secret" not in home.settings_file.read_text()


@pytest.mark.parametrize("content", ["consolidation: [\n", "consolidation:\n  provider: nowhere\n"])
def test_unusable_user_settings_leave_the_default_route_and_say_why(
    home: Home, tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str
) -> None:
    user_settings = tmp_path / "settings.yml"
    user_settings.write_text(content)
    seed(home.root, tmp_path / "dsh", tmp_path / "project", user_settings)
    settings, _ = SettingsStore(home).read()
    assert settings.consolidation.provider == "deepseek"
    assert f"{user_settings}:" in capsys.readouterr().err


def test_without_user_settings_the_default_route_is_used(home: Home, tmp_path: Path) -> None:
    seed(home.root, tmp_path / "dsh", tmp_path / "project", tmp_path / "missing" / "settings.yml")
    settings, _ = SettingsStore(home).read()
    assert settings.consolidation.provider == "deepseek"
    assert settings.sessions.roots == demo_roots(tmp_path)
