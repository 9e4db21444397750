"""One MCP session: its workspace, the observation its writes are bound to, its write budget.

The seed's observation registry, for MCP: every read of the context records the Global and
workspace revisions the agent was shown; `memory_update` is committed against exactly those,
and a success advances them to what it wrote. A context the session holds is given again
without asking the daemon while its watch proves memory unchanged since (`context_watch`). The
stdio transport serves one client per process, so the session is the server process (an agent
harness that shares one server between several agents shares their observation). Revisions,
workspace keys and paths stay here and in the daemon: every answer to the agent is prose or a
record, and every refusal says what to do.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

import anyio
from pydantic import ValidationError

from remem.daemon.client import DaemonUnavailable
from remem.daemon.home import HomeUnusable
from remem.daemon.locks import LockRefused, LockUnusable
from remem.daemon.memory.identity import WorkspaceId, is_workspace_key
from remem.daemon.memory.record import render_record
from remem.daemon.protocol.api import DaemonApi
from remem.daemon.protocol.memory import DeleteChange, HistoryEntry, PutChange
from remem.daemon.protocol.rpc import (
    ANSWER_TOO_LARGE,
    HISTORY_REFUSED,
    HOME_UNUSABLE,
    INVALID_CHANGES,
    MEMORY_INVALID,
    SCOPE_BUSY,
    UNWRITABLE,
    AgentChange,
    AgentContextParams,
    AgentIdentity,
    AgentIndexEntry,
    AgentObservation,
    AgentRecordParams,
    AgentUpdateParams,
    AgentUpdateResult,
    HistoryLogParams,
    HistoryLogResult,
    RpcError,
    WorkspaceParams,
)
from remem.daemon.validation import one_line

from .context_watch import ContextWatch
from .limits import CALL_SECONDS, MAX_UPDATE_BYTES, UpdateBudget
from .link import MemoryLink
from .tools import UPDATE, UpdateArguments, argument_problems
from .tools import shown as quoted

NOT_READ = (
    "You have not loaded memory in this session yet: call memory_context first. memory_update only "
    "changes memory you have seen, so nothing was written."
)
STALE = (
    "{scope} memory changed since you last loaded it (the user, another agent or remem changed it). "
    "Nothing was written. Call memory_context to see the current memory, then redo your change if it "
    "still applies."
)
# Named by the file's name alone: the agent never sees the home's path (the user's log does).
LOCK_IN_THE_WAY = (
    "remem cannot reach its memory: {name} in remem's home cannot be used as a lock file "
    "({reason}). Ask the user to remove that file (remem recreates it), then try again."
)
# A lock the file system refuses (ENOLCK on some network mounts): no file to remove, no retry helps.
LOCK_REFUSED_BY_DISK = (
    "remem cannot reach its memory: the file system remem's home is on refuses to lock {name} "
    "({reason}). Ask the user to put remem's home on a local disk, then try again."
)
# The daemon's message names the home's paths: for the user (logged), not the agent.
HOME_IN_THE_WAY = (
    "remem cannot reach its memory: something in remem's home stands in the way. Ask the user to run "
    "`remem memory show`, which says what and how to fix it (so does this MCP server's log), then "
    "try again."
)
# Any other refusal of the daemon's: its message may name the home's paths or a workspace key, so
# it is for the user (logged), and the agent is told what to do instead.
NOT_DONE = (
    "remem could not do this (the user sees why in this MCP server's log). If this was "
    "memory_update, it may or may not have been applied: call memory_context before trying again."
)
# A write the file system refused (a full disk, a quota, a read-only mount): nothing was written,
# and the folder it names is the home's, for the user (logged).
DISK_REFUSED = (
    "remem could not write to its memory: the file system refused the write (a full disk, a quota "
    "or a read-only folder; the user sees which in this MCP server's log). Nothing was changed. Ask "
    "the user to free space or fix the folder, then try again."
)
HISTORY_UNREADABLE = (
    "remem cannot read the memory history now (the user sees why in this MCP server's log). Ask the "
    "user to run `remem memory log` in a terminal to see what is wrong."
)
TOO_LARGE = (
    "remem's answer is too large to send ({size} KiB; its daemon sends at most {limit} KiB, the "
    "setting daemon.max_answer_bytes): ask for less if you can (memory_history's limit), or ask the "
    "user to raise that setting."
)
# Its reason names the home and quotes the daemon's log: for the user (logged), not the agent.
DAEMON_UNAVAILABLE = (
    "remem's memory service is unavailable: its daemon could not be reached or started (the user "
    "sees why with `remem memory show`, which starts it). If this was memory_update, it may or may "
    "not have been applied: call memory_context before trying again."
)
# The call was let go of, not refused: the daemon may still do it (a commit included).
NO_ANSWER = (
    "remem's memory service did not answer within {seconds:g} s: its daemon is stopped or stuck "
    "(the user sees which with `remem daemon status`, and ends it with `remem daemon stop`). If "
    "this was memory_update, it may or may not have been applied: call memory_context to re-read "
    "memory before trying again."
)
# The daemon's message names the lock file's path: for the user (logged).
SCOPE_HELD = (
    "Another remem process is holding this memory for writing and has not let go (it is stopped "
    "or stuck; the user sees which in this MCP server's log). Nothing was written. Try again in a "
    "minute; if it is still held, ask the user to end that process."
)
T = TypeVar("T")
_SCOPE_TITLES = {"global": "Global", "workspace": "This project's"}
log = logging.getLogger("remem.agents")


@dataclass(frozen=True)
class RecentChanges:
    """The entries `memory_history` shows, and the scopes whose history lacks some (the
    daemon's `problem`): an agent must not read a short history as the whole story."""

    entries: list[HistoryEntry]
    gaps: list[Literal["global", "workspace"]]


class Refusal(Exception):
    """What the agent is told instead of a result; the message says what to do next.
    `uncertain`: the request may have been done all the same (the daemon went away, or failed
    in a way remem did not foresee), so a commit it refuses still counts against the budget."""

    def __init__(self, message: str, *, uncertain: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.uncertain = uncertain


class AgentSession:
    def __init__(
        self,
        link: MemoryLink,
        budget: UpdateBudget | None = None,
        watch: ContextWatch | None = None,
        deadline: float = CALL_SECONDS,
    ) -> None:
        """`watch` None: every memory_context asks the daemon; `deadline`: the seconds a call
        waits for memory before the agent is told it got no answer."""
        self.id = secrets.token_hex(8)
        self.deadline = deadline
        self.api = DaemonApi(link)
        self.budget = budget or UpdateBudget()
        self._watch = watch or ContextWatch(None)
        self.observation: AgentObservation | None = None
        # The last context text and what it showed: the daemon sends a text only when it changed.
        self._shown: tuple[AgentObservation, str] | None = None
        self._workspace: tuple[str, WorkspaceId] | None = None  # the last folder asked about
        self.client: str | None = None  # "name/version", once the client has said it

    async def context(self, cwd: str) -> str:
        """The context text; records what it showed as this session's observation."""
        workspace = self._workspace_of(cwd)
        held = self._shown
        # Served as held only while it is also the observation: a commit of this session moves
        # that on, and its text is the daemon's to give.
        if held is not None and held[0] == self.observation and self._watch.unchanged(workspace):
            return held[1]
        ticket = self._watch.before_asking(workspace)
        known = None if held is None else held[0]
        answer = await self._call(self.api.agent_context(AgentContextParams(cwd=cwd, known=known)))
        if answer.text is None:
            assert held is not None and held[0] == answer.observed, "the daemon said unchanged"
            shown = held
        else:
            shown = (answer.observed, answer.text)
        self._shown = shown
        self.observation = answer.observed
        self._watch.answered(ticket, workspace)
        return shown[1]

    async def read(self, cwd: str, name: str) -> str:
        answer = await self._call(self.api.agent_record(AgentRecordParams(cwd=cwd, name=name)))
        if answer.record is None:
            raise Refusal(
                f"This project has no memory record named `{name}`; memory_context's index lists the names."
            )
        return render_record(answer.record)

    async def index(self, cwd: str) -> list[AgentIndexEntry]:
        return (await self._call(self.api.agent_index(WorkspaceParams(cwd=cwd)))).records

    async def history(self, cwd: str, limit: int) -> RecentChanges:
        """The newest `limit` entries of this workspace's and Global's history, newest first,
        and why either scope's history lacks changes, if it does."""
        answers = await self._call(self._logs(cwd, limit), otherwise=HISTORY_UNREADABLE)
        entries = [entry for answer in answers for entry in answer.entries]
        # A problem's words name paths: the user reads them in `memory log`.
        gaps = [answer.scope for answer in answers if answer.problem is not None]
        return RecentChanges(sorted(entries, key=lambda e: e.at, reverse=True)[:limit], gaps)

    async def _logs(self, cwd: str, limit: int) -> list[HistoryLogResult]:
        """This workspace's history and Global's: one `_call`, so one deadline for both."""
        return [await self._log(cwd, scope, limit) for scope in (cwd, None)]

    async def _log(self, cwd: str, scope: str | None, limit: int) -> HistoryLogResult:
        """One scope's history; invalid memory refused as memory_context refuses it."""
        try:
            return await self.api.memory_log(HistoryLogParams(cwd=scope, limit=limit, stat=True))
        except RpcError as exc:
            if exc.code != MEMORY_INVALID:
                raise
            log.warning("the memory history cannot be read: %s", exc.message)
            invalid = exc
        # The log's refusal is the user's (whole paths); the context's names each file and its fix
        # in the agent's terms: asked for, it gives that refusal.
        await self.api.agent_context(AgentContextParams(cwd=cwd, known=None))
        raise RpcError(HISTORY_REFUSED, invalid.message)  # valid by now: the history is to blame

    async def update(self, cwd: str, arguments: dict[str, Any]) -> AgentUpdateResult:
        """Commit against this session's observation and advance it; Refusal otherwise. The
        arguments are checked before the budget: a malformed call is told what is wrong, not
        to wait for a commit it could never make."""
        size = len(json.dumps(arguments, ensure_ascii=False).encode("utf-8"))
        if size > MAX_UPDATE_BYTES:
            raise Refusal(
                f"memory_update's arguments are {size // 1024} KiB; one call may send at most "
                f"{MAX_UPDATE_BYTES // 1024} KiB. Nothing was written: send fewer changes per call."
            )
        try:
            changes = UpdateArguments.model_validate(arguments).changes
        except ValidationError as exc:
            raise Refusal(argument_problems(UPDATE, exc)) from None
        if self.observation is None:
            raise Refusal(NOT_READ)
        wait = self.budget.wait()
        if wait:
            raise Refusal(self.budget.refusal(wait))
        identity = AgentIdentity(session=self.id, client=self.client)
        params = AgentUpdateParams(cwd=cwd, observed=self.observation, changes=changes, agent=identity)
        # Spent before the commit is sent, not after its answer: a call cancelled meanwhile may
        # still commit, and would otherwise never count (nor would concurrent calls, each seeing
        # the budget not yet spent). What is refused, and so wrote nothing, gets it back.
        self.budget.spend()
        try:
            result = await self._call(self.api.agent_update(params), changes)
        except Refusal as refused:
            if not refused.uncertain:  # it wrote nothing: the budget is for commits
                self.budget.give_back()
            raise
        if result.status != "committed":
            self.budget.give_back()
        if result.status == "stale":
            # The context held may be of memory no longer there (the home re-pointed or restored
            # under the server, which no watch sees): the memory_context asked for reads afresh.
            self._forget()
            raise Refusal(STALE.format(scope=_SCOPE_TITLES[result.scope]))
        field = "globalRevision" if result.scope == "global" else "workspaceRevision"
        self.observation = self.observation.model_copy(update={field: result.revision})
        return result

    def _forget(self) -> None:
        """Hold no context: the next memory_context asks the daemon."""
        self._shown = None
        self._watch.forget()

    def _workspace_of(self, cwd: str) -> WorkspaceId:
        if self._workspace is None or self._workspace[0] != cwd:
            self._workspace = (cwd, WorkspaceId.from_cwd(cwd))
        return self._workspace[1]

    async def _call(
        self, answer: Awaitable[T], changes: Sequence[AgentChange] = (), *, otherwise: str = NOT_DONE
    ) -> T:
        """`answer`, or the Refusal that tells the agent what to do; `otherwise` is what it is told
        of a refusal it cannot act on (logged, for the user). A tool call makes one `_call`,
        whatever it asks of memory inside it: the agent is answered within one `deadline`."""
        try:
            with anyio.fail_after(self.deadline):
                return await answer
        except TimeoutError:
            log.warning("memory did not answer within %g s; the call was let go of", self.deadline)
            raise Refusal(NO_ANSWER.format(seconds=self.deadline), uncertain=True) from None
        except DaemonUnavailable as exc:
            log.warning("the remem daemon is unavailable: %s", exc)
            raise Refusal(DAEMON_UNAVAILABLE, uncertain=True) from None
        except RpcError as exc:
            if exc.code == HOME_UNUSABLE:
                log.warning("%s", exc.message)
                lock = _lock_of(exc)
                raise Refusal(HOME_IN_THE_WAY if lock is None else _lock_in_the_way(lock)) from None
            if exc.code == UNWRITABLE:
                log.warning("%s", exc.message)
                raise Refusal(DISK_REFUSED) from None
            if exc.code == SCOPE_BUSY:
                log.warning("%s", exc.message)
                raise Refusal(SCOPE_HELD) from None
            if _names_a_file_on_disk(exc):
                # The file may have changed where no watch sees (through a hard link): the
                # context the agent is to reload says what the daemon found, not what is held.
                self._forget()
            said = _rpc_message(exc, changes, otherwise)
            raise Refusal(said, uncertain=said is otherwise) from None
        except HomeUnusable as exc:  # raised in this process (--no-daemon) as the daemon raises it
            log.warning("%s", exc)
            raise Refusal(HOME_IN_THE_WAY) from None
        except LockUnusable as exc:
            log.warning("%s", exc)
            raise Refusal(_lock_in_the_way(exc)) from None


def _names_a_file_on_disk(exc: RpcError) -> bool:
    """Whether `exc` refuses changes for a file already on disk (not for a change sent)."""
    if exc.code != INVALID_CHANGES or not isinstance(exc.data, dict):
        return False
    problems = exc.data.get("problems")
    return isinstance(problems, list) and any(
        isinstance(p, dict) and p.get("change") is None and p.get("file") for p in problems
    )


def _rpc_message(exc: RpcError, changes: Sequence[AgentChange], otherwise: str) -> str:
    """What the agent is told of a refusal; only the agent methods' own refusals, made for it, are
    passed on: any other message may carry the home's paths or a workspace key."""
    if exc.code == INVALID_CHANGES and isinstance(exc.data, dict):
        lines = [_problem_line(problem, changes) for problem in exc.data.get("problems", [])]
        return "The changes are invalid; nothing was written:\n" + "\n".join(lines)
    if exc.code == MEMORY_INVALID:  # only agent methods' reach here (see `history`), in agent terms
        return _invalid_memory(exc)
    log.warning("%s", exc.message)
    if exc.code == ANSWER_TOO_LARGE and isinstance(exc.data, dict):
        size, limit = exc.data.get("bytes"), exc.data.get("limit")
        if isinstance(size, int) and isinstance(limit, int):
            return TOO_LARGE.format(size=size // 1024, limit=limit // 1024)
    return otherwise


def _invalid_memory(exc: RpcError) -> str:
    """The daemon's refusal of invalid memory, its list rebuilt from the files and problems it
    carries with each on one line: a hand-made file's name (and a problem quoting it) may hold a
    line break, which would read as a line, a problem, of its own."""
    head = exc.message.split("\n", 1)[0]  # the daemon's sentence, which quotes no file
    files = exc.data["files"]
    return "\n".join(
        [head, *(f"- {one_line(f['file'])}: {one_line(p)}" for f in files for p in f["problems"])]
    )


def _lock_of(exc: RpcError) -> LockUnusable | None:
    """The lock file in the way that the daemon's HOME_UNUSABLE names in its data (protocol 28),
    refused by the file system when `refused` says so, as this process would have met it; None
    for anything else in the home."""
    data = exc.data
    if isinstance(data, dict) and isinstance(data.get("path"), str) and isinstance(data.get("reason"), str):
        path, reason = Path(data["path"]), data["reason"]
        # The reason already holds the OS's words and errno name: kept whole as the cause's.
        return (
            LockRefused(path, OSError(reason)) if data.get("refused") is True else LockUnusable(path, reason)
        )
    return None


def _lock_in_the_way(exc: LockUnusable) -> str:
    said = LOCK_REFUSED_BY_DISK if isinstance(exc, LockRefused) else LOCK_IN_THE_WAY
    return said.format(name=_lock_name(exc), reason=exc.reason)


def _lock_name(exc: LockUnusable) -> str:
    """The lock file as the agent is told of it: its name, unless that holds a workspace key."""
    name = exc.path.name
    stem = name.removesuffix(".lock").removeprefix("agent-").removeprefix("ws-")
    return "the lock file of this project's memory" if is_workspace_key(stem) else f"`{name}`"


def _problem_line(problem: dict[str, Any], changes: Sequence[AgentChange]) -> str:
    """One problem, naming the change it is about so the agent need not count its own array."""
    number = problem.get("change")
    where = ""
    if number is not None:
        where = f"changes[{number}]{_label(changes[number]) if number < len(changes) else ''}: "
    if problem.get("file"):
        where = f"{where}{problem['file']}: "
    return f"- {where}{problem['message']} [{problem['code']}]"


def _label(change: AgentChange) -> str:
    """The change a problem is about, its name as the agent sent it: on one line, cut short."""
    if isinstance(change, PutChange):
        return f" (put `{quoted(change.record.name)}`)"
    if isinstance(change, DeleteChange):
        return f" (delete `{quoted(change.name)}`)"
    return " (replace-global)"
