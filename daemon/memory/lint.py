"""Validating memory files as they are on disk, with workspace-wide rules from their folder.

A record is judged together with its sibling records (duplicate names, the record limit) and
`MEMORY.md` against what those records render to, exactly as the store would judge them, plus
the warnings for people the store does not need (`likely_secrets`). A folder read once
(`read_folder`) judges the texts an editor has open against it (`judge_edited`) for what
a keystroke changes alone, as the whole folder's judgement would.
"""

from __future__ import annotations

import contextlib
import os
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..fsutil import UNMERGED_MARKER
from ..home import RECEIPT_NAME, Home
from ..os_names import is_utf8, shown
from ..protocol.memory import Record
from .canonical import (
    FILE_TOO_LARGE,
    IRREGULAR_GLOBAL,
    IRREGULAR_INDEX,
    IRREGULAR_RECORD,
    LINKED_WORKSPACE,
    NAME_NOT_UTF8,
    Unread,
    read_file,
    too_large,
)
from .diagnostics import Diagnostic, FileProblems, Position, Range, Severity, diagnostic, has_errors
from .index import render_index
from .lint_cache import FolderEntries, LintCache
from .record import GLOBAL_FILE, INDEX_FILE, RECORDS_MAX, record_name_of
from .validation import (
    ParsedRecord,
    check_duplicates,
    parse_record,
    too_many,
    validate_global,
    validate_index,
    validate_workspace,
)

_SKIPPED_DIRS = {"reviews", "debug"}


@dataclass(frozen=True)
class Unchecked:
    """A file or folder found where memory was searched that this user may not read: said
    beside what was checked, which it never hides."""

    path: str
    reason: str  # what to say of it after its path

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


