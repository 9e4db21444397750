"""`remem sessions ...`: list, tree, turns and show, over every configured session root; fork,
rename, archive and restore one session."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ..protocol.forks import ForkRequest
from ..protocol.rpc import (
    SESSION_REFUSED,
    ArchiveParams,
    ListParams,
    MetaResult,
    RenameParams,
    RpcError,
    SessionParams,
    TranscriptParams,
)
from ..protocol.sessions import ROLLED_BACK
from ..sessions.sources import HARNESS_NAMES
from .arguments import NON_EMPTY, UTF8, utf8_folder, workspace_params
from .backend import Backend
from .output import EXIT_CONFLICT, EXIT_INVALID, EXIT_PROBLEMS, emit_json, one_line, say

if TYPE_CHECKING:
    from ..client import Listener

F = TypeVar("F", bound=Callable[..., Any])


def session_options(command: F) -> F:
    """`--root` (repeatable) and `--json`, shared by every session command."""
    command = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")(command)
    return click.option(
        "--root", "roots", multiple=True, type=click.Path(file_okay=False, path_type=Path),
        help="An extra session root (repeatable; DSH, Claude Code or Codex, recognised by its layout).",
    )(command)  # fmt: skip


@click.group()
def sessions() -> None:
    """List agent sessions, show their lineage, turns and transcripts."""


@sessions.command("list")
@click.option(
    "--cwd", default=None, type=click.Path(file_okay=False), help="Only sessions of this workspace."
)
@session_options
@click.pass_obj
def list_sessions(backend: Backend, cwd: str | None, roots: tuple[Path, ...], as_json: bool) -> None:
    """Every session in the configured roots, oldest first, and every log that cannot be read."""
    params = ListParams(cwd=utf8_folder(os.path.abspath(cwd)) if cwd is not None else None)
    with _indexing_bar(params.cwd, shown=not as_json) as listener, _refusals(as_json):
        listing = backend.api(roots, listener).list_sessions(params)
    if as_json:
        emit_json(listing)
        return
    width = max((len(s.id) for s in listing.sessions), default=0)  # ids differ in length by harness
    for s in listing.sessions:
        badge = f" [{HARNESS_NAMES[s.format]}]" if s.format != "dsh" else ""
        badge += " live" if s.live else ""
        badge += f" [{s.review.status or s.review.state}]" if s.review.state != "never" else ""
        turns = f"{s.turns:>3} {'turn' if s.turns == 1 else 'turns':<5}"
        title = one_line(s.title or "(untitled)")
        say(f"{s.id:<{width}}  {_age(s.createdAt)}  {s.kind:<8} {turns}{badge}  {title}")
    for error in listing.errors:
        say(f"error: {one_line(error.path)}: {one_line(error.message)}", err=True)
    if not listing.sessions:
        _none_found(backend, params.cwd, unreadable=len(listing.errors))
    say(f"{len(listing.sessions)} session(s), {len(listing.errors)} unreadable")


@sessions.command()
@click.option("--cwd", default=None, type=click.Path(file_okay=False), help="The workspace; default: here.")
@session_options
@click.pass_obj
def tree(backend: Backend, cwd: str | None, roots: tuple[Path, ...], as_json: bool) -> None:
    """The lineage of this workspace's sessions: forks and subagents under their parents."""
    params = workspace_params(cwd)
    with _indexing_bar(params.cwd, shown=not as_json) as listener, _refusals(as_json):
        nodes = backend.api(roots, listener).session_tree(params).nodes
    if as_json:
        emit_json({"nodes": [node.model_dump(mode="json") for node in nodes]})
        return
    for node in nodes:
        extra = f" (from turn {node.forkTurn})" if node.forkTurn else ""
        flags = f" [{', '.join(node.flags)}]" if node.flags else ""
        flags += f" ({HARNESS_NAMES[node.format]})" if node.format != "dsh" else ""
        flags += " (archived)" if node.archived else ""
        say(f"{'  ' * node.depth}{node.kind}: {one_line(node.title or node.id)}{extra}{flags}  {node.id}")
    if not nodes:
        _none_found(backend, params.cwd)


