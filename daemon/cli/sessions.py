"""`remem sessions ...`: list, tree, turns and show, over every configured session root; fork,
rename, archive and restore one session."""

from __future__ import annotations

import os
import shlex
import sys
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ..protocol.forks import HARNESS_FIELDS, ForkRequest
from ..protocol.rpc import (
    SESSION_REFUSED,
    ArchiveParams,
    ListParams,
    MetaResult,
    RenameParams,
    RpcError,
    SessionParams,
    TranscriptParams,
    TurnRow,
)
from ..protocol.sessions import (
    INTERRUPTED_WHY,
    OPEN,
    ROLLED_BACK,
    ListError,
    ReviewState,
    SessionFormat,
    unread_sessions,
)
from ..sessions.harness_homes import looked_in
from ..sessions.sources import HARNESS_NAMES, Root, all_roots, named_roots, unique_roots
from ..validation import one_line
from .arguments import (
    FOLDER,
    NON_EMPTY,
    SESSION_REVISION_TYPE,
    UTF8,
    WholeNumber,
    absolute,
    absolute_paths,
    utf8_folder,
    workspace_params,
)
from .backend import Backend
from .output import Group, also_in_failures, emit_json, failure, say

if TYPE_CHECKING:
    from ..client import Listener

F = TypeVar("F", bound=Callable[..., Any])


def session_options(command: F) -> F:
    """`--root` (repeatable) and `--json`, shared by every session command."""
    command = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")(command)
    return click.option(
        "--root", "roots", multiple=True, type=FOLDER,
        callback=absolute_paths,
        help="An extra session root (repeatable; DSH, Claude Code or Codex, recognised by its layout).",
    )(command)  # fmt: skip


# A session's `generation` counts the changes of remem's metadata for it (title, archived).
expected_generation = click.option(
    "--expected-generation", "expected_generation", default=None, metavar="N",
    type=WholeNumber(0, "a generation, 0 or more, as the last rename, archive or restore printed it"),
    help="Refuse (STALE_GENERATION) unless the session's metadata is still at change N, as the last "
    "rename, archive or restore printed it: another change made meanwhile is not overwritten.",
)  # fmt: skip


@click.group(cls=Group)
def sessions() -> None:
    """List agent sessions, show their lineage, turns and transcripts."""


@sessions.command("list")
@click.option("--cwd", default=None, type=FOLDER, help="Only sessions of this workspace.")
@session_options
@click.pass_obj
def list_sessions(backend: Backend, cwd: str | None, roots: tuple[Path, ...], as_json: bool) -> None:
    """Every session in the configured roots, oldest first, and every log that cannot be read."""
    params = ListParams(cwd=utf8_folder(absolute(cwd)) if cwd is not None else None)
    with _indexing_bar(params.cwd, shown=not as_json) as listener, _refusals():
        listing = backend.api(roots, listener).list_sessions(params)
    if as_json:
        emit_json(listing)
        return
    ids = [one_line(s.id) for s in listing.sessions]  # a file's name may hold a newline
    width = max(map(len, ids), default=0)  # ids differ in length by harness
    badges = [
        " ".join(
            mark
            for mark in (
                harness_badge(s.format),
                "live" if s.live else "",
                review_badge(s.review),
                problems_badge(s.problems),
            )
            if mark
        )
        for s in listing.sessions
    ]
    column = max(map(len, badges), default=0)  # so every title starts at one column
    for s, shown_id, badge in zip(listing.sessions, ids, badges, strict=True):
        turns = f"{s.turns:>3} {'turn' if s.turns == 1 else 'turns':<5}"
        marks = f" {badge:<{column}}" if column else ""
        title = one_line(s.title or "(untitled)")
        say(f"{shown_id:<{width}}  {_age(s.createdAt)}  {s.kind:<8} {turns}{marks}  {title}")
    for error in listing.errors:
        say(f"error: {one_line(error.path)}: {one_line(error.message)}", err=True)
    if not listing.sessions:
        _none_found(backend, params.cwd, roots, listing.errors)
    say_interrupted(s.review for s in listing.sessions)
    unread = len(unread_sessions(listing.errors))
    unknown = ", review states unknown" if any(e.kind == "reviews" for e in listing.errors) else ""
    say(f"{len(listing.sessions)} session(s), {unread} unreadable{unknown}")


