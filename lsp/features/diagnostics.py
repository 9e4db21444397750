"""Live validation of memory files: the store's own validator, on open, change, save and close.

Only this home's files are diagnosed: `GLOBAL.md`, each workspace's records and `MEMORY.md`,
and `settings.yml` (with the daemon's own key-and-line errors). A change to one record
re-validates its whole folder, with the texts open in the editor standing in for the files, so
workspace-wide problems (a duplicate name, `MEMORY.md` out of sync) appear and clear on every
affected document at once. A document's diagnostics are published when they, or its version,
changed since they were last published to it: a keystroke re-judges the folder, but the other
open documents whose problems stayed the same hear nothing (400 open records made 400
publishes a keystroke). After a reconnection every open document's are published again. An
open document's file is itself read on open, save and a change on disk the editor tells of,
for the one thing its text cannot show: bytes that are not UTF-8, which the editor decoded as
it chose (`_read_disk`).

A keystroke judges only the open texts, against the folder's other files as last read: read
less than `TRUST_READ` ago, with the same texts open and the folder's listing unchanged, they
are taken as they are, and read again `TRUST_READ` after that reading, so a file changed in
place that no one tells of shows within it. Whatever else re-judges a folder reads it now. A
reading holds the folder's texts: it is kept only while a document of the folder is open, and
for `READINGS_KEPT` folders at most (decision 0481).

A burst of opens (a window restored, a folder's records opened at once) judges each folder
once: each open judged its whole folder, and 400 records took 400 judgements of 400 (8 s). A
record opened is judged when no other has opened for `BURST_QUIET`, at the latest `BURST_LATEST`
after the burst began, and before any other message is handled: a request or a change after the
opens finds their diagnostics published, judged on every text opened (decision 0448).

A change on disk no daemon tells of (a folder deleted by hand while none runs) is heard from the
editor, asked once a document of the home is open to watch memory (`didChangeWatchedFiles`):
`GLOBAL.md` and each folder of open documents that a change concerns are judged again, a folder
in a burst as opens are, since an editor may tell of each file of a checkout in a notification
of its own (200 of them judged a folder of 400 records 200 times, 6 s) (decision 0470).

What cannot be judged (an `OSError`: a folder that cannot be listed, a sibling that cannot be
read, a name too long) is said where the user looks, as a `remem/unjudged` warning on each of its
open documents beside what their texts show by themselves, and once per cause (the error and
where it comes from: the first folder on the way that cannot be passed through, however many
folders meet it, else the path that failed) as a popup; it is judged again
every `RETRY_UNJUDGED` while a document of it is open, since a fix made outside the editor tells
the server nothing, and the warning goes once it is judged; after `shutdown`, never (decision 0459).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import stat
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.capabilities import get_capability

from remem.daemon import safe_open
from remem.daemon.home import HomeUnusable
from remem.daemon.memory.canonical import FILE_TOO_LARGE, LINKED_WORKSPACE, decode, read_capped, too_large
from remem.daemon.memory.diagnostics import Diagnostic, Position, Range, Severity, TextPositions, diagnostic
from remem.daemon.memory.lint import FolderFiles, judge_edited, listing, read_folder, unmerged_saves
from remem.daemon.memory.record import GLOBAL_FILE, INDEX_FILE, record_name_of
from remem.daemon.memory.stamps import RACY_NS
from remem.daemon.memory.validation import validate_global, validate_index
from remem.daemon.settings import SettingsError, parse_settings

from ..daemon_link import RECONNECTED
from ..documents import folder_and_name, home_path, memory_file, open_documents, opened, workspace_folder
from ..rule_docs import PREFIX, rule_href
from ..server import RememServer
from ..text_documents import LspTextDocument

log = logging.getLogger(__name__)

SETTINGS_SOURCE = "settings.yml"
_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
}


# How long a burst of opens, or of changes on disk, may pause between two, and last, before its
# folders are judged.
BURST_QUIET = 0.05
BURST_LATEST = 1.0
# How often what could not be judged is tried again while a document of it is open.
RETRY_UNJUDGED = 2.0


def register(server: RememServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: RememServer, params: types.DidOpenTextDocumentParams) -> None:
        _read_disk(ls, params.text_document.uri)
        path = home_path(ls, params.text_document.uri)
        if path is not None and path.is_relative_to(ls.home.root):
            _watch_memory(ls)
        if path is not None and workspace_folder(ls, path) is not None:
            _judge_soon(ls, path.parent)
        else:
            refresh(ls, path)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: RememServer, params: types.DidChangeTextDocumentParams) -> None:
        refresh(ls, home_path(ls, params.text_document.uri), typed=True)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: RememServer, params: types.DidSaveTextDocumentParams) -> None:
        _read_disk(ls, params.text_document.uri)
        refresh(ls, home_path(ls, params.text_document.uri))

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: RememServer, params: types.DidCloseTextDocumentParams) -> None:
        # The file on disk speaks for the folder again; the closed document's problems go.
        _forget(ls, params.text_document.uri)
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[])
        )
        path = home_path(ls, params.text_document.uri)
        if path is not None and workspace_folder(ls, path) is not None:
            _publish_folder(ls, path.parent)

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(ls: RememServer, params: types.DidChangeWatchedFilesParams) -> None:
        _disk_changed(
            ls, [path for change in params.changes if (path := home_path(ls, change.uri)) is not None]
        )

    # A file changed on disk can change an open sibling's diagnostics; after a reconnection,
    # memory may have changed while no daemon told.
    server.link.on("memory/changed", lambda news: _memory_changed(server, news))
    server.link.on(RECONNECTED, lambda _: _refresh_open(server))
    server.before_message.append(lambda: _judge_burst(server))
    server.on_lost.append(lambda document: _lost(server, document))
    server.on_shutdown.append(lambda: _stop(server))


def _stop(ls: RememServer) -> None:
    """Judge nothing more: after `shutdown` nothing may be published, nor any judgement tried."""
    if (burst := _BURSTS.pop(ls, None)) is not None and burst.timer is not None:
        burst.timer.cancel()
    for read in _READS.pop(ls, {}).values():
        read.forget()
    if (unjudged := _UNJUDGED.get(ls)) is not None:
        unjudged.stop()


def _lost(ls: RememServer, document: LspTextDocument) -> None:
    """A memory file's copy no longer the editor's text: its diagnostics (and lenses) would
    point at text the user does not have. They are cleared, its folder is judged on the file,
    and the user is told once how to get them back."""
    path = home_path(ls, document.uri)
    if path is None or not (
        path in (ls.home.global_file, ls.home.settings_file) or workspace_folder(ls, path)
    ):
        return
    _forget(ls, document.uri)
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=document.uri, diagnostics=[]))
    ls.window_show_message(
        types.ShowMessageParams(
            type=types.MessageType.Warning,
            message=f"remem lost track of {path.name}: the editor sent a change to it that could "
            "not be applied. Close and reopen it to see its diagnostics, lenses and quick fixes again.",
        )
    )
    ls.refresh_lenses()
    refresh(ls, path)


@dataclass
class _Burst:
    """The folders of the documents opened, or changed on disk, in a burst, not judged yet."""

    folders: set[Path] = field(default_factory=set)
    began: float = 0.0
    timer: asyncio.TimerHandle | None = None


_BURSTS: weakref.WeakKeyDictionary[RememServer, _Burst] = weakref.WeakKeyDictionary()


def _judge_soon(ls: RememServer, folder: Path) -> None:
    """Judge `folder` when the burst (of opens, or of changes on disk) it is part of ends."""
    burst = _BURSTS.setdefault(ls, _Burst())
    loop = asyncio.get_running_loop()
    if not burst.folders:
        burst.began = loop.time()
    burst.folders.add(folder)
    if burst.timer is not None:
        burst.timer.cancel()
    at = min(loop.time() + BURST_QUIET, burst.began + BURST_LATEST)
    burst.timer = loop.call_at(at, _judge_burst, ls)


def _judge_burst(ls: RememServer) -> None:
    burst = _BURSTS.get(ls)
    if burst is None or not burst.folders:
        return
    if burst.timer is not None:
        burst.timer.cancel()
    for folder in sorted(burst.folders):
        _publish_folder(ls, folder)  # takes it out of the burst's


def _memory_changed(ls: RememServer, news: dict[str, Any]) -> None:
    if news.get("scope") == "global":
        refresh_global(ls)
    elif isinstance(news.get("workspace"), str):
        _publish_folder(ls, ls.home.workspaces / news["workspace"])


# What the editor is asked to watch, below the home: the memory folder and its files, each
# workspace and its files; not the reviews and logs beside them, which change no diagnostic.
_WATCHED = "{memory,memory/*,memory/workspaces/*,memory/workspaces/*/*}"
_WATCHING: weakref.WeakSet[RememServer] = weakref.WeakSet()


def _watch_memory(ls: RememServer) -> None:
    """Ask the editor, once a document of the home is open, to tell of each change to memory on disk
    (`workspace/didChangeWatchedFiles`): the daemon's news says only what passed through it, and
    without a daemon a folder deleted, or a record put back, was judged only at the next edit.
    Only an editor that watches on request, outside its workspace too, is asked (VS Code)."""
    if ls in _WATCHING:
        return
    _WATCHING.add(ls)
    watched = get_capability(ls.client_capabilities, "workspace.did_change_watched_files", None)
    if watched is None or not (watched.dynamic_registration and watched.relative_pattern_support):
        return
    pattern = types.RelativePattern(base_uri=ls.home.root.as_uri(), pattern=_WATCHED)
    options = types.DidChangeWatchedFilesRegistrationOptions([types.FileSystemWatcher(glob_pattern=pattern)])
    registration = types.Registration(
        "remem/memory-on-disk", types.WORKSPACE_DID_CHANGE_WATCHED_FILES, options
    )
    ls.client_register_capability(types.RegistrationParams([registration]))


def _disk_changed(ls: RememServer, changed: list[Path]) -> None:
    """Judge again what changes on disk concern: `GLOBAL.md`, and each folder of open documents,
    when a file in its folder, that folder or one above it changed: the folder once the burst of
    changes ends (`GLOBAL.md`, one file, at once)."""

    def concerns(folder: Path) -> bool:
        return any(path.parent == folder or folder.is_relative_to(path) for path in changed)

    for path, document in open_documents(ls).items():
        if any(path.is_relative_to(gone) for gone in changed):  # the file, or a folder above it
            _read_disk(ls, document.uri)
    if concerns(ls.home.memory):
        refresh_global(ls)
    for folder in sorted(
        {path.parent for path in open_documents(ls) if workspace_folder(ls, path) is not None}
    ):
        if concerns(folder):
            _judge_soon(ls, folder)


def _refresh_open(ls: RememServer) -> None:
    _published(ls).clear()  # said again, whatever was said before
    refresh_global(ls)
    _refresh_settings(ls)
    for folder in {path.parent for path in open_documents(ls) if workspace_folder(ls, path) is not None}:
        _publish_folder(ls, folder)  # once each, not once per document open in it


def refresh(ls: RememServer, path: Path | None, *, typed: bool = False) -> None:
    """Diagnose the memory file at `path` and, for a workspace's, the folder's open documents;
    `typed`: the editor changed its text, and nothing on disk is known to have changed."""
    if path is None:
        return
    if path == ls.home.global_file:
        refresh_global(ls)
    elif path == ls.home.settings_file:
        _refresh_settings(ls)
    elif workspace_folder(ls, path) is not None:
        _publish_folder(ls, path.parent, typed=typed)


def refresh_global(ls: RememServer) -> None:
    """Diagnose `GLOBAL.md` if the editor has it open."""
    global_file = ls.home.global_file
    document = open_documents(ls).get(global_file)
    if document is not None:
        text, unencodable = _as_utf8(document)
        found = [FILE_TOO_LARGE] if too_large(text) else unencodable + validate_global(text, secrets=True)
        _judge(
            ls,
            global_file,
            {GLOBAL_FILE: document},
            lambda: {GLOBAL_FILE: found + _kept(ls, global_file)},
            lambda: {GLOBAL_FILE: found},
        )


def _refresh_settings(ls: RememServer) -> None:
    settings = ls.home.settings_file
    document = open_documents(ls).get(settings)
    if document is not None:
        text, unencodable = _as_utf8(document)
        found = unencodable + settings_problems(text)
        _judge(
            ls,
            settings,
            {settings.name: document},
            lambda: {settings.name: found + _kept(ls, settings)},
            lambda: {settings.name: found},
        )


def _kept(ls: RememServer, path: Path) -> list[Diagnostic]:
    """A warning for each save kept beside a single file (swap.py): only the daemon's log said so.
    `HomeUnusable` when `memory` is a link, which the store refuses and which is never listed."""
    return unmerged_saves(path.name, listing(ls.home.refuse_link(path.parent), ls.lint_cache))


def settings_problems(text: str) -> list[Diagnostic]:
    """`settings.yml`'s problems as the daemon reports them, each on the line it names."""
    try:
        parse_settings(text.encode("utf-8"), SETTINGS_SOURCE)
    except SettingsError as exc:
        positions = TextPositions(text)  # lines as the editor breaks them (a lone CR too), in UTF-16
        last = len(positions.line_starts) - 1
        return [
            diagnostic(
                "invalid-settings",
                Severity.ERROR,
                problem.removeprefix(f"{SETTINGS_SOURCE}:{line}: "),
                positions.line_range(min(line - 1, last)),
            )
            for problem, line in zip(exc.problems, exc.lines, strict=True)
        ]
    return []


