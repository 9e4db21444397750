"""`remem memory ...`: validate, show, apply, replace-global, reindex, context, and the history:
log, diff, show --at and revert."""

from __future__ import annotations

import codecs
import json
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO, NoReturn

import click
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from ..memory.batch import CHANGES, Problem
from ..memory.diagnostics import FileProblems, Severity
from ..memory.identity import WorkspaceId
from ..memory.lint import NotMemoryFile, Unchecked, lint_paths
from ..memory.revision import empty_revision, workspace_revision
from ..os_names import is_utf8
from ..protocol.memory import Actor, CommitResult, FileStat, HistoryEntry
from ..protocol.rpc import (
    HISTORY_REFUSED,
    INVALID_CHANGES,
    MEMORY_INVALID,
    SCOPE_BUSY,
    UNWRITABLE,
    CommitWorkspaceParams,
    Empty,
    HistoryDiffParams,
    HistoryDiffResult,
    HistoryEntryParams,
    HistoryLogParams,
    HistoryShowResult,
    Params,
    ReplaceGlobalParams,
    Result,
    RevertParams,
    RpcError,
    WorkspaceParams,
)
from ..validation import one_line
from .arguments import ENTRY_ID, FOLDER, INPUT, NON_EMPTY, WholeNumber, workspace_params
from .backend import Backend, daemon_log_hint
from .output import (
    EXIT_CONFLICT,
    EXIT_INVALID,
    EXIT_PROBLEMS,
    Group,
    emit_json,
    fail,
    failure,
    print_file_problems,
    refused_write,
    say,
)

# What cannot be read is named up to this many, the rest counted: a folder of thousands of another
# owner's files would otherwise bury what was checked.
UNREAD_SHOWN = 20

json_option = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
cwd_option = click.option(
    "--cwd",
    type=FOLDER,
    default=None,
    help="The workspace (project folder); default: the current directory.",
)


@click.group(cls=Group)
@click.pass_context
def memory(ctx: click.Context) -> None:
    """Read, validate and change Global and workspace memory."""
    if ctx.invoked_subcommand != "validate":  # it reads the files it is given, never the home
        backend = ctx.find_object(Backend)
        assert backend is not None  # made by `remem`'s own group
        backend.home.refuse_non_utf8_name()


@memory.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@json_option
@click.pass_obj
def validate(backend: Backend, paths: tuple[Path, ...], as_json: bool) -> None:
    """Check memory files (or folders of them) against every rule; exit 1 on any error, else 2
    when a file or folder found could not be read."""
    unread: list[Unchecked] = []
    try:
        reports = lint_paths(list(paths), backend.home.workspaces, unread)
    except NotMemoryFile as exc:
        fail(("\n" if as_json else "\nremem: ").join(exc.problems))  # one line each
    errors = any(d.severity is Severity.ERROR for r in reports for d in r.diagnostics)
    ok = not errors and not unread
    named, more = unread[:UNREAD_SHOWN], len(unread[UNREAD_SHOWN:])
    if as_json:
        files = [r.model_dump(mode="json") for r in reports]
        said = [{"path": u.path, "message": u.reason} for u in named]
        emit_json({"ok": ok, "files": files, "unread": said, "unreadMore": more})
    else:
        print_file_problems(reports)
        for unchecked in named:
            say(f"remem: {unchecked}", err=True)
        if more:
            say(f"remem: and {more} more file(s) or folder(s) that cannot be read", err=True)
        count = sum(len(r.diagnostics) for r in reports)
        not_read = f", {len(unread)} not read" if unread else ""
        say(
            f"{len(reports)} file(s) checked, {count} problem(s){not_read}"
            + (", not valid" if errors else "")
        )
    # An error found is said first: the memory read is not valid, whatever else went unread.
    sys.exit(EXIT_PROBLEMS if errors else EXIT_INVALID if unread else 0)