class NotMemoryFile(Exception):
    """Paths given to the validator that are missing or are not Markdown memory files: `problems`
    says why of each."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def lint_paths(
    paths: list[Path], workspaces: Path | None = None, unread: list[Unchecked] | None = None
) -> list[FileProblems]:
    """Every memory file of `paths` (and under its folders), judged as the store judges it;
    `workspaces` is the home's folder of workspace folders: in the home a file is what its place
    makes it, not its name (decision 0519), and in a workspace folder that is a link (which the
    store refuses) nothing is read. A file or folder on the way this user may not read is
    appended to `unread`, its files left out, the rest judged (a Docker volume in a project
    hid every result), never a bug's error; beside a file that cannot be read, its folder's
    others are judged alone."""
    unread = [] if unread is None else unread
    files = _expand(paths, workspaces, unread)
    home = workspaces.resolve() if workspaces is not None else None  # once, not per file
    reports: dict[Path, list[Diagnostic]] = {}
    # A folder's files by the folder resolved: named under several spellings (`d/a.md`,
    # `x/../d/b.md`, a link to `d`), it is judged, and said when it cannot be listed, once.
    by_folder: dict[Path, tuple[Path, list[Path]]] = {}
    for path in files:
        if home is not None and _in_linked_workspace(path, home):
            reports[path] = [LINKED_WORKSPACE]
        elif path.name == GLOBAL_FILE and not (home is not None and _in_workspace_folder(path, home)):
            try:
                reports[path] = _global_problems(path) + unmerged_saves(
                    GLOBAL_FILE, listing(path.parent.resolve())
                )
            except PermissionError as error:
                unread.append(_cannot_read(error))
        else:
            by_folder.setdefault(path.parent.resolve(), (path.parent, []))[1].append(path)
    for folder, wanted in by_folder.values():
        try:
            reports.update(_lint_folder(folder, wanted, unread))
        except PermissionError as error:
            unread.append(_cannot_read(error))
    # A name that is not UTF-8 is shown as the store shows it, with `\x` escapes JSON can carry.
    return [FileProblems(path=shown(str(p)), diagnostics=reports[p]) for p in files if p in reports]


def _global_problems(path: Path) -> list[Diagnostic]:
    try:  # as the store: never read through a link, never blocked on a FIFO, whenever it came
        text, problems = read_file(path, IRREGULAR_GLOBAL)
    except Unread as exc:
        return [exc.diagnostic]
    except FileNotFoundError:  # gone since it was named: as a look at it found it before
        return [IRREGULAR_GLOBAL]
    return problems if FILE_TOO_LARGE in problems else problems + validate_global(text, secrets=True)


def _in_linked_workspace(path: Path, home: Path) -> bool:
    """Whether `path` is a workspace folder that is a link, or a file in one; `home` is the
    home's workspaces folder resolved, so any spelling of it counts (`..`, a link to it: `/tmp`
    is one on macOS)."""
    folder = path if path.parent.resolve() == home else path.parent
    return folder.is_symlink() and folder.parent.resolve() == home


def _in_workspace_folder(path: Path, home: Path) -> bool:
    """Whether `path` is a file of one of the home's workspace folders (`home` as above), where
    the store reads a `GLOBAL.md` as the record `GLOBAL`, as every other `<name>.md`."""
    return path.parent.resolve().parent == home


def _lint_folder(folder: Path, wanted: list[Path], unread: list[Unchecked]) -> dict[Path, list[Diagnostic]]:
    # A folder the user names is read where it leads (a folder linked elsewhere, `/tmp` on
    # macOS); the listing itself follows no link, and a link in the home was said above.
    resolved = folder.resolve()
    try:
        reports = lint_workspace_folder(resolved)
    except PermissionError as error:
        blocked = Path(os.fsdecode(error.filename))
        if blocked == resolved and not _impassable(resolved):
            # Entered but not listed (mode 0711): its siblings cannot be known.
            unread.append(Unchecked(shown(str(folder)), _unlisted(error)))
        elif blocked.parent == resolved:
            # One file unread must not hide what its siblings, or the file named, hold, nor the
            # other siblings that cannot be read: each is said, or a user let one be read and
            # met the next on the next run.
            unread.append(_cannot_read(error, ", so " + _ACROSS.format("its folder's")))
            unread += _unreadable_besides(resolved, blocked)
        else:
            raise
        return _each_alone(wanted, resolved, {item.path for item in unread}, unread)
    return {path: reports[path.name] for path in wanted}


def _unreadable_besides(folder: Path, blocked: Path) -> list[Unchecked]:
    """Each memory file of `folder` but `blocked` that this user may not read, as the folder's
    judgement would have read them (an index or a record, by name)."""
    found = []
    for name in sorted(listing(folder)):
        path = folder / name
        if path == blocked or not is_utf8(name) or (name != INDEX_FILE and record_name_of(name) is None):
            continue
        try:
            os.close(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK))
        except PermissionError as error:
            found.append(_cannot_read(error))
        except OSError:
            continue  # a link, gone since: judged, or said, as such
    return found


_ACROSS = "the checks across {} files (duplicate names, the index) were skipped"


def _unlisted(error: OSError) -> str:
    skipped = _ACROSS.format("its")
    advice = "let your user read it, or validate a copy elsewhere"
    return f"cannot be listed ({error.strerror}), so {skipped}; {advice}"


def _each_alone(
    wanted: list[Path], resolved: Path, said: set[str], unread: list[Unchecked]
) -> dict[Path, list[Diagnostic]]:
    """The files of `wanted` (all in the folder `resolved`) that can be read, each judged alone;
    one that cannot is appended to `unread`, unless its path is `said` already."""
    reports = {}
    for path in wanted:
        try:
            reports[path] = _judged_alone(path)
        except PermissionError as error:
            if shown(str(resolved / path.name)) not in said:
                unread.append(_cannot_read(error))
    return reports


def _judged_alone(path: Path) -> list[Diagnostic]:
    """A record's, or `MEMORY.md`'s, problems of its own: what needs its siblings is left out."""
    index = path.name == INDEX_FILE
    try:
        text, problems = read_file(path, IRREGULAR_INDEX if index else IRREGULAR_RECORD)
    except Unread as exc:
        return [exc.diagnostic]
    if FILE_TOO_LARGE in problems:
        return problems
    return problems + (
        validate_index(text, None) if index else parse_record(text, path.name, secrets=True).diagnostics
    )


def lint_workspace_folder(
    folder: Path, edited: Mapping[str, str] | None = None, cache: LintCache | None = None
) -> dict[str, list[Diagnostic]]:
    """Diagnostics of every record and of `MEMORY.md` in `folder`, by file name.

    `edited` holds texts an editor has open (by file name); they stand in for the files, so the
    workspace-wide rules (duplicate names, the index in sync) see what the user sees. A `cache`
    kept across calls spares re-reading and re-parsing what did not change since the last one.
    """
    edited = edited or {}
    cache = cache or LintCache()
    files = read_folder(folder, edited, cache)
    decoded = dict(files.read)
    decoded.update(_edited_records(edited))
    index = (edited[INDEX_FILE], []) if INDEX_FILE in edited else files.index
    unread = any(has_errors(problems) for _, problems in decoded.values())  # not UTF-8, too large
    parsed, index_problems = validate_workspace(
        {name: text for name, (text, _) in decoded.items()},
        index[0] if index else None,
        lambda text, name: cache.parse(text, name, typed=name in edited),
        unread,
    )
    kept = files.kept
    reports = {
        name: _record_report(name, problems, parsed[name], kept) for name, (_, problems) in decoded.items()
    }
    if index is not None:
        reports[INDEX_FILE] = index[1] + index_problems + (_orphaned_saves(kept, decoded) if kept else [])
    return _with_names_problems(reports, files)


@dataclass
class FolderFiles:
    """A workspace folder's files as read once, but for the texts an editor stands in for
    (`edited`): what a keystroke's judgement (`judge_edited`) takes as its siblings'."""

    entries: FolderEntries  # as listed
    edited: frozenset[str]
    undecodable: frozenset[str]  # names that are not UTF-8: never read, no record's
    others: frozenset[str]  # listed as no regular file, or none any more when read: never read
    read: dict[str, tuple[str, list[Diagnostic]]]  # each record not edited: text, decoding problems
    index: tuple[str, list[Diagnostic]] | None  # `MEMORY.md`'s, when not edited
    kept: list[str]  # the saves kept beside a file (`swap.py`): almost always none
    _siblings: _Siblings | None = field(default=None, init=False, repr=False)  # derived when first judged

    def siblings(self, cache: LintCache) -> _Siblings:
        if self._siblings is None:
            self._siblings = _Siblings.of(self.read, cache)
        return self._siblings


def read_folder(folder: Path, edited: Iterable[str], cache: LintCache) -> FolderFiles:
    """The files of `folder` but those named in `edited`, each read through `cache`."""
    entries = _entries(folder, cache)
    others = set(entries.other)  # and those no regular file any more when read (swapped since)
    undecodable = frozenset(name for name in entries.regular if not is_utf8(name))
    names = entries.regular - undecodable
    stand_in = frozenset(edited)
    read: dict[str, tuple[str, list[Diagnostic]]] = {}
    for name in sorted(names - stand_in):
        if record_name_of(name) is not None and (found := _read(cache, folder, name, others)) is not None:
            read[name] = found
    index = None
    if INDEX_FILE in names and INDEX_FILE not in stand_in:
        index = _read(cache, folder, INDEX_FILE, others)
    kept = [other for other in names if UNMERGED_MARKER in other]
    return FolderFiles(entries, stand_in, undecodable, frozenset(others), read, index, kept)


@dataclass(frozen=True)
class _Siblings:
    """What the workspace-wide rules need of the records read: computed once per reading, so a
    keystroke costs what the edited records change, not what the folder holds."""

    records: list[Record]  # each valid one's, for the index
    by_name: dict[str, list[str]]  # file names by record name, case folded
    sound: bool  # each read as text, valid alone, no two of them one name: the index is knowable

    @classmethod
    def of(cls, read: Mapping[str, tuple[str, list[Diagnostic]]], cache: LintCache) -> _Siblings:
        parsed = {name: cache.parse(text, name) for name, (text, _) in read.items()}
        by_name: dict[str, list[str]] = defaultdict(list)
        for file_name in sorted(parsed):
            if (name := parsed[file_name].fields.get("name")) is not None:
                by_name[name.casefold()].append(file_name)
        sound = (
            all(p.record is not None for p in parsed.values())
            and all(len(files) == 1 for files in by_name.values())
            and not any(has_errors(problems) for _, problems in read.values())
        )
        records = [p.record for p in parsed.values() if p.record is not None]
        return cls(records, dict(by_name), sound)


def judge_edited(
    files: FolderFiles, edited: Mapping[str, str], cache: LintCache
) -> dict[str, list[Diagnostic]]:
    """What `lint_workspace_folder` finds for each of `edited` (the names `files` was read
    without), its siblings taken as `files` read them: only the duplicate names the edited
    records share are looked at again, and the index rendered only when it is edited."""
    assert files.edited == edited.keys(), "judged with other stand-ins than it was read without"
    siblings = files.siblings(cache)
    own = _edited_records(edited)
    parsed = {name: cache.parse(text, name, typed=True) for name, (text, _) in own.items()}
    # A name is a duplicate within the files of its (case-folded) name alone: those files, a
    # sibling's copy that may be changed, are judged as the whole folder would judge them.
    named = {
        sibling: cache.parse(files.read[sibling][0], sibling)
        for result in parsed.values()
        if (name := result.fields.get("name")) is not None
        for sibling in siblings.by_name.get(name.casefold(), ())
    }
    check_duplicates({**named, **parsed})
    count = len(files.read) + len(own)
    if count > RECORDS_MAX:
        for name, result in parsed.items():
            result.diagnostics.append(too_many(count, own[name][0]))
    kept = files.kept
    reports = {
        name: _record_report(name, problems, parsed[name], kept) for name, (_, problems) in own.items()
    }
    if INDEX_FILE in edited:
        valid = (
            siblings.sound
            and all(result.record is not None for result in parsed.values())
            and not any(has_errors(problems) for _, problems in own.values())
        )
        records = [*siblings.records, *(p.record for p in parsed.values() if p.record is not None)]
        expected = render_index(records) if valid else None
        orphaned = _orphaned_saves(kept, files.read.keys() | own.keys()) if kept else []
        reports[INDEX_FILE] = validate_index(edited[INDEX_FILE], expected) + orphaned
    return _with_names_problems(reports, files, files.edited)


def _edited_records(edited: Mapping[str, str]) -> dict[str, tuple[str, list[Diagnostic]]]:
    return {name: _edited(text) for name, text in edited.items() if record_name_of(name) is not None}


def _record_report(
    name: str, problems: list[Diagnostic], parsed: ParsedRecord, kept: list[str]
) -> list[Diagnostic]:
    # Past the size cap only that is said; the text judged was none.
    found = problems if FILE_TOO_LARGE in problems else problems + parsed.diagnostics
    return found + (unmerged_saves(name, kept) if kept else [])


def _with_names_problems(
    reports: dict[str, list[Diagnostic]], files: FolderFiles, only: frozenset[str] | None = None
) -> dict[str, list[Diagnostic]]:
    """`reports`, with what names say by themselves (of `only` those, if given): one not UTF-8,
    or one of a file that is not regular (never read, as the store reads none: a link could lead
    anywhere)."""
    undecodable, others = files.undecodable, files.others
    if only is not None:
        undecodable, others = undecodable & only, others & only
    for name in undecodable:
        reports[name] = [NAME_NOT_UTF8]
    for name in others:
        if name == INDEX_FILE or record_name_of(name) is not None:
            irregular = IRREGULAR_INDEX if name == INDEX_FILE else IRREGULAR_RECORD
            reports[name] = [irregular, *reports.get(name, [])]
    return reports


def _read(cache: LintCache, folder: Path, name: str, others: set[str]) -> tuple[str, list[Diagnostic]] | None:
    """The file's text and decoding problems; None, with its name put in `others`, when it was
    listed as a regular file and is no longer one (a link or a FIFO swapped in since): it is
    then reported as one listed so, and never read. None alone when it was deleted since: it is
    reported as one not listed."""
    try:
        return cache.read(folder, name)
    except Unread:
        others.add(name)
        return None
    except FileNotFoundError:
        return None


def unmerged_saves(name: str, names: Iterable[str]) -> list[Diagnostic]:
    """A warning for each version of the file `name` kept beside it rather than discarded (a
    save that met a commit, or the version a recovered commit found saved over, `swap.py`): it
    holds lines the file lacks, and nothing else says so."""
    kept = sorted(other for other in names if other.startswith(f"{name}{UNMERGED_MARKER}"))
    return [
        diagnostic(
            "unmerged-save",
            Severity.WARNING,
            f"another version of this file (a hand save, or a commit one met) is kept beside it as "
            f"{copy}: merge the lines it holds into this file, then delete it",
            _FIRST_CHARACTER,
        )
        for copy in kept
    ]


def _orphaned_saves(kept: Iterable[str], records: Iterable[str]) -> list[Diagnostic]:
    """A warning for each kept save whose record is gone (deleted since): said on the index,
    since no record is left to carry it, so the lines it holds are not forgotten."""
    present = set(records)
    return [
        diagnostic(
            "unmerged-save",
            Severity.WARNING,
            f"another version of {name} (a hand save, or a commit one met) was kept as {copy}, and "
            f"{name} has been deleted since: put the lines it holds into a record, then delete the copy",
            _FIRST_CHARACTER,
        )
        for copy in sorted(kept)
        if (name := copy.partition(UNMERGED_MARKER)[0]) not in present and record_name_of(name) is not None
    ]


_FIRST_CHARACTER = Range(start=Position(line=0, character=0), end=Position(line=0, character=0))


def _edited(text: str) -> tuple[str, list[Diagnostic]]:
    """An editor's text, judged as the same bytes on disk would be: past the cap, only that."""
    return ("", [FILE_TOO_LARGE]) if too_large(text) else (text, [])