@sessions.command()
@click.option("--cwd", default=None, type=FOLDER, help="The workspace; default: here.")
@session_options
@click.pass_obj
def tree(backend: Backend, cwd: str | None, roots: tuple[Path, ...], as_json: bool) -> None:
    """The lineage of this workspace's sessions: forks and subagents under their parents."""
    params = workspace_params(cwd)
    with _indexing_bar(params.cwd, shown=not as_json) as listener, _refusals():
        answer = backend.api(roots, listener).session_tree(params)
    nodes = answer.nodes
    if as_json:
        emit_json(answer.model_dump(mode="json", include={"nodes", "errors"}))
        return
    for node in nodes:
        extra = f" (from turn {node.forkTurn})" if node.forkTurn else ""
        flags = f" [{', '.join(node.flags)}]" if node.flags else ""
        marks = (harness_badge(node.format), review_badge(node.review), problems_badge(node.problems))
        flags += "".join(f" {mark}" for mark in marks if mark)
        flags += " (archived)" if node.archived else ""
        title = one_line(node.title or node.id)  # a file's name, so an id, may hold a newline
        say(f"{'  ' * node.depth}{node.kind}: {title}{extra}{flags}  {one_line(node.id)}")
    for error in answer.errors:  # as `list` says them: an unreadable workspace is not an empty one
        say(f"error: {one_line(error.path)}: {one_line(error.message)}", err=True)
    say_interrupted(node.review for node in nodes)
    if not nodes:
        _none_found(backend, params.cwd, roots, answer.errors)


def harness_badge(session_format: SessionFormat) -> str:
    """The harness a session comes from, as `list` and `tree` show it (none for DSH's)."""
    return f"[{HARNESS_NAMES[session_format]}]" if session_format != "dsh" else ""


def review_badge(review: ReviewState) -> str:
    """A session's review state, as `list` and `tree` show it (none for one never reviewed)."""
    if review.state == "unknown":  # the receipts could not be read: the error names their folder
        return "[review unknown]"
    if review.state == "interrupted":  # its receipt still says its last step, which is over
        return "[interrupted]"
    return f"[{review.status or review.state}]" if review.state != "never" else ""


def say_interrupted(reviews: Iterable[ReviewState]) -> None:
    """How many reviews were stopped without finishing, and how to run one again."""
    stopped = sum(review.state == "interrupted" for review in reviews)
    if stopped:
        say(
            f"{stopped} review(s) [interrupted]: stopped without finishing ({INTERRUPTED_WHY}); "
            "`remem consolidate SESSION` reviews the session again"
        )


def problems_badge(problems: int) -> str:
    """The lines of a session's file its reader skipped or flagged, as `list` and `tree` show
    them (none for a clean file); `sessions show` lists each (decision 0161)."""
    return f"[{problems} problem{'' if problems == 1 else 's'}]" if problems else ""


def _none_found(
    backend: Backend, cwd: str | None, roots: Sequence[Path], errors: Sequence[ListError]
) -> None:
    """What an empty answer means, where remem looked, and where to go from it: said on stderr,
    so the output stays empty for scripts. A folder the answer's `errors` name is not said to be
    missing: its error, above, says why it was not read (a root whose name is not UTF-8 is
    named by its shown path, where no folder is)."""
    where = "" if cwd is None else f"of {one_line(cwd)} "
    if cwd is not None and not os.path.isdir(cwd):  # a typo, or a project moved since: either way, said
        where += "(no folder is there) "
    if cwd is not None and _nearby(backend, roots, cwd, where):
        return
    unreadable = len(unread_sessions(errors))
    said = {error.path for error in errors}
    harnesses = sorted(HARNESS_NAMES.values())
    found = f"could be read ({unreadable} unreadable, above)" if unreadable else "were found"
    say(
        f"No agent sessions {where}{found}. remem reads the sessions of {', '.join(harnesses[:-1])} "
        f"and {harnesses[-1]}; it looked in:",
        err=True,
    )
    defaults = backend.harness_defaults(roots)  # the daemon's, when it answered
    read = _roots_read(backend, roots, defaults)
    # A default folder read by another path (a link in sessions.roots) was read: not said again.
    paths = [root.path for root in read]
    defaults = [d for d in defaults if d.path in paths or unique_roots([*read, d]) != read]
    for folder in looked_in(paths, defaults):
        whose = f"{HARNESS_NAMES[folder.harness]}'s folder" if folder.harness else ""
        fine = folder.exists or str(folder.path) in said
        what = ", ".join(part for part in (whose, "" if fine else _missing(folder.path)) if part)
        say(f"  {one_line(str(folder.path))}{f' ({what})' if what else ''}", err=True)
    say(
        f"Add a folder under sessions.roots in {backend.home.settings_file}, "
        "or read one once with `--root FOLDER`.",
        err=True,
    )