@memory.command()
@cwd_option
@click.option(
    "--at",
    "at",
    type=ENTRY_ID,
    default=None,
    metavar="ENTRY",
    help="Show the files as history entry ENTRY left them.",
)
@json_option
@click.pass_obj
def show(backend: Backend, cwd: str | None, at: str | None, as_json: bool) -> None:
    """Show Global memory and this workspace's records with their revisions."""
    if at is not None:
        if cwd is not None:  # it was ignored: a typo in it went unsaid
            raise click.UsageError(
                "--at shows the scope its entry changed (a workspace, or Global), so it takes no --cwd; "
                "give one of them"
            )
        _show_at(backend, at, as_json)
        return
    global_memory = _read(backend.api().read_global, Empty(), as_json)
    snapshot = _read(backend.api().read_workspace, workspace_params(cwd), as_json)
    if as_json:
        emit_json(
            {
                "global": global_memory.model_dump(mode="json"),
                "workspace": snapshot.model_dump(mode="json", include={"key", "revision", "records"}),
            }
        )
        return
    say(f"Global memory ({global_memory.revision})")
    say(global_memory.content or "(empty)\n")
    say(f"Workspace {snapshot.key} for {snapshot.cwd} ({snapshot.revision})")
    for record in snapshot.records:
        say(f"  {record.name} [{record.type}] — {one_line(record.description)}")
    if not snapshot.records:
        say("  (no records)")


@memory.command()
@cwd_option
@click.option(
    "--expected-revision",
    required=True,
    type=NON_EMPTY,
    help="The workspace revision your changes are based on.",
)
@click.option(
    "--changes",
    "changes_file",
    required=True,
    type=INPUT,
    help="JSON list of put/delete changes ('-' for stdin).",
)
@json_option
@click.pass_obj
def apply(
    backend: Backend, cwd: str | None, expected_revision: str, changes_file: BinaryIO, as_json: bool
) -> None:
    """Commit a batch of record changes if the workspace is still at --expected-revision."""
    raw = changes_file.read()
    _check_changes_file(raw, _input_name(changes_file), as_json)
    try:
        changes = CHANGES.validate_json(raw)
    except ValidationError as exc:
        _report_result_invalid([_problem_from(error) for error in exc.errors()], as_json)
    folder = workspace_params(cwd).cwd
    if expected_revision == workspace_revision({}) and not os.path.isdir(folder):
        # Memory is named by its folder's path: a typo would start the memory of no project.
        # One that has memory is read first (its revision is not the empty one): a moved or
        # deleted project's records stay changeable.
        said = f"no folder is at {folder}; check --cwd (new memory is started only in an existing folder)"
        _report_result_invalid([Problem(code="remem/no-folder", message=said)], as_json)
    params = CommitWorkspaceParams(cwd=folder, expectedRevision=expected_revision, changes=changes)
    key = WorkspaceId.from_cwd(folder).key  # as the daemon names it
    # Named by --cwd, the scope is not the shell's folder, which a bare `memory show` would read.
    scope = f"this workspace's memory ({key})" if cwd is None else f"the memory of {folder} ({key})"
    show = SHOW if cwd is None else f"{SHOW} --cwd {shlex.quote(folder)}"

    def conflict(now: str) -> str:
        hint = _retry_hint(
            expected_revision,
            _revision_of(lambda: backend.api().read_global(Empty()).revision),
            "Global memory's revision",
            "`memory apply` takes the workspace's",
            show,
        )
        return f"{scope} is at {now}, not {expected_revision}; {hint}"

    _commit(backend.api().commit_workspace, params, as_json, conflict)


@memory.command("replace-global")
@click.option(
    "--expected-revision", required=True, type=NON_EMPTY, help="The Global revision your text is based on."
)
@click.option("--file", "source", required=True, type=INPUT, help="New GLOBAL.md text ('-' for stdin).")
@json_option
@click.pass_obj
def replace_global(backend: Backend, expected_revision: str, source: BinaryIO, as_json: bool) -> None:
    """Replace GLOBAL.md if it is still at --expected-revision."""
    raw = source.read()
    try:
        content = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        _report_result_invalid(
            [Problem(code="remem/encoding", message=f"the new text is not UTF-8 (byte offset {exc.start})")],
            as_json,
        )
    params = ReplaceGlobalParams(expectedRevision=expected_revision, content=content)

    def conflict(now: str) -> str:
        here = _current_workspace()
        if here is None:
            return f"Global memory is at {now}, not {expected_revision}; {_retry()}"
        hint = _retry_hint(
            expected_revision,
            _revision_of(lambda: backend.api().read_workspace(WorkspaceParams(cwd=here.cwd)).revision),
            f"the revision of this workspace's memory ({here.key})",
            "`memory replace-global` takes Global memory's",
        )
        return f"Global memory is at {now}, not {expected_revision}; {hint}"

    _commit(backend.api().replace_global, params, as_json, conflict)


