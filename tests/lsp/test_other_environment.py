"""A daemon started from another environment than the editor's (decision 0372).

The editor's language server joins a daemon a shell started with another `CLAUDE_CONFIG_DIR`:
it warns once per connection (not on each request) which folder the daemon reads and which the
editor's environment names, and its empty tree names the folders the daemon looked in. Once the
daemon is stopped, the server starts the next one from its own environment, and says nothing.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from lsprotocol import types

from remem.daemon.home import Home
from tests.lsp.editor import own_home, until
from tests.lsp.live import environment, remem, start_editor, stop_editor

pytestmark = pytest.mark.asyncio


def searched(tree: dict[str, object]) -> dict[str, object]:
    entries = tree["searched"]
    assert isinstance(entries, list)
    return {entry["path"]: entry.get("harness") for entry in entries}


async def test_an_editor_naming_another_claude_folder_is_warned_once_per_connection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    home: Home = own_home("remem-lsp-elsewhere-")
    shells, editors = home.root.parent / "shell-claude", home.root.parent / "editor-claude"
    for config in (shells, editors):
        (config / "projects").mkdir(parents=True)
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "daemon", "start"]
    env = environment(home, CLAUDE_CONFIG_DIR=str(shells))
    assert subprocess.run(command, env=env, capture_output=True, timeout=60).returncode == 0
    info = (home.state / "daemon.json").read_text()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(editors))  # what the server runs with
    editor = await start_editor(home)
    try:
        cwd = {"cwd": str(home.root.parent / "project")}
        await until(lambda: editor.client.messages)
        first = await editor.request("remem/sessionTree", cwd)
        await editor.request("remem/sessionTree", cwd)
        [shown] = editor.client.messages
        pid = editor.paths.read_status().pid  # type: ignore[union-attr]
        assert str(pid) in info, "the daemon the shell started"
        assert shown.type == types.MessageType.Warning and shown.message == (
            f"remem: the daemon (pid {pid}) reads Claude Code sessions in {shells / 'projects'}, not in "
            f"{editors / 'projects'}, which the editor's CLAUDE_CONFIG_DIR names; run `remem daemon stop` "
            "and the editor starts it again with its own environment, or name the folder in sessions.roots "
            f"in {home.settings_file}"
        )
        assert searched(first)[str(shells / "projects")] == "claude-code"
        assert str(editors / "projects") not in searched(first), "the folders the daemon looked in"
        # The remedy: the daemon the editor starts next reads the editor's folder, unwarned.
        assert remem(home, "daemon", "stop").returncode == 0
        again = await editor.request("remem/sessionTree", cwd)
        assert editor.paths.read_status().pid != pid  # type: ignore[union-attr]
        assert searched(again)[str(editors / "projects")] == "claude-code"
        assert str(shells / "projects") not in searched(again)
        assert len(editor.client.messages) == 1
    finally:
        await stop_editor(editor)
