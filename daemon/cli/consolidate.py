"""`remem consolidate`, `remem receipts` and `remem settings model`: learning memory from sessions."""

from __future__ import annotations

import atexit
import contextlib
import os
import random
import shlex
import signal
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn

import click

from ..consolidation.receipts import FAILED, INTERRUPTED, SUCCEEDED, now
from ..home import RECEIPT_NAME
from ..protocol.consolidation import ConsolidationResult, Receipt, Status
from ..protocol.memory import HistoryEntry
from ..protocol.rpc import (
    CONSOLIDATION_REFUSED,
    NO_API_KEY,
    UNWRITABLE,
    ConsolidateParams,
    Empty,
    HistoryLogParams,
    ModelSettings,
    ReceiptsParams,
    ReviewParams,
    RpcError,
    SelectModelParams,
    TurnRow,
)
from ..protocol.sessions import INTERRUPTED_WHY
from ..validation import one_line
from .arguments import NON_EMPTY
from .backend import Backend
from .memory import project_of, unanswered
from .output import (
    EXIT_CONFLICT,
    EXIT_INTERRUPTED,
    EXIT_PROBLEMS,
    Command,
    Group,
    OutputUnwritable,
    emit_json,
    exit_silenced,
    exit_status,
    fail,
    failure,
    refused_write,
    say,
    say_stopped,
)

json_option = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
_EXIT = {Status.TARGET_CONFLICT: EXIT_CONFLICT, Status.SOURCE_CHANGED: EXIT_CONFLICT}
_SELECT_ATTEMPTS = 20  # reads of settings.yml a choice of model is made on, while others change it
_SELECT_PAUSE = 0.05  # seconds, at most, before reading it again


@click.command(cls=Command)
@click.argument("session_id", type=NON_EMPTY)
@json_option
@click.pass_obj
def consolidate(backend: Backend, session_id: str, as_json: bool) -> None:
    """Learn memory from a finished session: the model proposes, remem checks and commits.

    A review already done returns its receipt without calling the model again."""
    from ..client import CancelUnanswered
    from ..consolidation.changes import PHASE_WORDS

    stops = _Stops(backend, session_id, as_json)

    def show_progress(method: str, params: dict[str, Any]) -> None:
        if method == "consolidation/progress" and params.get("session") == session_id and not as_json:
            step = f" (step {params['step']})" if params.get("step") else ""
            # In the editor's words; a phase added later is shown by its name.
            words = PHASE_WORDS.get(params["phase"], params["phase"])
            say(f"… {words[:1].lower()}{words[1:]}{step}", err=True)

    # Named, so that a Ctrl-C's cancel stops this run alone, never another's it may wait for.
    params = ConsolidateParams(session=session_id, run=uuid.uuid4().hex)
    # A receipt completed before this moment is an earlier review's, returned as it was: the
    # answer does not say so, and receipts are stamped by this machine's clock too.
    asked_at = now()
    with _stops_as_ctrl_c(stops), _ended_by_stops(stops):
        try:
            result = backend.api(listener=show_progress, stops=stops.heard).consolidate(params)
        except RpcError as exc:
            if stops.heard and exc.code == CONSOLIDATION_REFUSED and exc.data.get("code") == "CANCELLED":
                stops.end(f"remem: interrupted: {exc.message}")
            _refused(exc, as_json, backend, session_id, stops)
        except CancelUnanswered:
            stops.end(stops.unanswered())
        stops.result = result
        if as_json:
            emit_json(result)
            stops.json_written = True
        else:
            _say_result(backend, result, asked_at)
        stops.exiting = stops.status()
        sys.exit(stops.exiting)


def _say_result(backend: Backend, result: ConsolidationResult, asked_at: str) -> None:
    """The run's outcome, then the changes it committed, the history entries they made and how
    to undo them, and whether it was an earlier review's."""
    say(_outcome(result))
    read = _receipt_and_turns(backend, result.review) if result.status in SUCCEEDED else None
    if read is None:
        return
    receipt, turns = read
    if result.changes:
        for line in _changes_said(backend, receipt, {receipt.source.session: turns}):
            say(f"  {line}")
    logs = _Logs(backend)
    for line in _history_said(receipt, logs):
        say(line)
    if receipt.completedAt is not None and receipt.completedAt < asked_at:
        say(_earlier_said(receipt, logs))