def _nearby(backend: Backend, roots: Sequence[Path], cwd: str, where: str) -> bool:
    """Name the folders above or below the workspace `cwd` (by any path it goes by, `where` as
    said of it) that have sessions, nearest first, and the `--cwd` to give; False when none has.
    A session belongs to the folder its agent ran in, which may be a project's root or one of its
    folders; not to the user's home folder or `/` above it: an agent run there would otherwise be
    offered for every folder without sessions, a typo's too."""
    from ..sessions.catalog import workspace_paths  # only for an empty answer

    with _indexing_bar(None, shown=True) as listener, _refusals():
        listing = backend.api(roots, listener).list_sessions(ListParams())
    asked = workspace_paths(cwd)
    too_wide = {os.sep, *workspace_paths(os.path.expanduser("~"))}  # agents record it resolved
    counts: dict[str, int] = {}
    for session in listing.sessions:
        if session.cwd is None:
            continue
        if session.cwd in too_wide and any(_inside(path, session.cwd) for path in asked):
            continue
        if any(_related(session.cwd, path) for path in asked):
            counts[session.cwd] = counts.get(session.cwd, 0) + 1
    if not counts:
        return False
    depth = cwd.count(os.sep)
    folders = sorted(counts, key=lambda folder: (abs(folder.count(os.sep) - depth), folder))
    say(f"No agent sessions {where}were found; a folder above or below it has some:", err=True)
    for folder in folders[:_NEARBY_SHOWN]:
        count = counts[folder]
        say(f"  {one_line(folder)} ({count} session{'' if count == 1 else 's'})", err=True)
    say(f"Give that folder: --cwd {shlex.quote(one_line(folders[0]))}", err=True)
    return True


_NEARBY_SHOWN = 5  # a home folder's many projects below it would fill the screen


def _related(folder: str, asked: str) -> bool:
    """Whether `folder` (a session's recorded cwd) is above or below `asked`, both absolute."""
    if folder == asked or not os.path.isabs(folder):
        return False
    return _inside(folder, asked) or _inside(asked, folder)


def _inside(path: str, folder: str) -> bool:
    return path.startswith(folder.rstrip(os.sep) + os.sep)


def _missing(path: Path) -> str:
    """Why a folder a listing looked in holds nothing: not there, or no folder (a root that is
    a file is listed as an error of its own above; "not found" contradicted it)."""
    return "not a folder" if os.path.exists(path) else "not found"  # os.path: never raises


def _roots_read(backend: Backend, extra: Sequence[Path], defaults: Sequence[Root]) -> list[Root]:
    """The roots a listing reads: remem's own, the configured ones, each harness's default
    folder that exists (of `defaults`), and the `--root`s; as the catalog composes them
    (`all_roots`, then `unique_roots`: a folder reached by two paths, such as a `--root` through
    a link to DSH's folder, is read once, by the path first named)."""
    from ..settings import SettingsError, SettingsStore  # only for an empty answer

    try:
        configured = SettingsStore(backend.home).read()[0].sessions.roots
    except SettingsError:
        configured = []  # the listing said so already
    named = [root for folder in extra for root in named_roots(folder)]
    return unique_roots([*all_roots(backend.home, configured, defaults), *named])


