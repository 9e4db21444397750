"""An empty session tree says where remem looked for each harness, found or not.

The daemon reads a harness's default folder only when it exists, so its status names only the
ones found; a Claude Code or Codex user whose folder is elsewhere (`CLAUDE_CONFIG_DIR` set in a
shell's profile, not in the editor's environment) must still see where remem looked for it.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from remem.daemon.home import Home
from remem.daemon.sessions.harness_sources import claude_folders
from remem.daemon.sessions.sources import default_roots
from tests.lsp.editor import own_home
from tests.lsp.live import Editor, start_editor, stop_editor

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def home() -> Iterator[Home]:
    """A home whose Claude Code folder has a `projects` folder and whose Codex home is missing."""
    home = own_home("remem-lsp-searched-")
    harnesses = home.root.parent
    (harnesses / "claude" / "projects").mkdir(parents=True)
    with pytest.MonkeyPatch.context() as env:  # what the server, and the daemon it starts, run with
        env.setenv("CLAUDE_CONFIG_DIR", str(harnesses / "claude"))
        env.setenv("CODEX_HOME", str(harnesses / "codex"))
        yield home


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def editor(home: Home) -> AsyncIterator[Editor]:
    editor = await start_editor(home)
    yield editor
    await stop_editor(editor)


async def test_each_harness_default_folder_is_named_found_or_not(editor: Editor, home: Home) -> None:
    harnesses = home.root.parent
    answer = await editor.request("remem/sessionTree", {"cwd": str(harnesses / "project")})
    assert answer["nodes"] == []
    searched = {entry["path"]: entry for entry in answer["searched"]}
    # remem's own root: no harness's default folder.
    assert searched[str(home.sessions)] == {"path": str(home.sessions), "exists": True}
    claude, codex = harnesses / "claude" / "projects", harnesses / "codex" / "sessions"
    archived = harnesses / "codex" / "archived_sessions"
    dsh = harnesses / "no-dsh-home" / "sessions"  # tests.lsp.live points DSH_HOME there
    assert searched[str(claude)] == {"path": str(claude), "exists": True, "harness": "claude-code"}
    assert searched[str(codex)] == {"path": str(codex), "exists": False, "harness": "codex"}
    assert searched[str(archived)] == {"path": str(archived), "exists": False, "harness": "codex"}
    assert searched[str(dsh)] == {"path": str(dsh), "exists": False, "harness": "dsh"}
    assert len(answer["searched"]) == len(searched) == 5  # each folder once


async def test_a_folder_that_appears_is_then_said_to_exist(editor: Editor, home: Home) -> None:
    codex = home.root.parent / "codex" / "sessions"
    codex.mkdir(parents=True)
    try:
        answer = await editor.request("remem/sessionTree", {"cwd": str(home.root.parent / "project")})
        [entry] = [e for e in answer["searched"] if e["path"] == str(codex)]
        assert entry == {"path": str(codex), "exists": True, "harness": "codex"}
    finally:
        os.rmdir(codex)
        os.rmdir(codex.parent)


async def test_the_folders_follow_the_environment_as_the_daemon_reads_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", "  ")  # blank: the default
    monkeypatch.delenv("CODEX_HOME")
    monkeypatch.setenv("DSH_HOME", "~/elsewhere/dsh")
    assert [(r.format, r.path) for r in default_roots()] == [
        ("dsh", Path.home() / "elsewhere" / "dsh" / "sessions"),
        ("claude-code", Path.home() / ".claude" / "projects"),
        ("codex", Path.home() / ".codex" / "sessions"),
        ("codex", Path.home() / ".codex" / "archived_sessions"),
    ]


async def test_a_workspace_folder_that_cannot_be_read_is_said_not_empty(editor: Editor, home: Home) -> None:
    """The workspace's own Claude Code folder a link: the tree carries the listing's error, so the
    view says sessions could not be read rather than that there are none."""
    harnesses = home.root.parent
    cwd = str(harnesses / "linked-project")
    folder, outside = harnesses / "claude" / "projects" / claude_folders(cwd)[0], harnesses / "outside"
    outside.mkdir()
    folder.symlink_to(outside)
    try:
        answer = await editor.request("remem/sessionTree", {"cwd": cwd})
    finally:
        folder.unlink()
        outside.rmdir()
    assert answer["nodes"] == [] and answer["searched"], answer
    problem = "a symbolic link; remem reads only real folders and files inside a session root"
    assert answer["errors"] == [{"path": str(folder), "message": problem, "kind": "sessions"}]