def _outcome(result: ConsolidationResult) -> str:
    """The run's outcome in one line: "committed, 1 change(s) — review R, attempt 1"."""
    again = " (recovered after a crash)" if result.recovered else ""
    changes = f", {result.changes} change(s)" if result.changes else ""
    said = f"{result.status.value}{changes}{again} — review {result.review}, attempt {result.attempt}"
    if result.repeats is not None:
        said += f"; its evidence is what review {result.repeats} read, so no model was asked"
    return said if result.reason is None else f"{said}: {one_line(result.reason)}"


def _changes_said(backend: Backend, receipt: Receipt | str, turns: dict[str, list[TurnRow]]) -> list[str]:
    """Each change of `receipt` (or of the review of that id) as the editor's receipt view names
    it, with the turns of its session its evidence lies in: "added prefer-uv (feedback) ← turn 2"
    (the evidence's own lines or events when the session can no longer be read). `turns` holds
    the turns of the sessions read already."""
    from ..consolidation.changes import changed_records, turn_spans, turns_of

    review = receipt if isinstance(receipt, str) else receipt.review
    session = None if isinstance(receipt, str) else receipt.source.session
    if isinstance(receipt, str) or session not in turns:
        read = _receipt_and_turns(backend, review)
        if read is None:  # a receipt that cannot be read now: its listing says why
            if session is not None:
                turns[session] = []  # asked once a session: its changes are said without turns
            if isinstance(receipt, str):
                return []
        else:
            receipt, session = read[0], read[0].source.session
            turns[session] = read[1]
    assert session is not None
    lines = []
    for record, change in zip(changed_records(backend.home, receipt), receipt.changes, strict=True):
        text = record.text()
        said = f"{text[:1].lower()}{text[1:]}"
        numbers = turns_of(turns[session], change.evidence)
        if numbers:
            said += f" ← turn{'s' if len(numbers) > 1 else ''} {turn_spans(numbers)}"
        elif change.evidence:
            said += (
                f" ← {receipt.source.unit}s {', '.join(f'{r.fromSeq}–{r.toSeq}' for r in change.evidence)}"
            )
        lines.append(said)
    return lines


def _history_said(receipt: Receipt, logs: _Logs) -> list[str]:
    """The history entries `receipt`'s commits made, as its summary names them, and how to undo
    them: `revert --before` of an entry that is still its memory's newest; of one that is not,
    that it would take back the changes made after it too, as a `memory log` lists them."""
    said = _entries_of(receipt)
    if not said:
        return []
    undo: list[str] = []
    lines = [
        f"History: {', '.join(f'{scope} {entry[:12]}' for scope, _, entry in said)} "
        "(`remem memory diff ENTRY` shows one)"
    ]
    for scope, workspace, entry in said:
        log, newest = logs.of(workspace)
        revert = f"remem memory revert --before {entry[:12]}"
        undone = None if newest in (None, entry) else logs.undone_by(workspace, entry)
        if newest == entry:
            undo.append(revert)
        elif undone is not None:  # its revert would change nothing, or take back only later changes
            since = "" if undone == newest else ", and changed after that"
            lines.append(f"{scope.capitalize()} memory: undone by {undone[:12]}{since} (`{log}` lists how)")
        elif newest is None:  # the log cannot be read now, or lacks a change: what came after it goes unknown
            lines.append(
                f"{scope.capitalize()} memory: `{revert}` undoes it and any change made there after it "
                f"(`{log}` lists them)"
            )
        else:
            lines.append(
                f"{scope.capitalize()} memory changed after it (`{log}` lists how): `{revert}` would "
                "take those changes back too"
            )
    return [lines[0], f"To undo it: {'; '.join(undo)}", *lines[1:]] if undo else lines


def _earlier_said(receipt: Receipt, logs: _Logs) -> str:
    """That `receipt` is an earlier review's, and whether memory it changed has changed since."""
    said = (
        f"This is the receipt of an earlier review (completed {receipt.completedAt}): "
        "nothing was reviewed again"
    )
    moved = [
        log
        for _, workspace, entry in _entries_of(receipt)
        for log, newest in [logs.of(workspace)]
        if newest not in (None, entry)
    ]
    return f"{said}; memory has changed since (see `{'`, `'.join(moved)}`)." if moved else f"{said}."


