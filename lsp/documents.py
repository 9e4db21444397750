"""Which memory file an editor document is, and texts and positions as the editor sees them.

The editor features (code actions, lenses, hover, links, completion, symbols) serve only the
files of this home's memory folder: `GLOBAL.md`, and each workspace's records and `MEMORY.md`.
Positions are LSP positions (UTF-16), with lines broken exactly where the validator breaks them,
so a feature's ranges and the diagnostics' ranges always agree.

A document is the file its own URI names (`path_of`), and is answered under that URI. pygls keys
its open documents by their URI decoded, which is no URI (`x%23y.md` decoded is `x#y.md`, a
fragment), and compares no paths: `open_documents` finds them by path, whatever the encoding.

A home given through a symbolic link (`REMEM_HOME=~/remem`, a link to a synced folder) is also
reached by its real path, which is how an editor often opens its files: a document's path is
taken as under the home's own path when it lies under either (`home_path`; the real path is
resolved again whenever it no longer leads to the home's folder: a re-pointed link, a moved
folder), and a `..` in it is resolved by name. A link inside the home is never followed: the
store refuses one, and so do diagnostics (a document under it, or reached through it by `..`,
is no memory file).
"""

from __future__ import annotations

import functools
import os
import re
import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import cast
from urllib.parse import unquote

from lsprotocol import types
from pygls import uris

from remem.daemon.home import HomeUnusable
from remem.daemon.memory.diagnostics import TextPositions
from remem.daemon.memory.lint import listing
from remem.daemon.memory.record import INDEX_FILE, RecordType, record_name_of, render_record
from remem.daemon.memory.validation import validate_record
from remem.daemon.protocol.memory import Record
from remem.daemon.safe_open import open_regular

from .server import RememServer
from .text_documents import LspTextDocument

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class Kind(str, Enum):
    GLOBAL = "global"
    RECORD = "record"
    INDEX = "index"


@dataclass(frozen=True)
class MemoryFile:
    kind: Kind
    path: Path

    @property
    def key(self) -> str:
        """The workspace key of a record or `MEMORY.md` (its folder's name)."""
        return self.path.parent.name


def memory_file(ls: RememServer, uri: str) -> MemoryFile | None:
    """What `uri` is in the memory folder; None for every other document."""
    path = home_path(ls, uri)
    if path is None:
        return None
    if path == ls.home.global_file:
        return MemoryFile(Kind.GLOBAL, path)
    if workspace_folder(ls, path) is None:
        return None
    if path.name == INDEX_FILE:
        return MemoryFile(Kind.INDEX, path)
    return MemoryFile(Kind.RECORD, path) if record_name_of(path.name) is not None else None


def home_files(ls: RememServer) -> dict[str, str]:
    """The home's files the editor opens by path, named with each answer about the model route:
    `settings.yml`, and `GLOBAL.md`, which belongs to no workspace folder."""
    return {"settingsFile": str(ls.home.settings_file), "globalFile": str(ls.home.global_file)}


def open_documents(ls: RememServer) -> dict[Path, LspTextDocument]:
    """The documents the editor has open, by the file each one's own URI names."""
    return {
        path: document for document in _documents(ls) if (path := home_path(ls, document.uri)) is not None
    }


def opened(ls: RememServer, uri: str) -> LspTextDocument | None:
    """The document the editor has open at `uri`; None if it has not opened it.

    Never pygls's `get_text_document`, which reads a file for a document that is not open (a
    `remem-session:` URI as a path at the disk's root): a feature answers on what the editor shows.
    """
    wanted = unquote(uri)  # however the editor encoded it this time
    return next((d for d in _documents(ls) if unquote(d.uri) == wanted), None)


def _documents(ls: RememServer) -> Iterable[LspTextDocument]:
    # The workspace made at `initialize` makes only these, and no document opens before it. A
    # lost one (a change to it dropped) is not the editor's text: taken for closed, its file read.
    documents = cast("Iterable[LspTextDocument]", ls.workspace.text_documents.values())
    return (document for document in documents if not document.lost)


