"""The `remem` command line: one group per capability, `--json` on every command."""

from __future__ import annotations

import contextlib
import importlib
import itertools
import logging
import os
import shlex
import signal
import sys
from typing import Any, NoReturn

import click

from .. import __version__
from ..fsutil import Unwritable
from ..home import Home, HomeUnusable
from ..locks import LockUnusable
from .backend import NO_DAEMON_ENV, Backend
from .output import (
    FOLDER_REMOVED,
    Command,
    Group,
    OutputUnwritable,
    answer_json,
    answers_json,
    exit_pipe_closed,
    fail,
    failure,
)

# Each group's module is imported only when that group runs (or help lists it): the language
# server, the MCP server and the daemon start without loading the rest of the command line.
_LAZY_COMMANDS = {
    "consolidate": ".consolidate:consolidate",
    "daemon": ".daemon:daemon",
    "eval": ".eval:eval_command",
    "mcp": ".mcp:mcp",
    "memory": ".memory:memory",
    "receipts": ".consolidate:receipts",
    "sessions": ".sessions:sessions",
    "settings": ".consolidate:settings",
}


JSON = "--json"  # every command's option that asks for machine-readable output
AFTER = f"{JSON} goes after the command, not before it"
AFTER_SUBCOMMAND = f"{JSON} goes after the subcommand"
UNDER = f"{AFTER_SUBCOMMAND}, not before the command"
_GIVEN = "remem.given"  # in the context's `meta`: the command line, as the root was given it


class _PipeClosed(Exception):
    """What read the output went away, carried past click to `main` (click would exit 1)."""


class _Interrupted(Exception):
    """A Ctrl-C no command handled itself, carried past click to `main` (click would say
    "Aborted!" and exit 1, which reads as "the memory has errors")."""


def _misused(exc: click.ClickException) -> NoReturn:
    """Click's refusal of the command line (exit 2), or its other failures (exit 1), said as
    every failure is (`failure`): with `--json`, as JSON."""
    if not answers_json():
        raise exc  # click's own text: the usage line and the hint to `--help`
    failure("USAGE" if isinstance(exc, click.UsageError) else "REFUSED", exc.format_message())


def _takes_json(command: click.Command | None) -> bool:
    """Whether `command` is given `--json`: it has the option, or it is a group (its commands do)."""
    return isinstance(command, click.Group) or (
        command is not None and JSON in {o for p in command.params for o in p.opts}
    )


def _read(
    command: click.Command, name: str | None, args: list[str], parent: click.Context | None
) -> tuple[click.Context, list[str]]:
    """`command`'s options read off `args` as click reads them, nothing checked or run, however
    wrong the rest; and the words they leave: a group's subcommand and its arguments. A group's
    own `parse_args` puts the subcommand's name apart, in `protected_args` (deprecated since
    Click 8.2, private as `_protected_args`): read as a plain command (`Command.parse_args`), it
    leaves every word in `ctx.args`, as Click 9's groups will."""
    settings = {**command.context_settings, "resilient_parsing": True, "ignore_unknown_options": True}
    ctx = command.context_class(command, info_name=name, parent=parent, **settings)
    with ctx.scope(cleanup=False):  # as `make_context` parses
        return ctx, click.Command.parse_args(command, ctx, list(args))


def _without_own_json(
    command: click.Command, name: str | None, words: list[str], parent: click.Context | None
) -> list[str]:
    """`words` without each `--json` `command` reads as an option: before any `--`, not an
    option's value (`--home --json` names a folder), and of a group before its command's name
    (that command reads what follows, and takes a flag repeated as given once)."""
    end = words.index("--") if "--" in words else len(words)
    # Each such `--json` made unique: click leaves an option it does not know unread (a group's
    # in front of its command's name), and takes an option's value whatever it is.
    marked = [f"{JSON}\0{i}" if word == JSON and i < end else word for i, word in enumerate(words)]
    _, left = _read(command, name, marked, parent)
    if isinstance(command, click.Group):
        left = list(itertools.takewhile(lambda word: word.startswith("-"), left))
    own = set(left)
    return [word for word, mark in zip(words, marked, strict=True) if mark == word or mark not in own]