def listing(folder: Path, cache: LintCache | None = None) -> frozenset[str]:
    """The names of the regular files in `folder`."""
    return _entries(folder, cache or LintCache()).regular


def _entries(folder: Path, cache: LintCache) -> FolderEntries:
    try:
        return cache.entries(folder)
    except (FileNotFoundError, NotADirectoryError):
        return _NO_ENTRIES  # the folder went away: only the editor's texts are left to judge


_NO_ENTRIES = FolderEntries(frozenset(), frozenset())


def _expand(paths: list[Path], workspaces: Path | None, unread: list[Unchecked]) -> list[Path]:
    """The memory files `paths` name, or hold; `NotMemoryFile` when one of `paths` is none, and
    what a folder searched holds that cannot be read appended to `unread`."""
    found: list[Path] = []
    problems: list[str] = []  # every path that is not one, not only the first
    home = workspaces.resolve() if workspaces is not None else None
    for path in paths:
        refused = _refused(path)
        if refused is not None:
            problems.append(refused)
        elif path.is_dir():
            found.extend(_memory_files_under(path, workspaces, unread))
        elif not path.exists():
            problems.append(f"{path}: no such file or folder")
        elif path.suffix != ".md" or path.name.startswith("."):
            problems.append(f"{path}: not a memory file (GLOBAL.md, MEMORY.md or a <name>.md record)")
        elif home is not None and _unread_in_home(path, home):
            # A receipt is remem's own: moving what it holds into memory would be wrong advice.
            problems.append(
                f"{path}: not a memory file but one of remem's review receipts (memory/reviews/); "
                "there is nothing to validate"
                if path.parent.resolve() == home.parent / "reviews" and RECEIPT_NAME.fullmatch(path.name)
                else f"{path}: not a memory file: in remem's home only memory/GLOBAL.md and the files of "
                "each memory/workspaces/<key>/ folder are memory; move what it holds into one of them"
            )
        else:
            found.append(path)
    if problems:
        raise NotMemoryFile(problems)
    return sorted(dict.fromkeys(p.absolute() for p in found))