def _none_found(backend: Backend, cwd: str | None, unreadable: int = 0) -> None:
    """What an empty answer means and where to go from it: said on stderr, so the output stays
    empty for scripts."""
    harnesses = sorted(HARNESS_NAMES.values())
    where = f"of {cwd} " if cwd is not None else ""
    found = f"could be read ({unreadable} unreadable, above)" if unreadable else "were found"
    say(
        f"No agent sessions {where}{found}. remem reads the sessions of {', '.join(harnesses[:-1])} "
        f"and {harnesses[-1]} from their default folders and the sessions.roots of "
        f"{backend.home.settings_file}; `--root FOLDER` reads another folder once.",
        err=True,
    )


@sessions.command()
@click.argument("session_id", type=NON_EMPTY)
@session_options
@click.pass_obj
def turns(backend: Backend, session_id: str, roots: tuple[Path, ...], as_json: bool) -> None:
    """The turns of a session: number, seq range (DSH) or line range (Claude Code, Codex), status,
    first line of the prompt."""
    with _refusals(as_json):
        result = backend.api(roots).session_turns(SessionParams(id=session_id))
    if as_json:
        emit_json(result.model_dump())
        return
    unit = "seq" if result.format == "dsh" else "lines"
    for t in result.turns:
        why = "rolled back" if t.status == ROLLED_BACK else "open"
        mark = "" if t.forkable else f"  ({why}: cannot branch)"
        end = t.endSeq if t.endSeq is not None else "…"
        say(f"{t.turn:>4}  {t.status:<11} {unit} {t.startSeq}-{end}  {one_line(t.user)}{mark}")


@sessions.command()
@click.argument("session_id", type=NON_EMPTY)
@click.option("--markdown", "as_markdown", is_flag=True, help="Print the transcript as Markdown (default).")
@session_options
@click.pass_obj
def show(
    backend: Backend, session_id: str, as_markdown: bool, roots: tuple[Path, ...], as_json: bool
) -> None:
    """A session's transcript, or its header, turns and events as JSON."""
    with _refusals(as_json):
        if as_json:
            emit_json(backend.api(roots).session_log(SessionParams(id=session_id)))
            return
        markdown = backend.api(roots).session_transcript(TranscriptParams(id=session_id)).markdown
    say(markdown, nl=False)


