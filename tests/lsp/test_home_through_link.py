"""A home given through a symbolic link serves its files however the editor reaches them.

With the home at a link (`REMEM_HOME=~/remem`, leading to a synced folder), an editor that
opened a memory file by its real path, or by a path with `..` in it, got nothing: no
diagnostics, no hover. The server compared paths with the home's as given. A link inside the
home is still never followed.
"""

from __future__ import annotations

import shutil

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from remem.daemon.home import Home

from .editor import codes, module_client, open_document, own_home, record, until, workspace_folder
from .live import stopping_daemon

REAL = own_home("remem-lsp-home-link-")
LINK = REAL.root.parent / "home-link"
LINK.symlink_to(REAL.root, target_is_directory=True)
HOME = Home(LINK)
client = module_client(HOME)
stop_the_daemon = stopping_daemon(HOME)
pytestmark = pytest.mark.asyncio(loop_scope="module")

WRONG_TYPE = record("a", type="Feedbak")


async def hover(client: LanguageClient, uri: str) -> types.Hover | None:
    """The hover on a record's front matter; answered once every earlier notification was handled."""
    at = types.Position(1, 1)
    return await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri=uri), at)
    )


async def test_a_record_opened_by_its_real_path_is_served(client: LanguageClient) -> None:
    folder = workspace_folder(HOME, "real-path")
    real = REAL.workspaces / folder.name / "a.md"
    real.write_text(WRONG_TYPE)
    uri = open_document(client, real, WRONG_TYPE)
    assert not uri.startswith(HOME.root.as_uri())
    await until(lambda: "remem/type-invalid" in codes(client, uri))
    assert await hover(client, uri) is not None
    global_uri = open_document(client, REAL.global_file, "x" * 30_000 + "\n")
    await until(lambda: codes(client, global_uri) == ["remem/global-too-large"])


async def test_a_path_with_dot_dot_is_the_file_it_names(client: LanguageClient) -> None:
    folder = workspace_folder(HOME, "dot-dot")
    (folder / "a.md").write_text(WRONG_TYPE)
    uri = f"{folder.as_uri()}/../{folder.name}/a.md"
    open_document(client, uri, WRONG_TYPE)
    await until(lambda: "remem/type-invalid" in codes(client, uri))
    assert await hover(client, uri) is not None


async def test_a_link_inside_the_home_is_still_refused(client: LanguageClient) -> None:
    outside = REAL.root.parent / "outside-workspace"
    shutil.rmtree(outside, ignore_errors=True)
    outside.mkdir()
    (outside / "a.md").write_text(WRONG_TYPE)
    linked = workspace_folder(HOME, "linked")
    linked.rmdir()
    linked.symlink_to(outside, target_is_directory=True)
    through_link = open_document(client, linked / "a.md", WRONG_TYPE)
    await until(lambda: codes(client, through_link) == ["remem/linked-workspace"])
    by_target = open_document(client, outside / "a.md", WRONG_TYPE)
    plain = workspace_folder(HOME, "plain")
    (plain / "a.md").write_text(WRONG_TYPE)
    # `linked/..` is the target's parent on disk, not the workspaces folder: no memory file.
    dot_dot = open_document(client, f"{linked.as_uri()}/../{plain.name}/a.md", WRONG_TYPE)
    assert await hover(client, by_target) is None and await hover(client, dot_dot) is None
    assert by_target not in client.diagnostics and dot_dot not in client.diagnostics


async def test_the_index_of_a_folder_reached_by_its_real_path_is_regenerated(client: LanguageClient) -> None:
    folder = workspace_folder(HOME, "regenerated", with_info=True)
    (folder / "alpha.md").write_text(record("alpha"))
    real = REAL.workspaces / folder.name / "MEMORY.md"
    params = types.ExecuteCommandParams(
        command="remem.lsp.regenerateIndex", arguments=[{"uri": real.as_uri()}]
    )
    assert await client.workspace_execute_command_async(params) == {"written": True}
    assert "alpha" in real.read_text()
