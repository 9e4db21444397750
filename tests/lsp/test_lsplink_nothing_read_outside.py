"""A keystroke's judgement never lists a folder, nor opens a file, through a link out of the home.

A workspace folder replaced by a link, within `TRUST_READ` of its last reading, is said to be
linked before anything is listed: the folder's own `lstat`, asked first, tells (the listing's
cache, asked first, listed the link's target to find out its listing had changed). A link at
`memory/workspaces` or `memory` is refused as the store refuses it, saying what the store says,
in and out of that window: only the last folder of the path was asked, and the records of the
link's target were listed and read. Every `os.scandir`, `os.listdir` and `open` is watched by an
audit hook, which sees what the language server itself asks of the system.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from remem.daemon.home import Home
from remem.lsp.documents import record_texts
from tests.scratch import process_folder

from .editor import record, refusing_daemon, workspace_folder
from .test_keystroke_readings import InProcess

HOME = refusing_daemon(Home(process_folder("remem-lsp-nothing-outside-") / "home"))

# The folder whose files must never be listed or opened while a test watches; none: not watching.
_WATCHED: list[Path] = []
_TOUCHED: list[tuple[str, str]] = []


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _WATCHED or event not in ("os.scandir", "os.listdir", "open") or not args:
        return
    path = args[0]
    if not isinstance(path, (str, bytes, os.PathLike)):  # a descriptor: opened as a path first
        return
    real = os.path.realpath(os.fsdecode(path))
    if Path(real).is_relative_to(_WATCHED[0]):
        _TOUCHED.append((event, real))


sys.addaudithook(_audit)  # hooks cannot be removed: this one watches only while `_WATCHED` is set


def touched_outside(outside: Path, act: Any) -> list[tuple[str, str]]:
    """What `act()` listed or opened in `outside`."""
    _TOUCHED.clear()
    _WATCHED.append(outside.resolve())
    try:
        act()
    finally:
        _WATCHED.clear()
    return list(_TOUCHED)


@pytest_asyncio.fixture
async def editor() -> AsyncIterator[InProcess]:
    editor = InProcess(HOME)
    await editor.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
    yield editor
    await editor.request("shutdown", None)


def diagnostics_of(editor: InProcess, path: Path) -> list[dict[str, Any]]:
    sent = [
        m["params"]
        for m in editor.written
        if m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == path.as_uri()
    ]
    assert sent, f"nothing was published to {path.name}"
    return list(sent[-1]["diagnostics"])


def codes(editor: InProcess, path: Path) -> list[str]:
    return [f"{d['source']}/{d['code']}" for d in diagnostics_of(editor, path)]


@pytest.mark.asyncio
@pytest.mark.parametrize("put", ["the folder moved out", "another folder"])
async def test_a_folder_replaced_by_a_link_within_the_window_is_not_listed_through_it(
    editor: InProcess, tmp_path: Path, put: str
) -> None:
    folder = workspace_folder(HOME, f"linked-in-window-{put}")
    (folder / "sibling.md").write_text(record("sibling"))
    mine = folder / "mine.md"
    editor.open(mine, record("mine"))
    editor.type(mine, record("mine", body="Typed once.\n"))
    outside = tmp_path / "outside"
    if put == "the folder moved out":
        folder.rename(outside)
    else:
        outside.mkdir()
        (outside / "secret.md").write_text(record("mine"))
        shutil.rmtree(folder)
    folder.symlink_to(outside, target_is_directory=True)

    touched = touched_outside(outside, lambda: editor.type(mine, record("mine", body="Typed twice.\n")))

    assert touched == []
    assert codes(editor, mine) == ["remem/linked-workspace"]


@pytest.mark.asyncio
@pytest.mark.parametrize("linked", ["memory/workspaces", "memory"])
@pytest.mark.parametrize("window", ["within", "past"])
async def test_a_link_above_the_workspace_folder_is_refused_as_the_store_refuses_it(
    editor: InProcess, tmp_path: Path, linked: str, window: str
) -> None:
    folder = workspace_folder(HOME, f"linked-above-{linked}-{window}")
    (folder / "sibling.md").write_text(record("sibling"))
    mine = folder / "mine.md"
    editor.open(mine, record("mine"))
    editor.type(mine, record("mine", body="Typed once.\n"))
    assert codes(editor, mine) == []
    link = HOME.root / linked
    outside = tmp_path / "outside"
    shutil.copytree(link, outside, symlinks=True)
    (outside / folder.relative_to(link) / "other.md").write_text(record("mine"))  # a duplicate
    aside = tmp_path / "aside"
    link.rename(aside)
    try:
        link.symlink_to(outside, target_is_directory=True)
        if window == "past":
            await asyncio.sleep(1.2)  # past `TRUST_READ`

        touched = touched_outside(outside, lambda: editor.type(mine, record("mine", body="Typed twice.\n")))

        found = diagnostics_of(editor, mine)
    finally:
        link.unlink()
        aside.rename(link)
    assert touched == []
    assert [f"{d['source']}/{d['code']}" for d in found] == ["remem/unjudged"]
    said = f"remem's home {HOME.root} cannot be used: {link} is a symbolic link"
    assert said in found[0]["message"]


@pytest.mark.asyncio
async def test_global_md_under_a_linked_memory_folder_is_refused_as_the_store_refuses_it(
    editor: InProcess, tmp_path: Path
) -> None:
    global_file = HOME.global_file
    editor.open(global_file, "# Rules\n")
    link = HOME.memory
    outside = tmp_path / "outside"
    shutil.copytree(link, outside, symlinks=True)
    aside = tmp_path / "aside"
    link.rename(aside)
    try:
        link.symlink_to(outside, target_is_directory=True)

        touched = touched_outside(outside, lambda: editor.type(global_file, "# Rules, typed\n"))

        found = diagnostics_of(editor, global_file)
    finally:
        link.unlink()
        aside.rename(link)
    assert touched == []
    assert [f"{d['source']}/{d['code']}" for d in found] == ["remem/unjudged"]
    assert f"remem's home {HOME.root} cannot be used: {link} is a symbolic link" in found[0]["message"]


@pytest.mark.asyncio
@pytest.mark.parametrize("linked", ["memory/workspaces", "workspace"])
async def test_a_quick_fix_reads_no_record_through_a_link(
    editor: InProcess, tmp_path: Path, linked: str
) -> None:
    """The records a quick fix renders the index from (`record_texts`) are never listed through
    a link at the workspace folder or above it: only the folder itself was asked, and the
    listing followed a link put there after."""
    folder = workspace_folder(HOME, f"quick-fix-{linked}")
    (folder / "sibling.md").write_text(record("sibling"))
    link = folder if linked == "workspace" else HOME.root / linked
    outside = tmp_path / "outside"
    shutil.copytree(link, outside, symlinks=True)
    aside = tmp_path / "aside"
    link.rename(aside)
    try:
        link.symlink_to(outside, target_is_directory=True)
        read: list[Any] = []
        touched = touched_outside(outside, lambda: read.append(record_texts(editor.server, folder)))
    finally:
        link.unlink()
        aside.rename(link)
    assert (touched, read) == ([], [({}, set())])
    assert record_texts(editor.server, folder)[0].keys() == {"sibling.md"}  # the link gone: read again