def text_of(ls: RememServer, path: Path) -> str | None:
    """The editor's text of `path` if it is open, else the file's; None if there is no file."""
    document = open_documents(ls).get(path)
    if document is not None:
        return document.source
    data = _file_bytes(path)
    return None if data is None else data.decode("utf-8", errors="replace")


def _file_bytes(path: Path) -> bytes | None:
    """The bytes of the regular file at `path`; None if there is none. Never through a link (it
    could lead out of REMEM_HOME; the store refuses it too), nor waiting on a FIFO for a writer."""
    try:
        with os.fdopen(open_regular(path), "rb") as handle:
            return handle.read()
    except OSError:
        return None


def record_texts(ls: RememServer, folder: Path) -> tuple[dict[str, str], set[str]]:
    """Every record of a workspace folder by file name, the editor's texts standing in for files;
    and the names of those whose bytes are not UTF-8 (left out: what they say is unknown)."""
    try:  # a link at the folder or above it: its files are not memory's, and may lie outside REMEM_HOME
        names = listing(ls.home.refuse_link(folder), ls.lint_cache)  # listed through no link
    except HomeUnusable:
        return {}, set()
    opened = {path.name: doc.source for path, doc in open_documents(ls).items() if path.parent == folder}
    texts: dict[str, str] = {}
    undecodable: set[str] = set()
    for name in sorted(n for n in names | opened.keys() if record_name_of(n) is not None):
        if name in opened:
            texts[name] = opened[name]
        elif (data := _file_bytes(folder / name)) is not None:
            try:
                texts[name] = data.decode("utf-8")
            except UnicodeDecodeError:
                undecodable.add(name)
    return texts, undecodable


def valid_name(name: str) -> bool:
    """Whether the store accepts `name` for a record in the file of that name (its rules decide)."""
    record = Record(name=name, description="d", type=RecordType.PROJECT.value, content="c\n")
    problems = validate_record(render_record(record), record.file_name)
    return bool(name) and not any(p.code.startswith("remem/name") for p in problems)


def file_name_as_record(path: Path) -> str | None:
    """The record name a file's name stands for, when the store would accept it."""
    stem = record_name_of(path.name)
    return stem if stem is not None and valid_name(stem) else None


def workspace_cwd(ls: RememServer, key: str) -> str:
    """The project folder of a workspace as its `workspace.json` names it; "" when unknown."""
    return ls.stores.memory.workspace_of(key).cwd


def workspace_folder(ls: RememServer, path: Path) -> Path | None:
    """The workspace folder a record or `MEMORY.md` belongs to; None for any other file."""
    return _workspace_folder(path, ls.home.workspaces)


@functools.lru_cache(maxsize=1024)  # asked on every keystroke: two new `Path`s and a comparison
def _workspace_folder(path: Path, workspaces: Path) -> Path | None:
    if path.suffix != ".md" or path.parent.parent != workspaces:
        return None
    return path.parent


# Each open document's path, folder and name, kept with the document and dropped with it:
# asked for every open document on every keystroke, where a cache of 1 024 paths, asked in the
# same order each time, missed every time once more documents than that were open.
_PLACES: weakref.WeakKeyDictionary[LspTextDocument, tuple[Path, Path, str]] = weakref.WeakKeyDictionary()


def folder_and_name(document: LspTextDocument, path: Path) -> tuple[Path, str]:
    """The folder `path`, the file open as `document`, is in, and its name."""
    kept = _PLACES.get(document)
    if kept is None or (kept[0] is not path and kept[0] != path):  # the home's path re-pointed
        kept = _PLACES[document] = (path, path.parent, path.name)
    return kept[1], kept[2]