def _entries_of(receipt: Receipt) -> list[tuple[str, str | None, str]]:
    """Each history entry `receipt`'s review made: its scope's word, its workspace's key (None:
    Global), the entry."""
    link = receipt.history
    if link is None:
        return []
    made = [("workspace", receipt.target.workspace, link.workspaceEntry), ("Global", None, link.globalEntry)]
    return [(scope, workspace, entry) for scope, workspace, entry in made if entry]


@dataclass
class _Logs:
    """Each memory's `memory log` command and newest entry, read once a memory however many
    receipts name it."""

    backend: Backend
    read: dict[str | None, tuple[str, str | None]] = field(default_factory=dict)
    every: dict[str | None, list[HistoryEntry] | None] = field(default_factory=dict)  # whole logs

    def of(self, workspace: str | None) -> tuple[str, str | None]:
        """The `memory log` that lists the memory of `workspace` (None: Global), and its newest
        entry; None when it cannot be read now (a workspace whose project folder is unknown) or
        the history lacks a change of that memory."""
        if workspace not in self.read:
            project = None if workspace is None else project_of(self.backend, workspace)
            if workspace is None:
                self.read[None] = ("remem memory log --global", self._newest(None))
            elif project is None:
                self.read[workspace] = ("remem memory log --cwd <its project folder>", None)
            else:
                log = f"remem memory log --cwd {shlex.quote(project)}"
                self.read[workspace] = (log, self._newest(project))
        return self.read[workspace]

    def undone_by(self, workspace: str | None, entry: str) -> str | None:
        """The entry after `entry` that put its memory back as it was before it, none since having
        put `entry`'s changes back (a revert of that revert); None when there is none, or the log
        cannot be read. Judged by revision, so a hand edit that undid it counts as a revert does."""
        if workspace not in self.every:
            project = None if workspace is None else project_of(self.backend, workspace)
            known = workspace is None or project is not None
            self.every[workspace] = self._entries(project, None) if known else None
        entries = self.every[workspace] or []
        at = next((n for n, e in enumerate(entries) if e.id == entry), None)
        if at is None:
            return None
        made = entries[at]
        for later in entries[:at]:  # newest first: the latest of the two states decides
            if later.after in (made.before, made.after):
                return later.id if later.after == made.before else None
        return None

    def _newest(self, cwd: str | None) -> str | None:
        newest = self._entries(cwd, 1)
        return newest[0].id if newest else None

    def _entries(self, cwd: str | None, limit: int | None) -> list[HistoryEntry] | None:
        """The memory's newest `limit` entries (None: all), newest first; None when the log cannot
        be read (the daemon gone, a refusal), or when its history could not record the memory as
        it is now (`problem`: a full disk, say): a change on disk it lacks would go with `revert
        --before`, unsaid."""
        try:
            api = self.backend.api(start=False)
            read = api.memory_log(HistoryLogParams(cwd=cwd, limit=limit, stat=False))
        except unanswered():
            return None
        return None if read.problem is not None else read.entries


def _receipt_and_turns(backend: Backend, review: str) -> tuple[Receipt, list[TurnRow]] | None:
    """The receipt of `review` and its session's turns; None when it cannot be read now. A daemon
    gone since it answered (stopped, died) is not started again for this, nor is an answer too
    large for it (a huge session's turns) said as the command's failure: the receipt is read
    here and its changes said without turns, so a run it committed still ends as committed."""
    from ..client import DaemonUnavailable
    from ..consolidation.receipts import ReceiptError, ReceiptStore
    from ..home import HomeUnusable
    from ..protocol.rpc import ANSWER_TOO_LARGE

    try:
        view = backend.api(start=False).receipt(ReviewParams(review=review))
    except (RpcError, DaemonUnavailable) as exc:
        if isinstance(exc, RpcError) and exc.code != ANSWER_TOO_LARGE:
            return None
        try:
            found = ReceiptStore(backend.home).read(review)
        except (ReceiptError, HomeUnusable, OSError):
            return None
        return None if found is None else (found, [])
    return view.receipt, view.turns