@memory.command()
@cwd_option
@json_option
@click.pass_obj
def reindex(backend: Backend, cwd: str | None, as_json: bool) -> None:
    """Regenerate this workspace's MEMORY.md from its records."""
    written = _read(backend.api().regenerate_index, workspace_params(cwd), as_json).written
    if as_json:
        emit_json({"status": "regenerated" if written else "no-change"})
    else:
        say("MEMORY.md regenerated" if written else "MEMORY.md already up to date")


@memory.command()
@cwd_option
@click.pass_obj
def context(backend: Backend, cwd: str | None) -> None:
    """Print what an agent should load: Global memory and the workspace index."""
    say(_read(backend.api().memory_context, workspace_params(cwd), as_json=False).text, nl=False)


@memory.command()
@cwd_option
@click.option("--global", "global_", is_flag=True, help="The history of Global memory instead.")
@click.option(
    "--limit",
    default=50,
    show_default=True,
    type=WholeNumber(0, "how many of the newest entries to show, or 0 for all"),
    help="Entries to show, newest first; 0 for all.",
)
@click.option("--no-stat", is_flag=True, help="Leave out what each entry changed (faster on long histories).")
@json_option
@click.pass_obj
def log(backend: Backend, cwd: str | None, global_: bool, limit: int, no_stat: bool, as_json: bool) -> None:
    """List the history of this workspace (or of Global): who changed memory, when, and what."""
    if global_ and cwd is not None:
        fail("--cwd and --global name different scopes; give one of them")
    params = HistoryLogParams(
        cwd=None if global_ else workspace_params(cwd).cwd, limit=limit or None, stat=not no_stat
    )
    result = _read(backend.api().memory_log, params, as_json)
    if as_json:  # it carries the problem; stderr stays empty, as in this process (decision 0509)
        emit_json(result)
        return
    if result.problem is not None and backend.use_daemon:  # in this process, its log said it
        _warn_daemon_said(backend, result.problem)
    for entry in result.entries:
        # One row an entry, whatever a file's name holds: a newline in it would forge a row.
        say(one_line(f"{entry.id[:12]}  {entry.at}  {_actor(entry)}{_stat_line(entry.stat)}"))
    if not result.entries:
        say("(no history yet)")
    if result.more != 0:  # None: an older entry cannot be read to count them
        counted = "" if result.more is None else f"{result.more} "
        said = "entry" if result.more == 1 else "entries"
        say(f"... and {counted}older {said} (--limit 0 lists all)")


def _warn_daemon_said(backend: Backend, problem: str) -> None:
    say(f"remem: warning: {problem} ({daemon_log_hint(backend.home, backend.greetings)})", err=True)


@memory.command()
@click.argument("entry", type=ENTRY_ID)
@click.argument("to", type=ENTRY_ID, required=False)
@json_option
@click.pass_obj
def diff(backend: Backend, entry: str, to: str | None, as_json: bool) -> None:
    """Show what history entry ENTRY changed, or the difference from ENTRY to TO."""
    params = HistoryDiffParams(entry=entry, to=to)
    result = _read(backend.api().memory_diff, params, as_json)
    if as_json:
        emit_json(result)
    elif result.fromEntry is None and not result.patch:  # only a first entry that found memory there
        say(
            f"{result.toEntry[:12]} is the first entry of this history and found memory already there: "
            f"nothing earlier is recorded to compare it with (`remem memory show --at {result.toEntry[:12]}` "
            "shows what it found)"
        )
    else:
        say(result.patch or "(no difference)\n", nl=False)
        say(one_line(_stat_line(result.stat).strip()) or "no files changed")


