"""Printing results: JSON for scripts, one readable line per fact or problem for people."""

from __future__ import annotations

import codecs
import contextlib
import errno
import io
import json
import os
import re
import signal
import sys
from collections.abc import Callable
from typing import Any, NoReturn, TextIO

import click
from pydantic import BaseModel

from ..memory.diagnostics import Diagnostic, FileProblems
from ..validation import CONTROLS, escaped

EXIT_PROBLEMS = 1
EXIT_INVALID = 2
EXIT_CONFLICT = 3
EXIT_INTERNAL = 4  # a bug in remem: one line says where its traceback is
EXIT_INTERRUPTED = 130  # Ctrl-C, as shells report a process SIGINT ended (128 + 2)


_IN_TEXT = re.compile(f"[{CONTROLS}]")


def say(text: str = "", *, err: bool = False, nl: bool = True) -> None:
    """`click.echo` for people: control characters are shown escaped, never sent to the terminal."""
    _write(_IN_TEXT.sub(escaped, text) + ("\n" if nl else ""), err=err)


def _write(text: str, *, err: bool) -> None:
    """`text` on stdout (stderr), a reader that went away raising `BrokenPipeError`. Python's
    buffered writer drops the EPIPE that follows a partial write (a pipe's reader leaving in the
    middle of a large output), so such a run ended 0 with its output cut: the file descriptor is
    written directly, after what the stream buffered. Streams without one (tests') are echoed."""
    stream = sys.stderr if err else sys.stdout
    if stream is None and not err:  # closed when Python started (`>&-`): the answer is lost
        raise OutputUnwritable("standard output is closed")
    try:
        fd = stream.fileno()
    except (AttributeError, ValueError, io.UnsupportedOperation):
        click.echo(text, err=err, nl=False)
        return
    stream.flush()
    pending = memoryview(text.encode(*_encoding(stream)))
    try:
        while pending:
            pending = pending[os.write(fd, pending) :]
    except OSError as exc:
        if exc.errno == errno.EPIPE:
            raise
        raise OutputUnwritable(exc.strerror or str(exc)) from None


class OutputUnwritable(Exception):
    """The output could not be written (a full disk, an I/O error): no bug of remem's."""


class _SaysHelp:
    """A command whose `--help` (or `--version`) written where nothing can be (`>/dev/full`)
    is output that could not be written, as any answer's is: click writes those while it
    parses the arguments, where only such a write raises an OSError (a file argument's own
    refusal is a usage error). A closed pipe's stays a BrokenPipeError, for `main`'s exit 141."""

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)  # type: ignore[misc]
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputUnwritable(exc.strerror or str(exc)) from None