def _refused(path: Path) -> str | None:
    """Why this user may not look at `path`: a folder on its way does not let it in (named), or
    the OS refuses the name (too long); None when it may. Such a path was a bug's OSError (one it
    reaches but may not read is refused as the argument it is, by click)."""
    try:
        path.is_dir()
    except PermissionError as error:
        above = reversed(path.absolute().parents)
        stopped = next((folder for folder in above if _impassable(folder)), path.parent)
        return (
            f"{path}: cannot be read: the folder {stopped} does not let your user in ({error.strerror}); "
            "let your user into it, or validate a copy elsewhere"
        )
    except OSError as error:
        return f"{shown(str(path))}: cannot be read ({error.strerror})"
    return None


def _impassable(folder: Path) -> bool:
    """Whether a name in `folder` cannot be reached: tried, not guessed from modes root passes."""
    try:
        os.stat(os.path.join(folder, os.curdir))  # `Path` would drop the `.`, and search nothing
    except PermissionError:
        return True
    return False


def _cannot_read(error: OSError, skipped: str = "") -> Unchecked:
    """What to say of a file or folder this user may not read (`error` names it); `skipped`:
    what else went unchecked for it, said after why."""
    path = os.fsdecode(error.filename)
    unchecked = ", so the memory files in it went unchecked" if os.path.isdir(path) else skipped
    return Unchecked(
        shown(path),
        f"cannot be read ({error.strerror}){unchecked}; let your user read it, or validate a copy elsewhere",
    )