def _publish_folder(ls: RememServer, folder: Path, *, typed: bool = False) -> None:
    """Validate the folder with the editor's texts and publish for each document open in it;
    `typed`: after a change of the editor's, judged with its files as last read if that is
    recent enough (`_folder_files`)."""
    if (burst := _BURSTS.get(ls)) is not None:
        burst.folders.discard(folder)  # judged now, with every text opened so far
    placed = ((folder_and_name(doc, path), doc) for path, doc in open_documents(ls).items())
    open_here = {name: doc for (parent, name), doc in placed if parent == folder}
    encoded = {name: _as_utf8(document) for name, document in open_here.items()}
    edited = {name: text for name, (text, _) in encoded.items()}

    def judge() -> dict[str, list[Diagnostic]]:
        if not edited:  # no document left to judge for: the folder is neither read nor kept
            return {}
        files = _folder_files(ls, folder, edited, typed)
        if files is None:  # a linked folder is never read through (it may lead out of REMEM_HOME)
            return {name: encoded[name][1] + [LINKED_WORKSPACE] for name in edited}
        reports = judge_edited(files, edited, ls.lint_cache)
        return {name: encoded[name][1] + reports.get(name, []) for name in edited}

    if not open_here and (read := _READS.get(ls, {}).pop(folder, None)) is not None:
        read.forget()  # no document left to judge the folder for

    def alone() -> dict[str, list[Diagnostic]]:
        return {name: encoded[name][1] + _own_problems(ls, name, text) for name, text in edited.items()}

    _judge(ls, folder, open_here, judge, alone)