@functools.lru_cache(maxsize=1024)  # asked for every open document on every keystroke
def path_of(uri: str) -> Path | None:
    fs_path = uris.to_fs_path(uri)
    return Path(fs_path) if fs_path is not None else None


def home_path(ls: RememServer, uri: str) -> Path | None:
    """The file `uri` names, as a path under `ls.home.root` when it lies in the home, however it
    was reached (the home's real path, a `..`); any other file's path as it is."""
    path = path_of(uri)
    if path is None:
        return None
    if ".." in path.parts:
        path = _without_dot_dot(path)
    return _under_home(ls.home.root, path)


def _under_home(root: Path, path: Path) -> Path:
    if _is_under(path, root):
        return path
    real = _real_home(root)
    return path if real is None else _moved(path, real, root)


@functools.lru_cache(maxsize=1024)  # asked for every open document on every keystroke
def _is_under(path: Path, folder: Path) -> bool:
    return path.is_relative_to(folder)


@functools.lru_cache(maxsize=1024)
def _moved(path: Path, real: Path, root: Path) -> Path:
    """`path` under `root` when it lies under `real` (the home's real path); else as it is."""
    return root / path.relative_to(real) if path.is_relative_to(real) else path


# The real path each home's path was last resolved to.
_resolved: dict[Path, Path] = {}


def _real_home(root: Path) -> Path | None:
    """The home's real path now; None when there is no home folder.

    Asked on every keystroke, so not resolved each time: the path resolved before is the real
    one as long as it leads to the folder the home's path leads to (the same device and inode:
    two `stat`s). When it no longer does (the link re-pointed, the folder moved, a backup restored
    in its place), it is resolved again: a file of the home's former folder is no memory file.
    """
    folder = _folder_at(root)
    if folder is None:
        return None
    known = _resolved.get(root)
    if known is not None and _folder_at(known) == folder:
        return known
    real = _resolved[root] = Path(os.path.realpath(root))
    return real


def _folder_at(path: Path) -> tuple[int, int] | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return (found.st_dev, found.st_ino)


def _without_dot_dot(path: Path) -> Path:
    """`path` with each `..` taking away the name before it, as the file system does, unless that
    name is a symbolic link (whose `..` is its target's parent): then `path` as it is, which
    names no memory file."""
    parts: list[str] = []
    for part in path.parts:
        if part != "..":
            parts.append(part)
        elif len(parts) > 1:
            if os.path.islink(os.path.join(*parts)):
                return path
            parts.pop()
    return Path(*parts)


def lines_of(text: str) -> list[str]:
    """The lines of `text` without their line breaks, broken where LSP (and the validator) break."""
    if "\r" not in text:  # the usual text: split in C, ten times faster than the expression
        return text.split("\n")
    return _LINE_BREAK.split(text)


def line_break(text: str) -> str:
    """The line break the text uses, for lines a feature inserts."""
    found = _LINE_BREAK.search(text)
    return found.group() if found else "\n"


def offset_at(text: str, position: types.Position) -> int:
    """The code-point offset of an LSP (UTF-16) position; past the line's end means its end."""
    starts = TextPositions(text).line_starts
    if position.line >= len(starts):
        return len(text)
    offset = starts[position.line]
    end = _LINE_BREAK.search(text, offset)
    line_end = end.start() if end else len(text)
    units = 0
    while offset < line_end and units < position.character:
        units += 2 if ord(text[offset]) > 0xFFFF else 1
        offset += 1
    return offset


def lsp_range(positions: TextPositions, start: int, end: int) -> types.Range:
    """The LSP range of the code-point offsets `start`..`end` of a text."""
    found = positions.range(start, end)
    return types.Range(
        start=types.Position(found.start.line, found.start.character),
        end=types.Position(found.end.line, found.end.character),
    )


def whole_lines(first: int, last: int) -> types.Range:
    """Lines `first`..`last` with the line break after `last`."""
    return types.Range(start=types.Position(first, 0), end=types.Position(last + 1, 0))