def _memory_files_under(folder: Path, workspaces: Path | None, unread: list[Unchecked]) -> list[Path]:
    """The memory files under `folder`; a folder on the way that cannot be listed, where memory
    files may lie, is appended to `unread` (passed over, it read as a folder holding none)."""
    found = []
    if (
        workspaces is not None
        and workspaces.resolve().is_relative_to(folder.resolve())
        and workspaces.is_dir()
    ):
        # A workspace folder that is a link (leading anywhere, or nowhere) is not walked, nor
        # read: it is reported itself. A workspaces folder that cannot be listed the walk says.
        with contextlib.suppress(PermissionError):
            found += [entry for entry in workspaces.iterdir() if entry.is_symlink()]
    walked, unlisted = _walk(folder)
    home = workspaces.resolve() if workspaces is not None else None
    unread += [
        _cannot_read(error) for error in unlisted if _may_hold_memory(Path(error.filename), folder, home)
    ]
    for path in walked:
        relative = path.relative_to(folder).parts
        # Links and FIFOs too, so that what the store refuses is reported, not passed over.
        listed = path.is_symlink() or not path.is_dir()
        if listed and not _SKIPPED_DIRS.intersection(relative[:-1]) and not path.name.startswith("."):
            found.append(path)
    if home is None:
        return found
    return [path for path in found if not _unread_in_home(path, home)]