@memory.command()
@click.argument("entry", type=ENTRY_ID)
@click.option(
    "--expected-revision",
    default=None,
    type=NON_EMPTY,
    help="Revert only if the scope is still at this revision.",
)
@click.option(
    "--before",
    is_flag=True,
    help="Bring back the state before ENTRY instead, undoing it and every later change of its scope "
    "(before a scope's first entry, it held nothing).",
)
@json_option
@click.pass_obj
def revert(backend: Backend, entry: str, expected_revision: str | None, before: bool, as_json: bool) -> None:
    """Make the scope of history entry ENTRY hold what ENTRY left, as a new generation; say what
    it changed and how to take it back."""
    api = backend.api()

    def conflict(now: str) -> str:
        # Asked only now: a conflict is rare, and the entry alone says which scope it changed.
        # Without --expected-revision, it is the revision the revert was planned from.
        expected = expected_revision or "the revision the revert was planned from"
        try:
            workspace = api.memory_show_at(HistoryEntryParams(entry=entry)).entry.workspace
        except RpcError:
            return f"the scope entry {entry} changed is at {now}, not {expected}; {_retry()}"
        if workspace is None:
            here = _current_workspace()
            hint = _retry() if here is None or expected_revision is None else _retry_hint(
                expected_revision,
                _revision_of(lambda: api.read_workspace(WorkspaceParams(cwd=here.cwd)).revision),
                f"the revision of this workspace's memory ({here.key})",
                "a revert of a Global entry takes Global memory's",
            )  # fmt: skip
            return f"Global memory is at {now}, not {expected}; {hint}"
        show = _show_workspace(backend, workspace)
        hint = _retry(show) if expected_revision is None else _retry_hint(
            expected_revision,
            _revision_of(lambda: api.read_global(Empty()).revision),
            "Global memory's revision",
            "a revert of a workspace's entry takes the workspace's",
            show,
        )  # fmt: skip
        return f"the memory of workspace {workspace} is at {now}, not {expected}; {hint}"

    try:
        _commit(
            api.memory_revert,
            RevertParams(entry=entry, expectedRevision=expected_revision, before=before),
            as_json,
            conflict,
            # the stat alone, from a daemon that runs: never a daemon started, nor a patch sent
            change=lambda made: backend.api(start=False).memory_diff(
                HistoryDiffParams(entry=made, patch=False)
            ),
            after=lambda made: _after_revert(backend, entry, before, made),
            take_back_blocked=lambda made: _blocked_take_back(backend, made),
        )
    except RpcError as exc:
        if exc.code != HISTORY_REFUSED:
            raise
        _refused(exc)


SHOWN_LATER = 5  # later changes a revert names one by one; the rest are counted


def unanswered() -> tuple[type[Exception], ...]:
    """What a request after a committed revert meets when it cannot be answered: the daemon gone,
    or a refusal (an answer too large, the daemon's bug); run in this process, an unusable home
    or lock is raised as it is, not as an RpcError. Imported only when one is raised."""
    from ..client import DaemonUnavailable
    from ..home import HomeUnusable
    from ..locks import LockUnusable

    return (RpcError, DaemonUnavailable, HomeUnusable, LockUnusable)


def _after_revert(backend: Backend, entry: str, before: bool, made: HistoryDiffResult) -> list[str]:
    """What a committed revert says after its own change (decision 0510): the changes after
    ENTRY it took back too, and how to take it back, or why a revert cannot."""
    take_back = made.fromEntry
    if take_back is None:  # no entry before the revert's: nothing to go back to
        return []
    held = _held_at(backend, take_back)
    return [*_later_changes(backend, entry, before, made, take_back, held), _take_back(take_back, held, made)]


def _held_at(backend: Backend, entry: str) -> HistoryShowResult | None:
    """The scope and what it held at `entry`, the one before the revert's; None when it cannot
    be asked, what depends on it then said as it can be."""
    try:
        return backend.api(start=False).memory_show_at(HistoryEntryParams(entry=entry))
    except unanswered():
        return None