def _age(epoch_ms: int) -> str:
    return datetime.fromtimestamp(epoch_ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M")


@sessions.command()
@click.argument("session_id", type=NON_EMPTY)
@click.option(
    "--at",
    "at_seq",
    type=int,
    default=None,
    help="Branch after the turn holding this event seq (a line, for Claude Code and Codex sessions).",
)
@click.option(
    "--op-id",
    "operation_id",
    required=True,
    type=NON_EMPTY,
    help="Idempotency key: a retry with it returns the same child.",
)
@click.option(
    "--title", default=None, type=UTF8, help="The child's title (default: the parent's title with (N+1))."
)
@click.option(
    "--expected-revision",
    default=None,
    type=NON_EMPTY,
    help="Refuse (STALE_SOURCE) if the session changed since.",
)
@session_options
@click.pass_obj
def fork(
    backend: Backend, session_id: str, at_seq: int | None, operation_id: str, title: str | None,
    expected_revision: str | None, roots: tuple[Path, ...], as_json: bool,
) -> None:  # fmt: skip
    """Branch a session after a completed turn. Only the conversation is copied: files and
    other side effects of the parent are not rolled back. A Claude Code or Codex child is
    written where its harness finds it, and the command that resumes it is printed."""
    request = ForkRequest(
        source=session_id,
        operationId=operation_id,
        atSeq=at_seq,
        title=title,
        expectedRevision=expected_revision,
    )
    with _refusals(as_json):
        result = backend.api(roots).fork_session(request)
    if as_json:
        # A DSH child has no resume command: its JSON stays what it always was.
        emit_json(result.model_dump(mode="json", exclude={"resume"} if result.resume is None else None))
    else:
        verb = "created" if result.created else "already existed:"
        unit = "events" if result.resume is None else "lines"  # a harness file's records are its lines
        say(f"{verb} {result.child} (after turn {result.forkTurn}, {result.seedLength} {unit} inherited)")
        if result.resume is not None:
            say(f"resume it from the session's folder with: {shlex.join(result.resume)}")


@sessions.command()
@click.argument("session_id", type=NON_EMPTY)
@click.argument("title", type=UTF8)
@click.option("--expected-generation", type=int, default=None, help="Refuse if the metadata changed since.")
@session_options
@click.pass_obj
def rename(
    backend: Backend,
    session_id: str,
    title: str,
    expected_generation: int | None,
    roots: tuple[Path, ...],
    as_json: bool,
) -> None:
    """Give a session a display title (the log itself is never rewritten)."""
    params = RenameParams(id=session_id, title=title, expectedGeneration=expected_generation)
    with _refusals(as_json):
        meta = backend.api(roots).rename_session(params)
    _print_meta(meta, as_json)


def _archive_command(name: str, archived: bool, summary: str) -> None:
    """`archive` and `restore` differ only in the flag they set."""

    @sessions.command(name, help=summary)
    @click.argument("session_id", type=NON_EMPTY)
    @click.option(
        "--expected-generation", type=int, default=None, help="Refuse if the metadata changed since."
    )
    @session_options
    @click.pass_obj
    def command(
        backend: Backend,
        session_id: str,
        expected_generation: int | None,
        roots: tuple[Path, ...],
        as_json: bool,
    ) -> None:
        params = ArchiveParams(id=session_id, archived=archived, expectedGeneration=expected_generation)
        with _refusals(as_json):
            meta = backend.api(roots).archive_session(params)
        _print_meta(meta, as_json)


_archive_command("archive", True, "Hide a session from the tree; nothing is deleted.")
_archive_command("restore", False, "Show an archived session again.")


def _print_meta(meta: MetaResult, as_json: bool) -> None:
    if as_json:
        emit_json(meta)
    else:
        say(f"{meta.id}: generation {meta.generation}")


_EXIT_CODES = {"INVALID": EXIT_INVALID, "INVALID_ANCHOR": EXIT_INVALID, "STALE_SOURCE": EXIT_CONFLICT,
               "STALE_GENERATION": EXIT_CONFLICT, "OP_CONFLICT": EXIT_CONFLICT}  # fmt: skip


@contextmanager
def _indexing_bar(cwd: str | None, *, shown: bool) -> Iterator[Listener | None]:
    """A listener drawing `sessions/progress` of this listing as a bar on a terminal's stderr."""
    if not shown or not sys.stderr.isatty():
        yield None
        return
    with ExitStack() as stack:
        bars: list[Any] = []

        def listen(method: str, params: dict[str, Any]) -> None:
            if method != "sessions/progress" or params.get("cwd") != cwd:
                return
            if not bars:
                bar = click.progressbar(length=params["total"], label="Indexing sessions", file=sys.stderr)
                bars.append(stack.enter_context(bar))
            bars[0].update(params["done"] - bars[0].pos)

        yield listen


@contextmanager
def _refusals(as_json: bool) -> Iterator[None]:
    """A session refusal is printed (as JSON with --json) and sets the exit code."""
    try:
        yield
    except RpcError as exc:
        if exc.code != SESSION_REFUSED:
            raise
        code = exc.data["code"]
        if as_json:
            emit_json({"error": {"code": code, "message": exc.message}})
        else:
            say(f"remem: {code}: {exc.message}", err=True)
        sys.exit(_EXIT_CODES.get(code, EXIT_PROBLEMS))
