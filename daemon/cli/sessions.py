"""`remem sessions ...`: list, tree, turns and show, over every configured session root."""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from ..forks.child import normalize_title
from ..forks.service import ForkRequest, ForkService
from ..home import Home
from ..server.protocol import TurnRow
from ..sessions.catalog import SessionCatalog, SessionNotFound
from ..sessions.errors import OperationError
from ..sessions.lineage import build_tree
from ..sessions.metadata import SessionMetadata
from ..sessions.transcript import render_transcript
from ..settings import SettingsError
from .output import EXIT_CONFLICT, EXIT_INVALID, EXIT_PROBLEMS, emit_json, fail

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")


def session_options(command: F) -> F:
    """`--root` (repeatable) and `--json`, shared by every session command."""
    command = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")(command)
    return click.option(
        "--root", "roots", multiple=True, type=click.Path(file_okay=False, path_type=Path),
        help="An extra DSH-format session root (repeatable), besides the configured ones.",
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
def list_sessions(home: Home, cwd: str | None, roots: tuple[Path, ...], as_json: bool) -> None:
    """Every session in the configured roots, oldest first, and every log that cannot be read."""
    listing = _catalog(home, roots).listing(cwd)
    if as_json:
        emit_json(listing)
        return
    for s in listing.sessions:
        badge = " live" if s.live else ""
        click.echo(
            f"{s.id}  {_age(s.createdAt)}  {s.kind:<8} {s.turns:>3} turns{badge}  {s.title or '(untitled)'}"
        )
    for error in listing.errors:
        click.echo(f"error: {error.path}: {error.message}", err=True)
    click.echo(f"{len(listing.sessions)} session(s), {len(listing.errors)} unreadable")


@sessions.command()
@click.option("--cwd", default=None, type=click.Path(file_okay=False), help="The workspace; default: here.")
@session_options
@click.pass_obj
def tree(home: Home, cwd: str | None, roots: tuple[Path, ...], as_json: bool) -> None:
    """The lineage of this workspace's sessions: forks and subagents under their parents."""
    entries, _ = _catalog(home, roots).entries(cwd if cwd is not None else str(Path.cwd()))
    lineage = build_tree(entry.lineage_item() for entry in entries)
    if as_json:
        # Not emit_json: pydantic and json.dumps recurse, and lineage chains can be 10 000 deep.
        click.echo(lineage.to_json())
        return
    stack = [(node, 0) for node in reversed(lineage.roots)]
    while stack:
        node, depth = stack.pop()
        extra = f" (from turn {node.forkTurn})" if node.forkTurn else ""
        flags = f" [{', '.join(node.flags)}]" if node.flags else ""
        click.echo(f"{'  ' * depth}{node.kind}: {node.title or node.id}{extra}{flags}  {node.id}")
        stack.extend((child, depth + 1) for child in reversed(node.children))


@sessions.command()
@click.argument("session_id")
@session_options
@click.pass_obj
def turns(home: Home, session_id: str, roots: tuple[Path, ...], as_json: bool) -> None:
    """The turns of a session: number, seq range, status, first line of the prompt."""
    projection = _lookup(lambda: _catalog(home, roots).projection(session_id))
    rows = [TurnRow.of(t).model_dump() for t in projection.turns]
    if as_json:
        emit_json({"turns": rows})
        return
    for t in projection.turns:
        mark = "" if t.forkable else "  (open: cannot branch)"
        end = t.endSeq if t.endSeq is not None else "…"
        click.echo(f"{t.turn:>4}  {t.status:<11} seq {t.startSeq}-{end}  {t.user}{mark}")


@sessions.command()
@click.argument("session_id")
@click.option("--markdown", "as_markdown", is_flag=True, help="Print the transcript as Markdown (default).")
@session_options
@click.pass_obj
def show(home: Home, session_id: str, as_markdown: bool, roots: tuple[Path, ...], as_json: bool) -> None:
    """A session's transcript, or its header, turns and events as JSON."""
    catalog = _catalog(home, roots)
    log = _lookup(lambda: catalog.read(session_id))
    if as_json:
        projection = _lookup(lambda: catalog.projection(session_id))
        emit_json({
            "header": log.header.to_record(),
            "title": projection.title,
            "turns": [TurnRow.of(t).model_dump() for t in projection.turns],
            "events": [e.to_record() for e in log.events],
        })  # fmt: skip
        return
    click.echo(render_transcript(log), nl=False)


def _catalog(home: Home, roots: tuple[Path, ...]) -> SessionCatalog:
    try:
        return SessionCatalog.open(home, roots)
    except SettingsError as exc:
        fail(f"settings.yml is invalid: {exc}", EXIT_INVALID)


def _lookup(action: Callable[[], T]) -> T:
    try:
        return action()
    except SessionNotFound as exc:
        click.echo(f"remem: {exc}", err=True)
        sys.exit(EXIT_PROBLEMS)


def _age(epoch_ms: int) -> str:
    return datetime.fromtimestamp(epoch_ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M")


_EXIT_CODES = {"INVALID": EXIT_INVALID, "INVALID_ANCHOR": EXIT_INVALID, "STALE_SOURCE": EXIT_CONFLICT,
               "STALE_GENERATION": EXIT_CONFLICT, "OP_CONFLICT": EXIT_CONFLICT}  # fmt: skip


@sessions.command()
@click.argument("session_id")
@click.option("--at", "at_seq", type=int, default=None, help="Branch after the turn holding this event seq.")
@click.option(
    "--op-id", "operation_id", required=True, help="Idempotency key: a retry with it returns the same child."
)
@click.option("--title", default=None, help="The child's title (default: the parent's title with (N+1)).")
@click.option("--expected-revision", default=None, help="Refuse (STALE_SOURCE) if the session changed since.")
@session_options
@click.pass_obj
def fork(
    home: Home, session_id: str, at_seq: int | None, operation_id: str, title: str | None,
    expected_revision: str | None, roots: tuple[Path, ...], as_json: bool,
) -> None:  # fmt: skip
    """Branch a session after a completed turn. Only the conversation is copied: files and
    other side effects of the parent are not rolled back."""
    request = ForkRequest(
        source=session_id,
        operationId=operation_id,
        atSeq=at_seq,
        title=title,
        expectedRevision=expected_revision,
    )
    result = _operation(lambda: ForkService(_catalog(home, roots)).fork(request), as_json)
    if as_json:
        emit_json(result)
    else:
        verb = "created" if result.created else "already existed:"
        click.echo(
            f"{verb} {result.child} (after turn {result.forkTurn}, {result.seedLength} events inherited)"
        )


@sessions.command()
@click.argument("session_id")
@click.argument("title")
@click.option("--expected-generation", type=int, default=None, help="Refuse if the metadata changed since.")
@session_options
@click.pass_obj
def rename(
    home: Home,
    session_id: str,
    title: str,
    expected_generation: int | None,
    roots: tuple[Path, ...],
    as_json: bool,
) -> None:
    """Give a session a display title (the log itself is never rewritten)."""
    clean = normalize_title(title)
    if not clean:
        _report(OperationError("INVALID", "the title is empty once control characters are removed"), as_json)
    _change_meta(home, roots, session_id, expected_generation, as_json, title=clean)


def _archive_command(name: str, archived: bool, summary: str) -> None:
    """`archive` and `restore` differ only in the flag they set."""

    @sessions.command(name, help=summary)
    @click.argument("session_id")
    @click.option(
        "--expected-generation", type=int, default=None, help="Refuse if the metadata changed since."
    )
    @session_options
    @click.pass_obj
    def command(
        home: Home, session_id: str, expected_generation: int | None, roots: tuple[Path, ...], as_json: bool
    ) -> None:
        _change_meta(home, roots, session_id, expected_generation, as_json, archived=archived)


_archive_command("archive", True, "Hide a session from the tree; nothing is deleted.")
_archive_command("restore", False, "Show an archived session again.")


def _change_meta(
    home: Home,
    roots: tuple[Path, ...],
    session_id: str,
    expected: int | None,
    as_json: bool,
    **changes: object,
) -> None:
    catalog = _catalog(home, roots)
    _operation(lambda: _must_exist(catalog, session_id), as_json)
    meta = _operation(lambda: SessionMetadata(home).update(session_id, expected, **changes), as_json)
    if as_json:
        emit_json({"id": session_id, **meta.model_dump()})
    else:
        click.echo(f"{session_id}: generation {meta.generation}")


def _must_exist(catalog: SessionCatalog, session_id: str) -> None:
    try:
        catalog.find(session_id)
    except SessionNotFound as exc:
        raise OperationError("NOT_FOUND", str(exc)) from None


def _operation(action: Callable[[], T], as_json: bool) -> T:
    try:
        return action()
    except OperationError as exc:
        _report(exc, as_json)


def _report(exc: OperationError, as_json: bool) -> NoReturn:
    if as_json:
        emit_json({"error": {"code": exc.code, "message": exc.message}})
    else:
        click.echo(f"remem: {exc.code}: {exc.message}", err=True)
    sys.exit(_EXIT_CODES.get(exc.code, EXIT_PROBLEMS))