@dataclass
class _Stops:
    """The stops a `remem consolidate` heard (none: a Ctrl-C's exit), and what one ends it with:
    the review's outcome once it answered (`result`), nothing new once its exit is under way."""

    backend: Backend
    session: str
    as_json: bool
    heard: list[int] = field(default_factory=list)
    result: ConsolidationResult | None = None
    json_written: bool = False  # the result, under `--json`, written whole
    exiting: int | None = None  # the status decided once the command's exit is under way
    late: int = 0  # stops heard since

    def status(self) -> int:
        """The command's exit status: once the review answered, its outcome's (a stop then only
        cut what was left to print, decision 0540); before, or before its `--json` answer was
        written whole, 128 + the first stop's signal: a script given no JSON to read is not told
        all went well."""
        if self.result is None or (self.as_json and not self.json_written):
            return _interrupted_status(self.heard)
        if self.result.status is Status.CANCELLED and self.heard:
            return _interrupted_status(self.heard)  # the stop's cancel, or one as it came
        return _EXIT.get(self.result.status, EXIT_PROBLEMS if self.result.status in FAILED else 0)

    def end(self, line: str | None = None) -> NoReturn:
        """End the command on a stop, saying `line`, by default what became of the review."""
        self.exiting = self.status()
        say_stopped(line or self._stopped(), self.exiting)

    def unanswered(self) -> str:
        """What a stop whose cancel the daemon did not answer ends the command saying."""
        return (
            "remem: interrupted before the daemon answered its cancel: the review may still commit "
            f"(remem receipts --session {self.session} shows what became of it)"
        )

    def _stopped(self) -> str:
        if self.result is None and self.backend.use_daemon and len(self.heard) > 1:
            return self.unanswered()  # stopped again before the daemon answered the first stop's cancel
        if self.result is None:
            return f"remem: interrupted (remem receipts --session {self.session} shows any review it began)"
        how = " and how to undo it" if self.result.status is Status.COMMITTED else ""
        return (
            f"remem: stopped once the review had ended: {_outcome(self.result)} "
            f"(remem receipts --session {self.session} shows it{how})"
        )


@contextlib.contextmanager
def _stops_as_ctrl_c(stops: _Stops) -> Iterator[None]:
    """SIGTERM (`kill`, `timeout`, a CI runner cancelling) and SIGHUP (the terminal closed) heard
    as Ctrl-C is, each stop appended to `stops.heard`: as a KeyboardInterrupt, even while SIGINT
    is ignored (`cmd &` in a script), until the command exits. While the run goes on, its call
    hears the first stop itself and cancels it (`Backend.api`'s `stops`), in this process or
    through the daemon, whose answer then says what the cancel did. Killed by them, the client
    left the daemon's review to commit, or its own review half recorded, after the user walked
    away (decision 0528). A stop the process was started ignoring (`nohup`'s SIGHUP) stays
    ignored. Once the review answered, or after a first stop, a stop ends the command where it
    is (`_Stops.end`); once its exit is under way it changes nothing: raised, the top level said
    it "remem: interrupted", 130, whatever the exit was. A second stop then gives up what was
    left to say, as a line that waits for room that long may never get it (a full pipe nobody
    reads, a terminal paused with Ctrl-S): the command ends with the status it decided, where it
    hung until SIGKILL (decision 0546). Given back when the command ends, as a
    process that embeds it (a test's `CliRunner`) had them, they are ignored once `remem` itself
    exits (`exits_ignoring_stops`)."""

    def as_ctrl_c(signum: int, frame: FrameType | None) -> None:
        stops.heard.append(signum)
        if stops.exiting is not None:
            stops.late += 1
            if stops.late > 1:
                exit_silenced(stops.exiting)
            return
        if stops.result is not None or len(stops.heard) > 1:
            stops.end()
        raise KeyboardInterrupt

    global _heeded
    _heeded = True
    before = {s: signal.signal(s, as_ctrl_c) for s, usual in _HEEDED.items() if signal.getsignal(s) == usual}
    try:
        yield
    finally:
        for stop, handler in before.items():
            signal.signal(stop, handler)