def _walk(folder: Path) -> tuple[list[Path], list[OSError]]:
    """Every `*.md` under `folder`, sorted, and why each folder on the way that could not be
    listed was not: `rglob` passed over such a folder without a word. Links to folders are not
    followed, as `rglob` did not follow them."""
    found: list[Path] = []
    unlisted: list[OSError] = []
    for at, folders, names in os.walk(folder, onerror=unlisted.append):
        found += [Path(at, name) for name in [*folders, *names] if name.endswith(".md")]
    return sorted(found), unlisted


def _may_hold_memory(folder: Path, named: Path, home: Path | None) -> bool:
    """Whether files `folder` holds (found under the folder `named`) would be validated: not in
    a folder the walk skips, and in the home (`home` its workspaces folder, as above) not in
    remem's own folders: of the memory folder only itself, its workspaces folder and a
    workspace folder; none of `state/`, `sessions/`, `history`. Elsewhere in the home (a project
    kept there) a folder is as anywhere."""
    if _SKIPPED_DIRS.intersection(folder.relative_to(named).parts):
        return False
    if home is None:
        return True
    resolved = folder.resolve()
    if resolved.is_relative_to(home.parent):
        return resolved == home.parent or home in (resolved, resolved.parent)
    return not _remems_own(resolved, home)


def _unread_in_home(path: Path, home: Path) -> bool:
    """Whether `path` is a file the store never reads although it lies in one of remem's own
    folders of the home (`home` is its workspaces folder, as above): in the memory folder only
    `GLOBAL.md` and the files of a workspace folder are memory (a `MEMORY.md` beside `GLOBAL.md`
    indexes nothing), and `state/`, `sessions/` or `history` hold none. A file elsewhere in the
    home (`code/app/notes/a.md`, a project kept there) is the user's, judged as anywhere."""
    if _in_linked_workspace(path, home):
        return False  # reported as the link it is in
    folder = path.parent.resolve()
    if folder == home.parent:
        return path.name != GLOBAL_FILE
    if folder.is_relative_to(home.parent):
        return folder.parent != home
    return _remems_own(folder, home)


def _remems_own(resolved: Path, home: Path) -> bool:
    """Whether the folder `resolved` is, or lies in, one of the entries remem lays out in the
    home besides its memory folder (`home` is the workspaces folder, as above)."""
    return any(resolved.is_relative_to(own) for own in Home(home.parent.parent).own_entries)