class Command(_SaysHelp, click.Command):
    """Every `remem` command's class (`@click.command(cls=Command)`). `json_with`: the option its
    `--json` is taken only beside (`remem mcp --print-config`), so that where `--json` is said
    to go (`remem --json mcp`) the command line shown works."""

    def __init__(self, *args: Any, json_with: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.json_with = json_with


class Group(_SaysHelp, click.Group):
    """Every `remem` group's class; its commands and groups are of these classes too."""

    command_class = Command
    group_class = type  # the group's own class


def _encoding(stream: TextIO) -> tuple[str, str]:
    """How `stream` takes text, as `click.echo` writes it: a stream set up as ASCII (a C
    locale, PYTHONIOENCODING=ascii) is written UTF-8 with replacements, never refused."""
    encoding = stream.encoding or "utf-8"
    if codecs.lookup(encoding).name == "ascii":
        return "utf-8", "replace"
    return encoding, stream.errors or "strict"


def emit_json(value: BaseModel | dict[str, Any]) -> None:
    """`value` as JSON for scripts, the rest of Unicode kept readable. What would drive a terminal
    is written `\\uXXXX`: `json.dumps` escapes C0 itself, and the rest of `CONTROLS` can only
    stand inside a string, where the escape is the same character to any JSON reader."""
    data = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
    text = json.dumps(data, ensure_ascii=False, indent=2)
    _write(_IN_TEXT.sub(lambda match: f"\\u{ord(match.group()):04x}", text) + "\n", err=False)


def diagnostic_line(path: str, d: Diagnostic) -> str:
    """`path:line:col: severity: message [code]`, 1-based like compilers, for editors' links."""
    start = d.range.start
    return f"{path}:{start.line + 1}:{start.character + 1}: {d.severity.value}: {d.message} [{d.code}]"


def print_file_problems(files: list[FileProblems], *, err: bool = False) -> None:
    for report in files:
        for d in report.diagnostics:
            say(diagnostic_line(report.path, d), err=err)


FOLDER_REMOVED = (
    "the current folder no longer exists (it was removed while this shell was in it); "
    "cd to a folder that exists, or give an absolute path"
)


# How every command fails: each error code and the exit status it ends with (docs/cli.md,
# decision 0444). A code the daemon adds later is a refusal, exit 1, until it is listed here.
EXIT_STATUS: dict[str, int] = {
    # What the command names cannot be acted on as things stand.
    **dict.fromkeys(
        (
            "REFUSED",
            "NOT_FOUND",
            "AMBIGUOUS",
            "UNREADABLE",
            "OPEN_TURN",
            "LIVE",
            "ARCHIVED",
            "SUBAGENT",
            "WORKER_SESSION",
            "NO_CWD",
            "CUT_OFF",
            "MEMORY_INVALID",
            "HISTORY_REFUSED",
            "UNWRITABLE",
            "SCOPE_BUSY",
            "DAEMON_UNAVAILABLE",
            "ANSWER_TOO_LARGE",
        ),
        EXIT_PROBLEMS,
    ),  # fmt: skip
    # The command line, the settings or the home is wrong: the user fixes it, then runs it again.
    **dict.fromkeys(("USAGE", "INVALID", "INVALID_ANCHOR", "NO_ROUTE", "HOME_UNUSABLE"), EXIT_INVALID),
    # Something changed since it was read: read it again, then retry.
    **dict.fromkeys(
        ("CONFLICT", "STALE_SOURCE", "STALE_GENERATION", "OP_CONFLICT", "SOURCE_CHANGED", "STALE_SETTINGS"),
        EXIT_CONFLICT,
    ),
    "INTERNAL": EXIT_INTERNAL,
}
# The code of a failure said by its exit status alone (`fail`).
_CODE_OF_STATUS = {EXIT_PROBLEMS: "REFUSED", EXIT_INVALID: "INVALID", EXIT_CONFLICT: "CONFLICT",
                   EXIT_INTERNAL: "INTERNAL"}  # fmt: skip


def _nothing_more(_: BaseException | None) -> dict[str, Any]:
    return {}


class _Answer:
    """Whether the command running was given `--json`: its failures are then JSON too, with
    what `more` says of the exception being handled (`also_in_failures`)."""

    as_json = False
    more: list[Callable[[BaseException | None], dict[str, Any]]] = [_nothing_more]


def answer_json(as_json: bool) -> None:
    """Set, once the command line is read, whether failures are said as JSON (with nothing
    more a command run before in this process put in them)."""
    _Answer.as_json = as_json
    also_in_failures()


def answers_json() -> bool:
    return _Answer.as_json


def also_in_failures(more: Callable[[BaseException | None], dict[str, Any]] = _nothing_more) -> None:
    """Put what `more` says, given the exception a failure is said while handling (None: none),
    in the JSON of any failure said from now on; a failure's own keys win."""
    _Answer.more[0] = more


def failure(code: str, message: str, data: dict[str, Any] | None = None, *, coded: bool = False) -> NoReturn:
    """Every failure of every command: with `--json`, `{"error": {"code", "message", ...data}}`
    on stdout; else one line on stderr (`remem: CODE: message` when `coded`, as the daemon's
    refusals are said); the exit status is `exit_status`'s."""
    line = f"remem: {code}: {message}" if coded else f"remem: {message}"
    if not _Answer.as_json:
        say(line, err=True)
    else:
        try:
            more = _Answer.more[0](sys.exc_info()[1])
            emit_json({"error": {"code": code, "message": message, **more, **(data or {})}})
        except BrokenPipeError:
            exit_pipe_closed()
        except OutputUnwritable:  # `>&-`, a full disk: the error is not lost if stderr can say it
            with contextlib.suppress(OSError, OutputUnwritable):
                say(line, err=True)
    sys.exit(exit_status(code))


def exit_status(code: str) -> int:
    """The status a failure with `code` ends the command with (`failure`)."""
    return EXIT_STATUS.get(code, EXIT_PROBLEMS)


def exit_pipe_closed() -> NoReturn:
    """What read the output went away (`remem … | head`): no bug, said by the exit status a
    shell reports for a process its pipe's end closed."""
    exit_silenced(128 + signal.SIGPIPE)


def exit_silenced(status: int) -> NoReturn:
    """Exit `status` with nothing more written to either stream (nor at the exit's flush of
    them): for output that can no longer be written anywhere."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, ValueError, OSError):  # one closed at start
            os.dup2(devnull, stream.fileno())
    sys.exit(status)


def say_stopped(line: str, status: int) -> NoReturn:
    """A stop's `line` on stderr, then exit `status` (128 + its signal). A closed terminal
    (SIGHUP) fails every write after it (EIO): the stop still ends the command with its own
    status, where "the output could not be written", exit 1, hid it (decision 0540)."""
    try:
        say(line, err=True)
    except (OSError, OutputUnwritable):
        exit_silenced(status)
    sys.exit(status)


def fail(message: str, status: int = EXIT_INVALID) -> NoReturn:
    """A failure with no code of its own: the generic one of its exit `status`."""
    failure(_CODE_OF_STATUS[status], message)


def refused_write(exc: Any) -> NoReturn:
    """A write the file system refused (`UNWRITABLE`, an RpcError): exit 1, as a refusal the
    command cannot act on (a full disk is no bug, nor invalid input); the message names the
    folder and what to do."""
    failure("UNWRITABLE", exc.message, exc.data)