_HEEDED = {  # each stop `remem consolidate` hears, and its handler when nothing took it over
    signal.SIGINT: signal.default_int_handler,
    signal.SIGTERM: signal.SIG_DFL,
    signal.SIGHUP: signal.SIG_DFL,
}


_heeded = False  # whether a consolidate in this process took its stops over


def exits_ignoring_stops() -> None:
    """Once `remem`, as the process (`main`), ran its command: if a consolidate heard stops, they
    are ignored as the process exits. Never as a process that embeds the CLI (a test's
    `CliRunner`) exits, nor so in the children it starts then (they inherit an ignored stop)."""
    if _heeded:
        atexit.register(_stops_ignored_at_exit)


def _stops_ignored_at_exit() -> None:
    """Each stop at its default ignored while the interpreter exits: the command's status and
    line are decided and said, and a further `kill` there (after its handlers were given back,
    or once Python resets them as it ends) killed it outright, -15 to its parent, where a script
    read the command's own status a moment before (decision 0546). A handler of the process's
    own is left to it."""
    for stop, usual in _HEEDED.items():
        if signal.getsignal(stop) == usual:
            signal.signal(stop, signal.SIG_IGN)


@contextlib.contextmanager
def _ended_by_stops(stops: _Stops) -> Iterator[None]:
    """A stop the run did not take as its cancel ends the command: one before the review, or
    through the daemon one before it answered the first stop's cancel (`_Stops.end`).
    What was left to print is not worth the wait of a user who gave up (decision 0540). Once a
    stop is heard, output that cannot be written (a closed terminal's EIO) ends it so too,
    quietly."""
    try:
        yield
    except KeyboardInterrupt:
        stops.end()
    except OutputUnwritable:
        if not stops.heard:
            raise
        stops.exiting = stops.status()
        exit_silenced(stops.exiting)


def _interrupted_status(heard: list[int]) -> int:
    """The exit status of a run a stop ended: 128 + the signal, as shells report a process it
    killed (130 for Ctrl-C)."""
    return 128 + heard[0] if heard else EXIT_INTERRUPTED


# A review its receipt says is under way, which no run holds.
_STOPPED = (
    f"stopped without finishing (its receipt says {{status}}; {INTERRUPTED_WHY}): "
    "`remem consolidate {session}` reviews the session again"
)


@click.command(cls=Command)
@click.option(
    "--session", "session_id", default=None, type=NON_EMPTY, help="Only the reviews of this session."
)
@json_option
@click.pass_obj
def receipts(backend: Backend, session_id: str | None, as_json: bool) -> None:
    """The consolidation receipts, newest first: what was learnt from which session, and how."""
    found = backend.api().receipts(ReceiptsParams(session=session_id))  # oldest first
    # As `memory log` lists history: the latest review is what one looks for (decision 0445).
    found = found.model_copy(update={"receipts": found.receipts[::-1]})
    if as_json:
        emit_json(found)
        return
    turns: dict[str, list[TurnRow]] = {}  # by session: read once for all of its receipts
    logs = _Logs(backend)
    stopped = frozenset(found.interrupted)
    for r in found.receipts:
        names = ", ".join(c.name or "Global" for c in r.changes) or "-"
        # Changes a review proposed but did not commit (its source changed, its target moved)
        # are said as such: "changes:" alone read as memory that was written.
        said = "changes" if r.status is Status.COMMITTED or not r.changes else "proposed, not committed"
        error = r.attempt.error if r.status in FAILED and r.attempt is not None else None
        status = INTERRUPTED if r.review in stopped else r.status.value
        say(f"{r.createdAt}  {status:<18} {r.source.session}  {said}: {names}  ({r.review[:12]})")
        if error:
            say(f"    {one_line(error)}")
        if r.review in stopped:
            say(f"    {_STOPPED.format(status=r.status.value, session=r.source.session)}")
        for line in _changes_said(backend, r, turns) if r.changes else ():
            say(f"    {line}")
        for line in _history_said(r, logs):
            say(f"    {line}")
    for bad in found.errors:
        say(f"error: {one_line(bad.path)}: {one_line(bad.message)}", err=True)
    # The folder's error of files not named as a receipt (`misnamed`) is of no receipt: it counts them.
    damaged = sum(RECEIPT_NAME.fullmatch(Path(bad.path).name) is not None for bad in found.errors)
    unreadable = f", {damaged} unreadable" if damaged else ""
    say(f"{len(found.receipts)} receipt(s){unreadable}")