def _blocked_take_back(backend: Backend, made: HistoryDiffResult) -> list[str]:
    """The files that keep a revert from being taken back (`_take_back` says why), for `--json`."""
    held = None if made.fromEntry is None else _held_at(backend, made.fromEntry)
    return [] if held is None else _unrestorable(held, made)


def _later_changes(
    backend: Backend,
    entry: str,
    before: bool,
    made: HistoryDiffResult,
    take_back: str,
    held: HistoryShowResult | None,
) -> list[str]:
    """The changes of ENTRY's scope after ENTRY that the revert took back: `this revert:` says
    their files together, as if ENTRY had made them all."""
    named = entry.lower()
    if before and take_back.startswith(named):
        return []  # ENTRY was the newest: it alone was undone
    lead = f"it took back {entry[:12]} and" if before else "it took back"
    try:
        later = None if held is None else _entries_after(backend, named, made.toEntry, held.entry.workspace)
    except unanswered():  # the log could not be read: said without it
        later = None
    if later is None:
        if before:
            return [f"{lead} every later change of its memory, up to {take_back[:12]}"]
        return [f"{lead} every change made after {entry[:12]}, up to {take_back[:12]}"]
    entries, count = later
    changes = "change" if count == 1 else "changes"
    said = [
        f"{lead} {count} later {changes} with it:"
        if before
        else f"{lead} {count} {changes} made after {entry[:12]}:"
    ]
    said += [
        one_line(f"  {e.id[:12]}  {e.at}  {_actor(e)}{_stat_line(e.stat)}") for e in entries[:SHOWN_LATER]
    ]
    if count > SHOWN_LATER:
        assert held is not None  # the log was read
        key = held.entry.workspace
        where = "--global" if key is None else f"--cwd {shlex.quote(project_of(backend, key) or '')}"
        said.append(f"  ... and {count - SHOWN_LATER} more (`remem memory log {where}` lists them)")
    return said


def _entries_after(
    backend: Backend, named: str, revert: str, workspace: str | None
) -> tuple[list[HistoryEntry], int] | None:
    """The newest of the entries between ENTRY (`named`: its id, or the start of it) and the
    revert, newest first, with their stat, and how many there are; None when the scope's log
    cannot be asked for (a workspace whose project folder is unknown) or does not hold them."""
    cwd = None if workspace is None else project_of(backend, workspace)
    if workspace is not None and cwd is None:
        return None
    api = backend.api(start=False)
    page = api.memory_log(HistoryLogParams(cwd=cwd, limit=SHOWN_LATER + 2, stat=True)).entries
    ids = [e.id for e in page]
    if revert not in ids:  # later entries came meanwhile, past the page: too rare to look further
        return None
    shown = page[ids.index(revert) + 1 :]
    end = next((n for n, e in enumerate(shown) if e.id.startswith(named)), None)
    if end is not None:
        return shown[:end], end
    every = [e.id for e in api.memory_log(HistoryLogParams(cwd=cwd, stat=False)).entries]
    start = every.index(revert) + 1
    end = next((n for n, e in enumerate(every[start:]) if e.startswith(named)), None)
    return None if end is None else (shown, end)


def _take_back(take_back: str, held: HistoryShowResult | None, made: HistoryDiffResult) -> str:
    """How to take a revert back: revert to `take_back`, the scope's newest entry before it;
    unless what it held was invalid, which a revert never puts back (`remem/revert-invalid`)."""
    invalid = [] if held is None else _unrestorable(held, made)
    if not invalid:
        return f"to take it back: remem memory revert {take_back[:12]}"
    files = one_line(", ".join(invalid))  # a name may hold a newline: never a false line
    one = len(invalid) == 1
    return (
        f"it cannot be taken back by a revert: {files} {'was' if one else 'were'} invalid "
        f"at {take_back[:12]}, the entry before it, and a revert never writes invalid files back; "
        f"`remem memory show --at {take_back[:12]}` shows {'it' if one else 'them'}, "
        "to copy back by hand and fix"
    )