class _LazyGroup(Group):
    """A group whose commands named in `_LAZY_COMMANDS` are imported on first use, and whose
    output meeting a closed pipe ends in `main` as every other closed pipe does."""

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        if extra.get("resilient_parsing"):  # only read (`_keep_traceback`, completion)
            return super().make_context(info_name, args, parent, **extra)
        given = list(args)  # click's parsing eats the list
        try:  # `remem --help | true`, `remem --version | true`: written before `invoke`
            answer_json(self._asks_json(info_name, args))  # before anything can fail
            try:
                ctx = super().make_context(info_name, args, parent, **extra)
            except click.NoSuchOption as exc:  # what is said instead may be a help, written here
                raise self._json_refused(info_name, given, exc, before_command=True) from None
            ctx.meta[_GIVEN] = given  # for `invoke`, to say where a refused `--json` goes
            return ctx
        except BrokenPipeError as exc:  # click's own handler exits 1: "the memory has errors"
            raise _PipeClosed from exc
        except KeyboardInterrupt as exc:  # as the command's group loads, to read its options
            raise _Interrupted from exc
        except click.ClickException as exc:
            _misused(exc)

    def _json_refused(
        self, info_name: str | None, args: list[str], exc: click.NoSuchOption, *, before_command: bool
    ) -> click.UsageError:
        """`remem --json COMMAND …`, `remem sessions --json`: a command or group refused `--json`
        (before the command: click refuses it before it reads the command, so a mistyped command
        went unsaid). The command line is read down to the command that runs, without that
        `--json`, as click reads it to run it: a help or version it asks for is shown (exit 0),
        and what it refuses (an unknown option, an option without its value, a mistyped command,
        with its likely names) is said first. Either way it says where `--json`, each command's
        own option, goes; it is shown there only on a command that takes it."""
        if exc.option_name != JSON or JSON not in args:  # `--json=…`: no flag, click's words stand
            return exc
        under = UNDER if before_command else AFTER_SUBCOMMAND
        command: click.Command = self
        name, words, ctx = info_name, args, None
        named: list[str] = []  # the command line read so far, without the `--json` groups read
        while isinstance(command, click.Group):  # down to the command that runs
            # Every `--json` a group reads (`remem --json --no-daemon --json sessions list`): one
            # left in was refused on its own. The command's own parser takes its repeats.
            words = _without_own_json(command, name, words, ctx)
            if words:  # none: click would show the group's help, where a command was left out
                self._read_to_run(command, name, words, ctx, AFTER)
            ctx, left = _read(command, name, words, ctx)
            named += words[: len(words) - len(left)]
            words = left
            usage = f"`{shlex.join(['remem', *named])} COMMAND … {JSON}`"
            if not words:  # `remem --json`, `remem sessions --json`
                takers = [n for n in command.list_commands(ctx) if _takes_json(command.get_command(ctx, n))]
                goes = f"{JSON} goes after the command" if command is self else under
                return click.UsageError(f"{goes}: {usage}, COMMAND one of: {', '.join(takers)}", ctx)
            found = command.get_command(ctx, words[0])
            if found is None:
                mistyped = click.exceptions.NoSuchCommand(
                    words[0], possibilities=command.list_commands(ctx), ctx=ctx
                )
                where = f"{AFTER}." if command is self else f"{under}: {usage}."
                return click.UsageError(f"{mistyped.format_message()} And {where}", ctx)
            named.append(words[0])
            command, name, words = found, words[0], words[1:]
        return self._json_goes(command, name, words, ctx, named)

    def _json_goes(
        self,
        command: click.Command,
        name: str | None,
        words: list[str],
        parent: click.Context | None,
        named: list[str],
    ) -> click.UsageError:
        """Where `--json` goes on `command`, named at the end of `named` (the command line down
        to it but the `--json` its groups read) and given `words`: the command line with it
        there, or that the command has none."""
        takes = _takes_json(command)
        words = words if takes else _without_own_json(command, name, words, parent)
        rest = [*named, *words]
        if not takes:
            none = f"`{shlex.join(['remem', *named])}` has no {JSON} option"
            ctx = self._read_to_run(command, name, words, parent, none)
            return click.UsageError(f"`{shlex.join(['remem', *rest])}` has no {JSON} option", ctx)
        ctx = self._read_to_run(command, name, words, parent, AFTER)
        given = {o for p in command.params if p.name and ctx.params.get(p.name) for o in p.opts}
        json_with = command.json_with if isinstance(command, Command) else None
        wanted = [o for o in (json_with, JSON) if o is not None and o not in given]
        # After a `--` every word is an argument, and a `--` may be an option's value: right after
        # the command's name, the options are read as options whatever follows.
        shown = [*named, *wanted, *words] if "--" in words else [*rest, *wanted]
        only = f", and only with {json_with}" if json_with in wanted else ""
        return click.UsageError(f"{AFTER}{only}: `{shlex.join(['remem', *shown])}`", ctx)

    def _read_to_run(
        self,
        command: click.Command,
        name: str | None,
        words: list[str],
        parent: click.Context | None,
        hint: str,
    ) -> click.Context:
        """`command`'s context for `words`, read as click reads them to run them: a help or
        version they ask for is shown (click exits 0), and their refusal is said, then `hint`
        (where `--json` goes): a command line shown with `--json` in its place must work."""
        # The root's own `make_context` would take the line again for whether it answers in JSON.
        make = super().make_context if command is self else command.make_context
        try:
            return make(name, list(words), parent)
        except click.UsageError as exc:
            said = exc.format_message()  # a type's refusal may end without a full stop
            said = said if said.endswith((".", "?", ")")) else f"{said}."
            raise click.UsageError(f"{said} And {hint}.", exc.ctx) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            try:
                return super().invoke(ctx)
            except click.NoSuchOption as exc:  # `remem sessions --json`, `remem lsp --json`
                raise self._json_refused(ctx.info_name, ctx.meta[_GIVEN], exc, before_command=False) from None
        except BrokenPipeError as exc:  # click's own handler exits 1: "the memory has errors"
            raise _PipeClosed from exc
        except KeyboardInterrupt as exc:
            raise _Interrupted from exc
        except click.ClickException as exc:  # a subcommand's arguments, or a command's own refusal
            _misused(exc)

    def _asks_json(self, info_name: str | None, args: list[str]) -> bool:
        """Whether the command `args` name is given `--json`, read as click reads it (a title
        `--json` is no flag), however wrong the rest: its failures, usage errors too, are JSON.
        A group's unknown option (`remem --bogus …`, `remem sessions --json list`) ends the
        reading as a command that does not exist does: only the words after it can say."""
        command: click.Command = self
        ctx, rest = _read(self, info_name, args, None)
        while isinstance(command, click.Group):
            if not rest:
                return False
            name, found, after = command.resolve_command(ctx, rest)
            if found is None or name is None:  # no such command: only the words can say
                return JSON in rest
            command = found
            ctx, rest = _read(command, name, after, ctx)
        return bool(ctx.params.get("as_json"))

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *_LAZY_COMMANDS})

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand as exc:
            # Click suggests from `self.commands`, which holds none of the lazy ones: their names
            # suggest them as well, and import nothing.
            names = self.list_commands(ctx)
            raise click.exceptions.NoSuchCommand(exc.command_name, possibilities=names, ctx=ctx) from None

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in _LAZY_COMMANDS:
            return super().get_command(ctx, cmd_name)
        module, name = _LAZY_COMMANDS[cmd_name].split(":")
        command = getattr(importlib.import_module(module, __package__), name)
        assert isinstance(command, click.Command)
        return command


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--home",
    type=click.Path(file_okay=False),
    # No `envvar`: `Home.resolve` reads $REMEM_HOME itself, and a blank one falls back to ~/.remem.
    help="remem's home folder (default: $REMEM_HOME, else ~/.remem).",
)
@click.option(
    "--no-daemon",
    is_flag=True,
    envvar=NO_DAEMON_ENV,
    help=f"Run in this process instead of through the daemon (also ${NO_DAEMON_ENV}=1).",
)
@click.version_option(__version__, prog_name="remem")
@click.pass_context
def cli(ctx: click.Context, home: str | None, no_daemon: bool) -> None:
    """remem: validated, evidenced, recoverable long-term memory for coding agents."""
    try:
        resolved = Home.resolve(home)
    except FileNotFoundError:  # a relative home, from a folder that was removed
        fail(FOLDER_REMOVED)
    if ctx.invoked_subcommand not in _ANY_HOME_NAME:  # its paths would fail where stored or sent
        resolved.refuse_non_utf8_name()
    ctx.obj = Backend(resolved, use_daemon=not no_daemon)


