"""A keystroke taking its folder's reading as it is still never judges through a link.

A keystroke within `TRUST_READ` of its folder's last reading takes that reading when the
folder's listing is unchanged, and spares asking whether the folder is a link: its own stamp,
kept with its type, says a listed folder is none. A folder that listed nothing (gone) leaves no
such stamp, so a link put where it was, even one leading nowhere, must still be asked about:
its documents are then said to be in a linked workspace, as the store refuses one (decision 0481).
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from remem.daemon.home import Home
from tests.scratch import process_folder

from .editor import record, refusing_daemon, workspace_folder
from .test_keystroke_readings import InProcess

HOME = refusing_daemon(Home(process_folder("remem-lsp-linked-keystroke-") / "home"))


@pytest_asyncio.fixture
async def editor() -> AsyncIterator[InProcess]:
    editor = InProcess(HOME)
    await editor.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
    yield editor
    await editor.request("shutdown", None)


def published(editor: InProcess, path: Path) -> list[str]:
    """The codes of the last diagnostics published to `path`'s document."""
    sent: list[dict[str, Any]] = [
        m["params"]
        for m in editor.written
        if m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == path.as_uri()
    ]
    assert sent, f"nothing was published to {path.name}"
    return [f"{d['source']}/{d['code']}" for d in sent[-1]["diagnostics"]]


@pytest.mark.asyncio
async def test_a_folder_gone_then_a_link_leading_nowhere_in_its_place_is_said_to_be_linked(
    editor: InProcess, tmp_path: Path
) -> None:
    folder = workspace_folder(HOME, "gone-then-linked")
    (folder / "sibling.md").write_text(record("sibling"))
    mine = folder / "mine.md"
    editor.open(mine, record("mine"))
    editor.type(mine, record("mine", body="Typed once.\n"))
    shutil.rmtree(folder)
    editor.type(mine, record("mine", body="Typed twice.\n"))  # judged on the text alone
    assert published(editor, mine) == []
    folder.symlink_to(tmp_path / "nowhere", target_is_directory=True)
    editor.type(mine, record("mine", body="Typed thrice.\n"))
    assert published(editor, mine) == ["remem/linked-workspace"]


@pytest.mark.asyncio
async def test_a_listed_folder_replaced_by_a_link_between_keystrokes_is_said_to_be_linked(
    editor: InProcess, tmp_path: Path
) -> None:
    folder = workspace_folder(HOME, "replaced-by-link")
    (folder / "sibling.md").write_text(record("mine"))  # the same name: a duplicate while read
    mine = folder / "mine.md"
    editor.open(mine, record("mine"))
    editor.type(mine, record("mine", body="Typed once.\n"))
    assert published(editor, mine) == ["remem/name-duplicate"]
    folder.rename(tmp_path / "moved")
    folder.symlink_to(tmp_path / "moved", target_is_directory=True)
    editor.type(mine, record("mine", body="Typed twice.\n"))
    assert published(editor, mine) == ["remem/linked-workspace"]