@sessions.command()
@click.argument("session_id", type=NON_EMPTY)
@session_options
@click.pass_obj
def turns(backend: Backend, session_id: str, roots: tuple[Path, ...], as_json: bool) -> None:
    """The turns of a session: number, status, its events (DSH) or lines (Claude Code, Codex),
    first line of the prompt."""
    with _refusals():
        result = backend.api(roots).session_turns(SessionParams(id=session_id))
    if as_json:
        emit_json(result.model_dump())
        return
    if not result.turns:
        say(f"{one_line(session_id)} has no turns yet.", err=True)  # stdout stays empty for scripts
    unit = "events" if result.format == "dsh" else "lines"
    for t in result.turns:
        mark = "" if t.forkable else f"  ({_unbranchable(t, result.parent)})"
        end = t.endSeq if t.endSeq is not None else "…"
        say(f"{t.turn:>4}  {t.status:<11} {unit} {t.startSeq}-{end}  {one_line(t.user)}{mark}")


def _unbranchable(turn: TurnRow, parent: str | None) -> str:
    """Why no fork can be made after `turn`: its own state, or else its session's, which only a
    Claude Code subagent's file has (Claude Code resumes sessions, not subagents)."""
    if turn.status in (OPEN, ROLLED_BACK):
        return f"{'rolled back' if turn.status == ROLLED_BACK else 'open'}: cannot branch"
    return f"subagent: branch its parent {one_line(parent)}" if parent else "subagent: branch its parent"


@sessions.command()
@click.argument("session_id", type=NON_EMPTY)
@click.option("--markdown", "as_markdown", is_flag=True, help="Print the transcript as Markdown (default).")
@session_options
@click.pass_obj
def show(
    backend: Backend, session_id: str, as_markdown: bool, roots: tuple[Path, ...], as_json: bool
) -> None:
    """A session's transcript, or its header, turns and events as JSON."""
    if as_markdown and as_json:
        raise click.UsageError("--markdown and --json both name what to print: give one of them")
    with _refusals():
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
    type=WholeNumber(
        0,
        "an event number, 0 or more, as `remem sessions turns ID` shows them (a line number for "
        "Claude Code and Codex sessions)",
    ),
    default=None,
    help="Branch after the turn holding this event number (a line number, for Claude Code and Codex "
    "sessions), as `sessions turns` shows them; instead of --turn.",
)
@click.option(
    "--turn",
    type=WholeNumber(1, "a turn number, 1 or more, as `remem sessions turns ID` numbers them"),
    default=None,
    help="Branch after this turn (as `sessions turns` numbers them); instead of --at.",
)
@click.option(
    "--op-id",
    "operation_id",
    default=None,
    type=NON_EMPTY,
    help="Idempotency key: a retry with it returns the same child (default: a new one, printed).",
)
@click.option(
    "--title", default=None, type=UTF8, help="The child's title (default: the parent's title with (N+1))."
)
@click.option(
    "--expected-revision",
    default=None,
    type=SESSION_REVISION_TYPE,
    help="Refuse (STALE_SOURCE) if the session changed since (the `revision` of `sessions turns --json`).",
)
@session_options
@click.pass_obj
def fork(
    backend: Backend, session_id: str, at_seq: int | None, turn: int | None, operation_id: str | None,
    title: str | None, expected_revision: str | None, roots: tuple[Path, ...], as_json: bool,
) -> None:  # fmt: skip
    """Branch a session after a completed turn. Only the conversation is copied: files and
    other side effects of the parent are not rolled back. A Claude Code or Codex child is
    written where its harness finds it, and the command that resumes it is printed."""
    if turn is not None and at_seq is not None:
        raise click.UsageError("--turn and --at both name where to branch: give one of them")
    # Without one, a fresh id: printed, since only a retry with it is never a second child.
    generated = operation_id is None
    operation_id = operation_id or uuid.uuid4().hex
    # The daemon finds the turn's end, after its operation's journal: a retry of the same
    # request is answered whatever became of the session since (decision 0393).
    request = ForkRequest(
        source=session_id,
        operationId=operation_id,
        atSeq=at_seq,
        afterTurn=turn,
        title=title,
        expectedRevision=expected_revision,
    )
    in_process = bool(roots) or not backend.use_daemon

    def retry_with(exc: BaseException | None) -> dict[str, Any]:
        """A --json failure with no answer that may have made the child carries the id."""
        return {"operationId": operation_id} if exc is not None and _may_have_reached(exc, in_process) else {}

    if generated:
        also_in_failures(retry_with)
    with _refusals():
        try:
            result = backend.api(roots).fork_session(request)
        except RpcError:  # answered: a refusal made nothing
            also_in_failures()
            raise
        except BaseException as exc:  # no answer: the child may have been made, or nothing was sent
            said_in_json = as_json and not isinstance(exc, KeyboardInterrupt)  # a Ctrl-C is text
            if generated and not said_in_json and _may_have_reached(exc, in_process):
                say(f"remem: {_retry_with(operation_id)}", err=True)
            raise
    if as_json:
        # A DSH child has no resume command: its JSON stays what it always was.
        answer = result.model_dump(
            mode="json", exclude=set(HARNESS_FIELDS) if result.resume is None else None
        )
        emit_json({**answer, "operationId": operation_id} if generated else answer)
    else:
        verb = "created" if result.created else "already existed:"
        unit = "events" if result.resume is None else "lines"  # a harness file's records are its lines
        say(f"{verb} {result.child} (after turn {result.forkTurn}, {result.seedLength} {unit} inherited)")
        if result.command is not None:
            say(f"resume it with: {result.command}")
        if result.note is not None:
            say(result.note if result.command is None else f"note: {result.note}")
        if generated:
            say(_retry_with(operation_id))