# What starts whatever the home's name: the servers, which say why the home cannot be used as
# their reason for being degraded (docs/lsp.md), and `memory`, which refuses it itself but for
# `memory validate` (it reads the files it is given, never the home).
_ANY_HOME_NAME = frozenset({"lsp", "mcp", "memory"})


@cli.command()
@click.pass_obj
def lsp(backend: Backend) -> None:
    """Run the language server on stdio (what the editor extension starts)."""
    need_stdio(
        "lsp",
        "editor",
        "remem lsp is started by your editor over stdio: the Remem extension of VS Code starts it",
    )
    from remem.lsp.compose import create_server  # the CLI need not load pygls otherwise

    from ..credentials import log_to_stderr

    log_to_stderr(logging.WARNING, "%(message)s")  # the editor shows the lines in its Remem log
    server = create_server(backend.home, use_daemon=backend.use_daemon)
    server.start_io()
    # The spec's status for `exit`: pygls sets it from its event loop, whose teardown loses it.
    sys.exit(0 if server.protocol.shut_down else 1)


def need_stdio(command: str, client: str, for_a_terminal: str) -> None:
    """Refuse to serve with stdin or stdout closed (`remem mcp <&-`): Python starts without a
    stream for it (its own sign the descriptor was closed), and the server would fail on its
    first read or write. Typed in a terminal, it says `for_a_terminal` (who starts the server),
    where it would otherwise wait for its client's messages without a word."""
    if sys.stdout is None:
        raise OutputUnwritable("standard output is closed")
    from .output import fail, say

    if sys.stdin is None:
        fail(f"remem {command} reads its {client}'s messages on stdin, which is closed; start it with a pipe")
    if sys.stdin.isatty():
        # The servers read stdin in a thread no KeyboardInterrupt reaches: the MCP server waited
        # for that thread (until Enter), and pygls' loop swallowed the interrupt. With no client
        # on the other side, nothing is left to finish.
        signal.signal(signal.SIGINT, _quit_at_once)
        say(f"{for_a_terminal} (Ctrl-C to quit)", err=True)


