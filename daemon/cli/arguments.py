"""Argument types the commands share: what click refuses before a request is built."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import click
from pydantic import ValidationError

from ..os_names import is_utf8, shown
from ..protocol.forks import SESSION_REVISION
from ..protocol.rpc import HistoryEntryParams, WorkspaceParams
from .output import FOLDER_REMOVED, fail


class _Utf8(click.ParamType):
    """A UTF-8 string: bytes that are not UTF-8 would reach the request models, whose refusal
    is a validation traceback rather than a usage error. Whether it is empty is the request's
    to judge (a title is then refused with the reason)."""

    name = "text"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value)
        if not is_utf8(text):
            self.fail("is not UTF-8", param, ctx)
        return text


class _NonEmpty(_Utf8):
    """A UTF-8 string with something in it: an id, a name or a revision."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        if not str(value).strip():
            self.fail("must not be empty", param, ctx)
        return super().convert(value, param, ctx)


# What the request model's refusals mean to someone typing an entry id.
_ENTRY_PROBLEMS = {
    "string_too_short": "must not be empty",
    "string_too_long": "is longer than {max_length} characters",
    "string_unicode": "is not UTF-8",
}


class _EntryId(click.ParamType):
    """A history entry id, checked by the request model itself so the two cannot disagree: its
    refusal would otherwise be a validation traceback. Whether the id names an entry is the
    history's to say."""

    name = "entry"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            return HistoryEntryParams(entry=str(value)).entry
        except ValidationError as exc:
            error = exc.errors()[0]
            problem = _ENTRY_PROBLEMS.get(error["type"])
            said = error["msg"] if problem is None else problem.format(**error.get("ctx", {}))
            self.fail(f"{said}; ids are 7 to 40 hex digits (see `remem memory log`)", param, ctx)


class _SessionRevision(click.ParamType):
    """A session's revision as `sessions turns --json` gives it: anything else names no state
    the session was ever in, and would only be refused later as a change."""

    name = "revision"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        if re.fullmatch(SESSION_REVISION, str(value)) is None:
            self.fail(
                "is no session revision; `remem sessions turns ID --json` gives its `revision`", param, ctx
            )
        return str(value)


class WholeNumber(click.ParamType):
    """A whole number of at least `least`, refused saying what was given and what is taken
    (`takes`): click's own said `'1.5' is not a valid integer range`, or `0 is not in the range
    x>=1`, naming neither."""

    name = "integer"

    def __init__(self, least: int, takes: str) -> None:
        self.least = least
        self.takes = takes

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        try:
            number = int(value)  # as click reads one: ` 7 `, `1_000`
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a whole number; it takes {self.takes}", param, ctx)
        if number < self.least:
            self.fail(f"{number} is less than {self.least}; it takes {self.takes}", param, ctx)
        return number


class _Folder(click.Path):
    """A folder's path, never empty: `os.path.abspath("")` is the current folder, so `--cwd ""`
    (a script's unset variable) would silently be wherever the command ran, and commit there."""

    def __init__(self) -> None:
        super().__init__(file_okay=False)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, (str, bytes)) and not value:
            self.fail("must not be empty; name a folder (`.` for the current one)", param, ctx)
        return super().convert(value, param, ctx)


class _Input(click.File):
    """A file to read whole, bytes; '-' for stdin, which must be open: Python starts without a
    stream for a closed one (`<&-`), and click's refusal of it was a bug's RuntimeError."""

    def __init__(self) -> None:
        super().__init__("rb")

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if value == "-" and sys.stdin is None:
            self.fail(
                "'-' reads standard input, which is closed; pipe the text in, or name a file", param, ctx
            )
        return super().convert(value, param, ctx)


def utf8_folder(path: str, names: str = "workspaces") -> str:
    """`path`, or exit 2 when a folder name in it is not UTF-8: workspaces (and session roots,
    `names`) are named by UTF-8 paths, and the request models, the index and JSON refuse the
    undecodable bytes Python keeps as surrogates."""
    if not is_utf8(path):
        fail(f"the folder name {shown(path)} is not UTF-8; remem names {names} by UTF-8 paths")
    return path


def workspace_params(cwd: str | None) -> WorkspaceParams:
    """The workspace of `cwd`, else of the current directory, its folder name UTF-8 (or exit 2)."""
    return WorkspaceParams(cwd=utf8_folder(absolute(cwd)))


def absolute(path: str | None) -> str:
    """`path` (default: the current folder) made absolute; exit 2 when that needs the current
    folder and it was removed (a shell left in a deleted worktree)."""
    try:
        return os.path.abspath(path if path is not None else os.getcwd())
    except FileNotFoundError:
        fail(FOLDER_REMOVED)


def absolute_paths(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[Path, ...]:
    """A click callback for `--root`: each path made absolute, as `absolute` makes it, its
    folder names UTF-8 (or exit 2, as for `--cwd`); as given while the line is only read."""
    if ctx.resilient_parsing:  # to learn whether `--json` is given: no failure is said yet
        return tuple(Path(path) for path in value)
    return tuple(Path(utf8_folder(absolute(path), "session roots")) for path in value)


FOLDER = _Folder()
INPUT = _Input()
UTF8 = _Utf8()
NON_EMPTY = _NonEmpty()
ENTRY_ID = _EntryId()
SESSION_REVISION_TYPE = _SessionRevision()