# How long a folder's files, as last read, are taken as they are for a keystroke's judgement.
TRUST_READ = 1.0
# How many folders' readings are kept at most, the least recently judged with dropped first: a
# reading holds its folder's texts, and is kept only while a document of the folder is open.
READINGS_KEPT = 8


@dataclass
class _Read:
    """A folder's files as read at `at` (the loop's clock), and when they are read again;
    `proof`: the folder's own `lstat` (`_seen`) taken before it was listed, which a keystroke
    finds the same while the listing is, or None when it proves nothing (a change too recent)."""

    files: FolderFiles
    at: float
    proof: tuple[int, ...] | None
    timer: asyncio.TimerHandle | None = None

    def forget(self) -> None:
        if self.timer is not None:
            self.timer.cancel()


_READS: weakref.WeakKeyDictionary[RememServer, dict[Path, _Read]] = weakref.WeakKeyDictionary()


def _folder_files(
    ls: RememServer, folder: Path, edited: Mapping[str, str], typed: bool
) -> FolderFiles | None:
    """The files of `folder` but the `edited` ones, as a keystroke (`typed`) may take them: as
    last read, if less than `TRUST_READ` ago, with the same texts open and the folder's own
    `lstat` the same as before that reading listed it (its type, device and settled stamp: a
    file added, removed, renamed or replaced changes it, and so does a link put in its place);
    they are read again `TRUST_READ` after that reading, in case a file changed in place with no
    one telling (decision 0481). For any other cause (an open, a save, news of a change on disk),
    and past that, they are read now. None when the folder is a link, which is never read
    through, as the store reads none; `HomeUnusable`, as the store says it, when `memory` or
    `memory/workspaces` is one. A keystroke's one `lstat` is asked before anything is listed,
    so nothing is ever listed through a link; the folders above are asked at each reading."""
    reads = _READS.setdefault(ls, {})
    loop = asyncio.get_running_loop()
    read = reads.get(folder)
    if not (
        typed
        and read is not None
        and read.proof is not None
        and loop.time() - read.at < TRUST_READ
        and read.files.edited == edited.keys()
        and _seen(folder) == read.proof
    ):
        if (read := reads.pop(folder, None)) is not None:  # not trusted again, should reading fail
            read.forget()
        ls.home.refuse_link(ls.home.workspaces)
        seen = _seen(folder)
        if seen and stat.S_ISLNK(seen[0]):
            return None
        # Taken before the listing: a change made while it is listed makes the next one differ.
        settled = not seen or time.time_ns() - seen[-1] > RACY_NS
        read = _Read(read_folder(folder, edited, ls.lint_cache), loop.time(), seen if settled else None)
    reads.pop(folder, None)
    reads[folder] = read  # last: the least recently judged with go first
    for oldest in list(reads)[:-READINGS_KEPT]:
        reads.pop(oldest).forget()
    if typed and read.timer is None:
        read.timer = loop.call_at(read.at + TRUST_READ, _publish_folder, ls, folder)
    return read.files