@click.group(cls=Group)
def settings() -> None:
    """Read or change remem's settings."""


class _ProviderOption(click.Option):
    """`--provider`, its help naming the predefined providers as settings.py defines them: read
    when the help is shown, as no other run of the CLI needs the settings module loaded."""

    @property
    def help(self) -> str:
        from ..settings import PREDEFINED_PROVIDERS

        return f"A provider ({', '.join(PREDEFINED_PROVIDERS)}, or your own)."

    @help.setter
    def help(self, _: str | None) -> None:
        pass  # click sets it when the option is made; the property says it


@settings.command()
@click.option("--provider", cls=_ProviderOption, default=None, type=NON_EMPTY)
@click.option("--model", default=None, type=NON_EMPTY, help="The model id at that provider.")
@json_option
@click.pass_obj
def model(backend: Backend, provider: str | None, model: str | None, as_json: bool) -> None:
    """Show the consolidation model, or choose another one (--provider, --model or both; the one
    left out stays as it is)."""
    try:
        before = current = backend.api().model_settings(Empty())
        if provider is not None or model is not None:
            current = _select(backend, current, provider, model)
    except RpcError as exc:
        _refused(exc, as_json, backend)
    changed = current.provider != before.provider and current.model != before.model
    if model is None and before.model is not None and changed and not as_json:
        # The model the user chose is not kept, nor silently dropped: say which one replaced it.
        say(
            f"note: {current.provider}'s default model `{current.model}` was chosen, not `{before.model}`, "
            f"the one chosen for {before.provider}; give --model for another model of {current.provider}",
            err=True,
        )
    if as_json:
        emit_json(current)
        return
    if not current.keyReady and current.keyProblem:
        key = f" — {current.keyProblem}{_key_elsewhere(backend, current)}"
    else:
        key = f" (API key from ${current.apiKeyEnv} or credentials.yml)" if current.apiKeyEnv else ""
    say(f"{current.provider}/{current.model or '(no model chosen)'}{key}")


def _select(
    backend: Backend, current: ModelSettings, provider: str | None, model: str | None
) -> ModelSettings:
    """Choose `provider` and `model` (the one not given as `current` has it). The revision is
    the one this command read, not the user's: when the file changed meanwhile (another
    `settings model`, an edit), it is read again and the choice made on it, a few times."""
    for _ in range(_SELECT_ATTEMPTS - 1):
        try:
            return _send(backend, _chosen(backend, current, provider, model))
        except RpcError as exc:
            if exc.code != CONSOLIDATION_REFUSED or exc.data["code"] != "STALE_SETTINGS":
                raise
        time.sleep(random.uniform(0, _SELECT_PAUSE))  # apart from the others that changed it
        current = backend.api().model_settings(Empty())
    return _send(backend, _chosen(backend, current, provider, model))


def _send(backend: Backend, chosen: SelectModelParams) -> ModelSettings:
    """Send the choice, and say when it rewrote settings.yml whole, its comments and layout
    lost (decision 0463): the daemon updates the bytes of the revision it is sent, which this
    command reads first, alike (`rewritten_whole`)."""
    from ..settings import SettingsError, model_changes, read_settings_file, rewritten_whole

    try:
        raw = read_settings_file(backend.home.settings_file) or b""
        unkept = rewritten_whole(raw, chosen.expectedRevision, model_changes(chosen.provider, chosen.model))
    except SettingsError:
        unkept = None  # the daemon refuses the choice, saying why
    answer = backend.api().select_model(chosen)
    if unkept is not None:
        say(f"note: {backend.home.settings_file} was rewritten whole, so its comments and layout were not "
            f"kept: {unkept}", err=True)  # fmt: skip
    return answer


def _chosen(
    backend: Backend, current: ModelSettings, provider: str | None, model: str | None
) -> SelectModelParams:
    provider = provider or current.provider
    kept = model or _kept_model(backend, current, provider)
    return SelectModelParams(provider=provider, model=kept, expectedRevision=current.revision)