def _unrestorable(held: HistoryShowResult, made: HistoryDiffResult) -> list[str]:
    """The files of `held` a revert to its entry would refuse, judged as that revert judges
    them: those the revert `made` changed or removed, as a revert writes only the files that
    differ from what is there (the rest stand as a commit left them, valid); Global's text."""
    # Loaded only here: a revert that says it cannot be taken back is rare.
    from ..memory.batch import InvalidChanges
    from ..memory.history import GLOBAL_FILE
    from ..memory.history_diff import file_label
    from ..memory.revert import changes_to, global_text

    every = {name: text.encode("utf-8") for name, text in held.files.items()}
    went = {*made.stat.changed, *made.stat.removed}
    is_global = held.entry.workspace is None
    data = every if is_global else {n: d for n, d in every.items() if file_label(n) in went}
    # Texts come decoded, U+FFFD where bytes were no UTF-8 and where a record holds its own: the
    # answer names the files of the first kind.
    undecoded = [name for name in held.undecoded if name in data]
    try:
        if is_global:
            global_text(data.get(GLOBAL_FILE, b""))
        else:
            changes_to({}, data)
    except InvalidChanges as exc:
        return sorted({*undecoded, *(p.file for p in exc.problems if p.file)})
    return sorted(undecoded)


def _show_workspace(backend: Backend, key: str) -> str:
    """The command that reads workspace `key`'s revision: a bare `remem memory show` reads the
    folder it runs in, another workspace's memory elsewhere."""
    here = _current_workspace()
    if here is not None and here.key == key:
        return SHOW
    project = project_of(backend, key)
    return f"{SHOW} --cwd {shlex.quote(project) if project else '<its project folder>'}"


def project_of(backend: Backend, key: str) -> str | None:
    """The project folder of workspace `key`, as its workspace.json names it; None when it
    names none (its folder recreated by a revert), or one that is not `key`'s."""
    from ..home import HomeUnusable
    from ..memory.store import MemoryStore

    try:
        cwd = MemoryStore(backend.home, history=False).workspace_of(key).cwd
    except (OSError, HomeUnusable):
        return None
    return cwd if cwd and WorkspaceId.from_cwd(cwd).key == key else None


def _show_at(backend: Backend, at: str, as_json: bool) -> None:
    result = _read(backend.api().memory_show_at, HistoryEntryParams(entry=at), as_json)
    if as_json:
        emit_json(result)
        return
    entry = result.entry
    scope = "Global memory" if entry.workspace is None else f"Workspace {entry.workspace}"
    say(one_line(f"{scope} at {entry.id[:12]} ({entry.after}), {entry.at}, {_actor(entry)}"))
    for name, text in sorted(result.files.items()):
        say(f"\n==> {one_line(name)} <==\n{text}", nl=not text.endswith("\n"))
    if not result.files:
        say("(empty)")


def _refused(exc: RpcError) -> NoReturn:
    failure("HISTORY_REFUSED", exc.message)


def _actor(entry: HistoryEntry) -> str:
    actor = entry.actor
    details = [
        f"review {actor.review[:12]}" if actor.review else None,
        f"session {actor.session}" if actor.session else None,
        actor.client,
        _went_back(actor) if actor.kind == "revert" else None,
    ]
    shown = ", ".join(d for d in details if d)
    return f"{actor.kind}" + (f" ({shown})" if shown else "")


def _went_back(actor: Actor) -> str:
    return f"back to {actor.reverts[:12]}" if actor.reverts else "back to before the first entry"


def _stat_line(stat: FileStat | None) -> str:
    if stat is None:
        return ""
    parts = [
        f"{label} {', '.join(names)}"
        for label, names in (("added", stat.added), ("changed", stat.changed), ("removed", stat.removed))
        if names
    ]
    return f"  {'; '.join(parts)} (+{stat.insertions} -{stat.deletions})" if parts else "  (no file changed)"


def _read(ask: Callable[[Params], Result], params: Params, as_json: bool) -> Result:
    try:
        return ask(params)
    except RpcError as exc:
        if exc.code == HISTORY_REFUSED:
            _refused(exc)
        _said_if_busy_or_unwritable(exc)
        if exc.code != MEMORY_INVALID:
            raise
        _report_invalid(exc.message, exc.data, as_json)