def _seen(folder: Path) -> tuple[int, ...]:
    """The folder's own type, device, inode, size, mtime and ctime (an `lstat`: a link's own,
    never what it leads to); empty when nothing is there (gone, as the listing takes it)."""
    try:
        st = os.lstat(folder)
    except (FileNotFoundError, NotADirectoryError):
        return ()
    return (stat.S_IFMT(st.st_mode), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _own_problems(ls: RememServer, name: str, text: str) -> list[Diagnostic]:
    """The problems a workspace file's text has by itself, whatever its folder holds."""
    if too_large(text):
        return [FILE_TOO_LARGE]
    if name == INDEX_FILE:
        return validate_index(text, None)
    return ls.lint_cache.parse(text, name).diagnostics if record_name_of(name) is not None else []


def _rejudge(ls: RememServer, target: Path) -> None:
    """Judge again what `_judge` was given as `target`: a single file or a workspace folder."""
    if target in (ls.home.global_file, ls.home.settings_file):
        refresh(ls, target)
    else:
        _publish_folder(ls, target)


def _judge(
    ls: RememServer,
    target: Path,
    documents: Mapping[str, LspTextDocument],
    judge: Callable[[], Mapping[str, list[Diagnostic]]],
    alone: Callable[[], Mapping[str, list[Diagnostic]]],
) -> None:
    """Publish to each of `documents` (by file name) what `judge` finds for it; or, when it
    cannot judge (an `OSError`, or a link above the workspaces: `HomeUnusable`), what each text
    shows `alone` (without the disk) and a warning that says so, once per cause in a popup too,
    and try again until it can."""
    unjudged = _UNJUDGED.setdefault(ls, _Unjudged())
    try:
        found = judge()
    except (OSError, HomeUnusable) as error:
        cause = _cause(ls, error)
        log.warning("cannot judge %s: %s", target, cause)
        known = alone()
        for name, document in documents.items():
            _publish(ls, document, [*known.get(name, []), _unjudged_warning(cause)])
        unjudged.failed(ls, target, cause, bool(documents))
        return
    unjudged.causes.pop(target, None)
    for name, document in documents.items():
        _publish(ls, document, found.get(name, []))


def _cause(ls: RememServer, error: OSError | HomeUnusable) -> str:
    """What failed, named where it failed: the first folder in the home, on the way down to the
    path that failed, that cannot be passed through with the same error (tried, not guessed
    from its mode, which root is not held to: a loop of links, a folder refused), else that path
    itself. A loop or a refused folder is so one cause, however many of the folders and files
    under it are judged; a folder that can be passed through though not listed is no cause of
    what fails under it. A link above the workspaces (`HomeUnusable`) is said as the store says it."""
    if isinstance(error, HomeUnusable) or not (error.strerror and error.filename):
        return str(error)
    failed = Path(os.fsdecode(error.filename))
    return f"{error.strerror}: {ls.home.first_impassable(failed, error) or failed}"


def _unjudged_warning(cause: str) -> Diagnostic:
    return diagnostic(
        "unjudged",
        Severity.WARNING,
        f"remem cannot validate this file ({cause}), so its problems are not known; this goes "
        "by itself once it can",
        Range(start=Position(line=0, character=0), end=Position(line=0, character=0)),
    )


@dataclass
class _Unjudged:
    """What could not be judged (a folder, `GLOBAL.md`, `settings.yml`) and the cause told."""

    causes: dict[Path, str] = field(default_factory=dict)
    timer: asyncio.TimerHandle | None = None

    def failed(self, ls: RememServer, target: Path, cause: str, shown: bool) -> None:
        """Tell a new cause once, and try again later while a document of `target` is open."""
        if not shown:  # no document left to say it on: nothing to try again for
            self.causes.pop(target, None)
            return
        told = cause in self.causes.values()  # by this target or another one it failed for
        self.causes[target] = cause
        if not told:
            ls.window_show_message(
                types.ShowMessageParams(
                    type=types.MessageType.Warning,
                    message=f"remem cannot validate memory files ({cause}): the open documents "
                    "of what it holds say so until it can be read, which is tried again every few seconds",
                )
            )
        if self.timer is None:
            self.timer = asyncio.get_running_loop().call_later(RETRY_UNJUDGED, self.retry, ls)

    def stop(self) -> None:
        """Try nothing again: the server is shutting down."""
        if self.timer is not None:
            self.timer.cancel()
        self.timer = None
        self.causes.clear()

    def retry(self, ls: RememServer) -> None:
        self.timer = None
        opened = open_documents(ls)
        for target in list(self.causes):
            if target in opened or any(path.parent == target for path in opened):
                _rejudge(ls, target)
            else:  # closed since: no one to tell
                del self.causes[target]


_UNJUDGED: weakref.WeakKeyDictionary[RememServer, _Unjudged] = weakref.WeakKeyDictionary()


def _as_utf8(document: LspTextDocument) -> tuple[str, list[Diagnostic]]:
    """The text the validators judge (each lone surrogate as U+FFFD), and its encoding errors:
    the file's on disk as last read (`_read_disk`), and one at the first lone surrogate of the
    text as the editor sent it.

    An editor can send one (JSON `"\\ud800"`), though no file can hold it; U+FFFD is one code
    point and one UTF-16 unit as the surrogate was, so every position the validators give stays
    true of the editor's text."""
    on_disk = _ON_DISK.get(document, [])
    first = document.lone_surrogate
    if first is None:
        return document.source, on_disk
    code = ord(document.editor_source[first])
    message = f"the text holds a lone surrogate (U+{code:04X}), which UTF-8 cannot encode; delete it"
    where = TextPositions(document.source).range(first, first + 1)
    return document.source, [*on_disk, diagnostic("encoding", Severity.ERROR, message, where)]


# The encoding error of each open memory document's file on disk, as last read: the editor's
# text, which it decoded as it chose (Latin-1, say), stands in for the file everywhere else.
_ON_DISK: weakref.WeakKeyDictionary[LspTextDocument, list[Diagnostic]] = weakref.WeakKeyDictionary()
_REENCODE = (
    " (VS Code: click the encoding in the status bar; if the text looks wrong, Reopen with "
    "Encoding the one it was saved in; then Save with Encoding, UTF-8)"
)


def _read_disk(ls: RememServer, uri: str) -> None:
    """Read the file of the memory document open at `uri` as the store would (on an open, a
    save, a change on disk the editor told of), and keep its encoding error for the document
    until it is read again: a file saved in another encoding made `remem memory validate`
    report it, and the store refuse the workspace, while the editor, judging its own decoded
    text, said nothing. The file is opened from the home down through no link and never waited
    on as a FIFO, and read up to the store's cap; what cannot be read so (gone, a link, too
    large, unreadable) has no encoding to judge, and its folder's judgement says what it is."""
    document = opened(ls, uri)
    found = memory_file(ls, uri)
    if document is None or found is None:
        return
    try:
        with os.fdopen(safe_open.open_regular(found.path, root=ls.home.root), "rb") as handle:
            raw = read_capped(handle)
    except OSError:
        raw = None
    problems = [] if raw is None else decode(raw)[1]
    _ON_DISK[document] = [p.model_copy(update={"message": p.message + _REENCODE}) for p in problems]


def _described(code: str) -> types.CodeDescription | None:
    href = rule_href(code)
    return None if href is None else types.CodeDescription(href=href)


# What each server last published to each open document: (version, diagnostics) by URI.
_PUBLISHED: weakref.WeakKeyDictionary[RememServer, dict[str, tuple[int | None, list[types.Diagnostic]]]] = (
    weakref.WeakKeyDictionary()
)


def _published(ls: RememServer) -> dict[str, tuple[int | None, list[types.Diagnostic]]]:
    return _PUBLISHED.setdefault(ls, {})


def _forget(ls: RememServer, uri: str) -> None:
    """Forget what was published to the document at `uri`, however the editor encoded it."""
    published = _published(ls)
    wanted = unquote(uri)
    for said in [key for key in published if unquote(key) == wanted]:
        del published[said]


def _publish(ls: RememServer, document: LspTextDocument, found: list[Diagnostic]) -> None:
    # Under the URI the editor opened the document with: pygls's key for it is decoded.
    items = [_lsp_diagnostic(d) for d in found]
    said = (document.version, items)
    published = _published(ls)
    if published.get(document.uri) == said:  # the editor shows these already
        return
    published[document.uri] = said
    ls.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(uri=document.uri, version=document.version, diagnostics=items)
    )


# Keystroke after keystroke the same problems come back: each is converted once.
@functools.lru_cache(maxsize=1024)
def _lsp_diagnostic(d: Diagnostic) -> types.Diagnostic:
    return types.Diagnostic(
        range=types.Range(
            start=types.Position(d.range.start.line, d.range.start.character),
            end=types.Position(d.range.end.line, d.range.end.character),
        ),
        message=d.message,
        severity=_SEVERITY[d.severity],
        # Shown as `remem(type-invalid)`, the code linked to the rule's documentation.
        code=d.code.removeprefix(PREFIX),
        code_description=_described(d.code),
        source="remem",
    )