def _kept_model(backend: Backend, current: ModelSettings, provider: str) -> str:
    """The model a choice without --model keeps: the current one while the provider stays, else
    `provider`'s default (deepseek's, the one remem knows), never the model chosen for another
    provider: written, it would be sent to a provider that never had it (decisions 0493, 0500).
    Without a default, the model is asked for."""
    from ..settings import GIVE_MODEL, default_model, model_to_choose, no_default_model

    if provider == current.provider and current.model is not None:
        return current.model
    default = default_model(provider)
    if default is not None:
        return default
    kept = current.model if _model_set(backend, current) else None
    fail(model_to_choose(provider, GIVE_MODEL, no_default_model(provider, kept, current.provider)))


def _model_set(backend: Backend, current: ModelSettings) -> bool:
    """Whether settings.yml, as the daemon read it (`current.revision`), sets consolidation.model:
    unset, the answer's model is the key's default, deepseek's, which nobody chose, and a refusal
    naming it as 'the one chosen for deepseek' would say what is not. Read here, as the answer
    says the model alone; a file changed since (or unreadable) is said as unset, naming none."""
    from ..settings import SettingsError, parse_settings, read_settings_file, revision_of

    try:
        raw = read_settings_file(backend.home.settings_file) or b""
    except SettingsError:
        return False
    # The same bytes the daemon parsed: parsed here too, they parse.
    return (
        revision_of(raw) == current.revision and "model" in parse_settings(raw).consolidation.model_fields_set
    )


def _refused(
    exc: RpcError, as_json: bool, backend: Backend, session_id: str | None = None, stops: _Stops | None = None
) -> NoReturn:
    """Say the daemon's refusal `exc`, whole, before a consolidate's `stops` are told it is the
    command's end: a stop from then on keeps it (decision 0546)."""
    if exc.code == UNWRITABLE:
        _ends_refused(stops, "UNWRITABLE")
        refused_write(exc)
    if exc.code != CONSOLIDATION_REFUSED:
        raise exc
    code = exc.data["code"]
    message = exc.message + (_missing_key_elsewhere(backend) if code == "NO_ROUTE" else "")
    if session_id is not None and exc.message.startswith(f"no session {session_id!r} in "):
        # In no root read: `sessions … --root` may list it all the same.
        roots = f"sessions.roots in {backend.home.settings_file}"
        message += f"; a session read with `--root` is consolidated once its root is under {roots}"
    data = {key: value for key, value in exc.data.items() if key != "code"}  # MEMORY_INVALID's files
    _ends_refused(stops, code)
    failure(code, message, data, coded=True)


def _ends_refused(stops: _Stops | None, code: str) -> None:
    if stops is not None:
        stops.exiting = exit_status(code)  # the status `failure` ends with


def _missing_key_elsewhere(backend: Backend) -> str:
    """`_key_elsewhere` for the route the daemon refused, when its key is what is missing: a hint,
    not worth a wait. A daemon gone since it refused is not started again for it, and one that
    does not answer (stopped, stuck) or a stop meanwhile leaves it out, the refusal said as the
    daemon gave it, where a stuck daemon hid the refusal behind its own failure 10 s later."""
    left_out: tuple[type[BaseException], ...] = (*unanswered(), KeyboardInterrupt)
    try:
        current = backend.api(start=False).model_settings(Empty())
    except left_out:
        return ""
    return _key_elsewhere(backend, current)


def _key_elsewhere(backend: Backend, current: ModelSettings) -> str:
    """What to do when this shell holds the key variable the daemon lacks: the daemon reads the
    environment it was started in, which an `export` in another shell does not reach. Not when
    the daemon has a key that cannot be sent: that problem says where it is."""
    env = current.apiKeyEnv
    if not (current.keyProblem or "").startswith(NO_API_KEY) or not backend.use_daemon:
        return ""
    if env is None or not os.environ.get(env, "").strip():
        return ""
    return (
        f"; this shell has ${env} set, but the daemon was started without it: run "
        "`remem daemon stop` and the next command starts it with this shell's environment"
    )