def _said_if_busy_or_unwritable(exc: RpcError) -> None:
    """Exit 1 on a refusal a read and a commit share: the disk refused the write (UNWRITABLE), or
    another process kept the scope's lock past the daemon's bound (SCOPE_BUSY; its message names
    the lock file and says to end its holder). Anything else is left to the caller."""
    if exc.code == UNWRITABLE:
        refused_write(exc)
    if exc.code == SCOPE_BUSY:
        failure("SCOPE_BUSY", exc.message)


def _commit(
    ask: Callable[[Params], CommitResult],
    params: Params,
    as_json: bool,
    conflict: Callable[[str], str],
    change: Callable[[str], HistoryDiffResult] | None = None,
    after: Callable[[HistoryDiffResult], list[str]] | None = None,
    take_back_blocked: Callable[[HistoryDiffResult], list[str]] | None = None,
) -> None:
    """`conflict`: what a conflict says, given the scope's current revision: which scope it
    is, the daemon's answer holding only the revision. `change`: what the committed
    generation's entry (by id) changed, said as the revert's; `after`: the lines said after
    it, given that change; `take_back_blocked`: the files that keep it from being taken back."""
    try:
        result = ask(params)
    except RpcError as exc:
        if exc.code == INVALID_CHANGES:
            _report_result_invalid([Problem.model_validate(p) for p in exc.data["problems"]], as_json)
        _said_if_busy_or_unwritable(exc)
        if exc.code != MEMORY_INVALID:
            raise
        files = [FileProblems.model_validate(f) for f in exc.data["files"]]
        problems = [
            Problem(code=d.code, message=d.message, file=f.path) for f in files for d in f.diagnostics
        ]
        _report_result_invalid(problems, as_json)
    if as_json:
        made = _its_change(change, result)
        if made is None:
            emit_json(result)
        else:
            blocked = [] if take_back_blocked is None else take_back_blocked(made)
            emit_json({**result.model_dump(mode="json"), "change": _change(made, blocked)})
    elif result.status == "conflict":
        say(f"conflict: {conflict(result.revision)}", err=True)
    else:
        say(f"{result.status}: {result.revision}")  # said first: the commit stands, whatever follows
        made = _its_change(change, result)
        if made is not None:
            say(one_line(f"this revert: {_stat_line(made.stat).strip()}"))
            for line in after(made) if after is not None else ():
                say(line)
    sys.exit(EXIT_CONFLICT if result.status == "conflict" else 0)


def _its_change(
    change: Callable[[str], HistoryDiffResult] | None, result: CommitResult
) -> HistoryDiffResult | None:
    """None when it cannot be asked: the revert stands and exits 0, only what it changed goes
    unsaid (decision 0443). Its request (`Backend.api(start=False)`) raises what went wrong —
    the daemon gone, an answer too large or a refusal, the daemon's bug too — and says nothing
    itself; a bug of this process is one, said as such."""
    if change is None or result.history is None:
        return None
    try:
        return change(result.history)
    except unanswered():
        return None


def _change(made: HistoryDiffResult, blocked: list[str]) -> dict[str, Any]:
    """What a revert changed (its own entry's stat) and the entry that takes it back; none, and
    the files that keep it from being taken back, when `blocked` names some."""
    stat = made.stat.model_dump(mode="json")
    if blocked:
        return {"stat": stat, "takeBack": None, "unrestorable": blocked}
    return {"stat": stat, "takeBack": made.fromEntry}


# An empty Global and an empty workspace hash alike (both scopes are at it in a fresh home): a
# lost race from it is an ordinary stale revision, never one copied from the other scope.
_EMPTY = empty_revision(None)


SHOW = "remem memory show"  # what reads a scope's revision, said in a conflict's hint


def _retry(show: str = SHOW) -> str:
    """How to retry a conflict: `show` reads the scope's revision again."""
    return f"re-read it (`{show}`) and retry"