def _quit_at_once(signum: int, frame: object) -> NoReturn:
    from .output import EXIT_INTERRUPTED

    # Straight to the descriptor: the handler may run inside a write to sys.stderr (a log line),
    # whose buffer would refuse a reentrant write or wait on a lock another thread holds.
    with contextlib.suppress(OSError):
        os.write(2, b"remem: interrupted\n")
    os._exit(EXIT_INTERRUPTED)  # not sys.exit: that would wait for the thread blocked reading


def main() -> None:
    try:
        cli(prog_name="remem")
    # Whichever command met it first, in this process: something in the home stands in the way.
    except (HomeUnusable, LockUnusable) as exc:
        failure("HOME_UNUSABLE", str(exc))
    except Unwritable as exc:  # a full disk or read-only mount refused a write: nothing changed
        failure("UNWRITABLE", str(exc))
    except OutputUnwritable as exc:  # a full disk, say: no bug, and maybe stderr can still say it
        with contextlib.suppress(OSError):
            click.echo(f"remem: the output could not be written ({exc})", err=True)
        sys.exit(1)
    except (BrokenPipeError, _PipeClosed):
        exit_pipe_closed()
    except (KeyboardInterrupt, _Interrupted):
        from .output import EXIT_INTERRUPTED, say

        say("remem: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except Exception as exc:  # a bug in remem: one line, and its traceback kept for a report
        from ..credentials import mask_userinfo, redact
        from ..validation import one_line

        kept = _keep_traceback(exc)
        said = one_line(redact(mask_userinfo(f"{type(exc).__name__}: {exc}")))  # it may quote a key
        said = said if len(said) <= _SAID_CHARS else f"{said[: _SAID_CHARS - 1]}…"
        failure("INTERNAL", f"internal error, a bug in remem ({said}); {kept}")
    finally:
        # Loaded only by the commands it holds: looked up, so that the others pay no import.
        ran = sys.modules.get(f"{__name__}.consolidate")
        if ran is not None:
            ran.exits_ignoring_stops()


_SAID_CHARS = 200  # of the exception's own message, on the one line


LAST_ERROR = "state/last-error.log"  # in the home: the traceback of the last command a bug ended


def _keep_traceback(exc: Exception) -> str:
    """Write `exc`'s traceback, masked, to the home's `LAST_ERROR` (the last one only: a report
    needs the latest); what to tell the user of it."""
    import shlex
    import traceback
    from datetime import datetime, timezone

    from ..credentials import mask_userinfo, redact

    try:  # the home the command was given, read again from its arguments (`--home`, else as usual)
        given = cli.make_context("remem", sys.argv[1:], resilient_parsing=True).params.get("home")
    except Exception:
        given = None
    home = Home.resolve(given)
    path = home.root / LAST_ERROR
    text = f"remem {__version__}, {datetime.now(timezone.utc).isoformat(timespec='seconds')}\n"
    text += f"{shlex.join(['remem', *sys.argv[1:]])}\n{''.join(traceback.format_exception(exc))}"
    try:
        home.private_dir(path.parent)
        fd = home.open_file(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as file:
            file.write(redact(mask_userinfo(text)))
    except (HomeUnusable, OSError) as unwritten:
        return f"its traceback could not be written to {path} ({unwritten})"
    return f"its traceback is in {path}"