def _may_have_reached(exc: BaseException, in_process: bool) -> bool:
    """Whether a fork that got no answer (`exc`) may still have made its child: after Ctrl-C, or a
    connection lost once the request left (the daemon died or stopped while answering, whatever
    followed), or a failure of the fork run in this process. Not when nothing was sent: the
    home cannot be used, no daemon could be started or reached (said, then `SystemExit`)."""
    from ..client import ConnectionLost
    from ..home import HomeUnusable

    if isinstance(exc, KeyboardInterrupt):
        return True
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ConnectionLost):
            return True
        if isinstance(seen, HomeUnusable):
            return False
        seen = seen.__context__
    return in_process and not isinstance(exc, SystemExit)


def _retry_with(operation_id: str) -> str:
    """The line that tells how to retry a fork whose id remem chose, never making a second child."""
    return (
        f"operation id: {operation_id} (to retry after a crash, give --op-id {operation_id}: the same "
        "child is returned, never a second)"
    )


@sessions.command()
@click.argument("session_id", type=NON_EMPTY)
@click.argument("title", type=UTF8)
@expected_generation
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
    with _refusals():
        meta = backend.api(roots).rename_session(params)
    _print_meta(meta, as_json)


def _archive_command(name: str, archived: bool, summary: str) -> None:
    """`archive` and `restore` differ only in the flag they set."""

    @sessions.command(name, help=summary)
    @click.argument("session_id", type=NON_EMPTY)
    @expected_generation
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
        with _refusals():
            meta = backend.api(roots).archive_session(params)
        _print_meta(meta, as_json)


_archive_command(
    "archive",
    True,
    "Mark a session archived: the editor's tree hides it, `sessions tree` marks it; nothing is deleted.",
)
_archive_command("restore", False, "Unmark an archived session: the editor's tree shows it again.")


def _print_meta(meta: MetaResult, as_json: bool) -> None:
    if as_json:
        emit_json(meta)
    else:
        title = f'"{one_line(meta.displayTitle)}"' if meta.displayTitle else "untitled"
        archived = {True: ", archived", False: ", not archived", None: ""}[meta.archived]
        say(f"{meta.id}: {title}{archived}; metadata change {meta.generation} (for --expected-generation)")


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
def _refusals() -> Iterator[None]:
    """A session refusal is said as every failure is (`failure`: as JSON with --json)."""
    try:
        yield
    except RpcError as exc:
        if exc.code != SESSION_REFUSED:
            raise
        failure(exc.data["code"], exc.message, coded=True)