def _retry_hint(expected: str, other: str | None, other_said: str, takes: str, show: str = SHOW) -> str:
    """How to retry a conflict. `remem memory show` prints Global's revision first: copied for
    the workspace (or the other way round), it conflicts though nothing changed, and again on
    every retry, unless it is said to be the other scope's (`other`, that scope's revision now)."""
    if other != expected or expected == _EMPTY:
        return _retry(show)
    return f"{expected} is {other_said}; {takes} (see `{show}`)"


def _revision_of(read: Callable[[], str]) -> str | None:
    """The other scope's revision, or None when it cannot be read (its memory invalid, say):
    only a hint goes unsaid, never the conflict."""
    try:
        return read()
    except RpcError:
        return None


def _current_workspace() -> WorkspaceId | None:
    """The workspace `replace-global` runs in, to compare its revision; None for a removed
    folder or a name the protocol cannot carry."""
    try:
        here = os.getcwd()
    except FileNotFoundError:
        return None
    return WorkspaceId.from_cwd(here) if is_utf8(here) else None


def _input_name(source: BinaryIO) -> str:
    name = getattr(source, "name", None)  # '-' opens standard input, which Python names <stdin>
    return str(name) if isinstance(name, str) and name != "<stdin>" else "standard input"


_JSON_KINDS: dict[type, str] = {
    dict: "an object",
    str: "a string",
    bool: "true or false",
    int: "a number",
    float: "a number",
    type(None): "null",
}


_BOMS = (codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)  # UTF-32's begin as UTF-16's


def _check_changes_file(raw: bytes, name: str, as_json: bool) -> None:
    """Refuse a `--changes` input that is no JSON list, naming it and where it goes wrong:
    the schema's own words (`Input should be a valid array`) named neither."""
    # Decoded here, strictly: json.loads(bytes) would take UTF-16 or a byte-order mark, which
    # the schema's decoder then refuses in its own words.
    if raw.startswith(_BOMS):
        said = f"{name} starts with a byte-order mark; --changes takes UTF-8 text without one"
        _report_result_invalid([Problem(code="remem/bad-change", message=said)], as_json)
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        said = f"{name} is not UTF-8 text; --changes takes a JSON list of changes"
    except json.JSONDecodeError as exc:
        if not exc.doc.strip():
            said = f"{name} is empty; --changes takes a JSON list of changes"
        else:
            said = f"{name} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
    except RecursionError:
        said = f"{name} is not valid JSON: its lists or objects nest too deeply"
    except ValueError:  # the one json.loads raises besides JSONDecodeError: an integer too long
        digits = sys.get_int_max_str_digits()
        said = f"{name} is not valid JSON: a number in it has more than {digits} digits"
    else:
        if isinstance(data, list):
            return
        flag = "--changes" if name == "standard input" else f"--changes {name}"
        said = f"{flag} must hold a JSON list of changes; {name} holds {_JSON_KINDS[type(data)]}"
    _report_result_invalid([Problem(code="remem/bad-change", message=said)], as_json)


def _report_result_invalid(problems: list[Problem], as_json: bool) -> NoReturn:
    if as_json:
        emit_json({"status": "invalid", "problems": [p.model_dump(mode="json") for p in problems]})
    else:
        for problem in problems:
            where = f"change {problem.change}: " if problem.change is not None else ""
            where = f"{problem.file}: " if problem.file else where
            # a file name may hold a newline, and a message quote it: one problem stays one line
            say(one_line(f"invalid: {where}{problem.message} [{problem.code}]"), err=True)
    sys.exit(EXIT_INVALID)


def _report_invalid(message: str, data: dict[str, Any], as_json: bool) -> NoReturn:
    if as_json:
        failure("MEMORY_INVALID", message, {"revision": data["revision"], "files": data["files"]})
    print_file_problems([FileProblems.model_validate(f) for f in data["files"]], err=True)
    fail(f"{message}; fix the files above (see `remem memory validate`)", EXIT_PROBLEMS)


def _problem_from(error: ErrorDetails) -> Problem:
    location = error["loc"]
    change = location[0] if location and isinstance(location[0], int) else None
    field = ".".join(str(part) for part in location[1:] if str(part) not in ("put", "delete"))
    return Problem(code="remem/bad-change", change=change, message=f"{field or 'change'}: {error['msg']}")
