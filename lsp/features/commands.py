"""remem's server commands (`remem.lsp.*`), each taking one JSON object checked by its model.

Their ids never clash with the extension's own (`remem.*`, never `remem.lsp.*`): VS Code
refuses a command id registered twice. Branching asks the user first (unless the caller says
it did) that only the conversation is copied, not files or other side effects.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from lsprotocol import types
from pydantic import Field, model_validator
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInvalidParams,
    JsonRpcMethodNotFound,
    JsonRpcRequestCancelled,
)

from remem.daemon.memory.identity import WorkspaceId, is_workspace_key
from remem.daemon.protocol.forks import SESSION_REVISION, ForkRequest
from remem.daemon.protocol.rpc import (
    SESSION_REFUSED,
    ArchiveParams,
    Empty,
    RenameParams,
    SelectModelParams,
    SessionParams,
    SetApiKeyParams,
    TurnRow,
    TurnsResult,
    WorkspaceParams,
)
from remem.daemon.protocol.sessions import ROLLED_BACK

from .. import ids
from ..consolidate import consolidate
from ..documents import home_files, home_path, workspace_cwd
from ..server import RememServer
from ..wire import AbsolutePath, Strict, only_argument

BRANCH, CANCEL = "Branch", "Cancel"


class ConsolidateArgs(Strict):
    session: str | None = Field(default=None, min_length=1)
    cwd: AbsolutePath | None = None
    announce: bool = True  # False: the caller shows the outcome the answer carries

    @model_validator(mode="after")
    def _one_target(self) -> ConsolidateArgs:
        if (self.session is None) == (self.cwd is None):
            raise ValueError("give either `session` (an id) or `cwd` (for its latest finished session)")
        return self


class ForkArgs(Strict):
    session: str = Field(min_length=1)
    turn: int = Field(ge=1)
    title: str | None = None
    confirmed: bool = False
    # The session's revision the turn was chosen from (a transcript's, a turns answer's): a session
    # changed since is refused `STALE_SOURCE`, never cut at a turn that now means another one.
    # The daemon's own shape of a revision: a malformed one is a wrong argument, refused before
    # anything is asked or read.
    expectedRevision: str | None = Field(default=None, pattern=SESSION_REVISION)


class SessionArg(Strict):
    session: str = Field(min_length=1)


class RenameArgs(SessionArg):
    title: str


class RegenerateArgs(Strict):
    uri: str | None = None
    cwd: AbsolutePath | None = None

    @model_validator(mode="after")
    def _one_target(self) -> RegenerateArgs:
        if (self.uri is None) == (self.cwd is None):
            raise ValueError("give either `uri` (a file of a workspace's memory folder) or `cwd`")
        return self


class SelectModelArgs(Strict):
    provider: str = Field(min_length=1)
    model: str = Field(min_length=1)


class SetApiKeyArgs(Strict):
    provider: str = Field(min_length=1)
    apiKey: str = Field(min_length=1, repr=False)


def register(server: RememServer) -> None:
    @server.command(ids.CONSOLIDATE)
    async def consolidate_command(ls: RememServer, *arguments: Any) -> dict[str, Any]:
        target = only_argument(arguments, ConsolidateArgs, ids.CONSOLIDATE)
        return await consolidate(ls, target.session, target.cwd, announce=target.announce)

    @server.command(ids.FORK)
    async def fork_command(ls: RememServer, *arguments: Any) -> dict[str, Any]:
        return await fork(ls, only_argument(arguments, ForkArgs, ids.FORK))

    @server.command(ids.RENAME)
    async def rename_command(ls: RememServer, *arguments: Any) -> dict[str, Any]:
        args = only_argument(arguments, RenameArgs, ids.RENAME)
        meta = await ls.link.api.rename_session(RenameParams(id=args.session, title=args.title))
        return meta.model_dump(mode="json")

    @server.command(ids.ARCHIVE)
    async def archive_command(ls: RememServer, *arguments: Any) -> dict[str, Any]:
        args = only_argument(arguments, SessionArg, ids.ARCHIVE)
        return await _archive(ls, args.session, archived=True)

    @server.command(ids.RESTORE)
    async def restore_command(ls: RememServer, *arguments: Any) -> dict[str, Any]:
        args = only_argument(arguments, SessionArg, ids.RESTORE)
        return await _archive(ls, args.session, archived=False)

    @server.command(ids.REGENERATE_INDEX)
    async def regenerate_command(ls: RememServer, *arguments: Any) -> dict[str, Any]:
        args = only_argument(arguments, RegenerateArgs, ids.REGENERATE_INDEX)
        cwd = args.cwd if args.cwd is not None else await _cwd_of_memory_file(ls, str(args.uri))
        return (await ls.link.api.regenerate_index(WorkspaceParams(cwd=cwd))).model_dump(mode="json")

    @server.command(ids.SELECT_MODEL)
    async def select_model_command(ls: RememServer, *arguments: Any) -> dict[str, Any]:
        args = only_argument(arguments, SelectModelArgs, ids.SELECT_MODEL)
        current = await ls.link.api.model_settings(Empty())
        change = SelectModelParams(
            provider=args.provider, model=args.model, expectedRevision=current.revision
        )
        chosen = await ls.link.api.select_model(change)
        return {**chosen.model_dump(mode="json"), **home_files(ls)}

    @server.command(ids.SET_API_KEY)
    async def set_api_key_command(ls: RememServer, *arguments: Any) -> dict[str, Any]:
        # The daemon writes credentials.yml (0600), where the CLI reads keys too (decision 0102).
        args = only_argument(arguments, SetApiKeyArgs, ids.SET_API_KEY)
        key = SetApiKeyParams(**args.model_dump())
        return (await ls.link.api.set_api_key(key)).model_dump(mode="json")


async def fork(ls: RememServer, args: ForkArgs) -> dict[str, Any]:
    """Branch after the end of turn `args.turn`: the new session's id (None when declined) and,
    for a Claude Code or Codex session, the shell command that resumes it in its harness (from
    its folder, with the variable that finds its home), or why none can (`note`)."""
    turns = await ls.link.api.session_turns(SessionParams(id=args.session))
    # The turn as the editor showed it, else as just read: the daemon refuses a fork from a
    # session changed since (`STALE_SOURCE`), so the cut is the turn the user chose (decision 0369).
    revision = args.expectedRevision or turns.revision
    row = _turn(args, turns, revision)
    # A turn that cannot be branched from (still running, ...) is refused by the daemon, saying
    # why (for the turn, or for a session changed since `revision`), so nothing is asked first.
    if row.forkable and not args.confirmed and not await _confirmed(ls, args):
        return {"id": None}
    request = ForkRequest(
        source=args.session,
        operationId=uuid.uuid4().hex,
        atSeq=row.fork_at,
        title=args.title,
        expectedRevision=revision,
    )  # a new id per branch the user asks for; a resend of this request reuses it
    result = await ls.link.api.fork_session(request)
    return {"id": result.child, "command": result.command, "note": result.note}


def _turn(args: ForkArgs, turns: TurnsResult, revision: str) -> TurnRow:
    """The row of the turn to branch after. A turn that is not there is refused here, as stale
    when the session changed since the turn was chosen; so is a rolled-back one of the session
    as it was chosen from, which the daemon would only call no fork point."""
    session, turn = args.session, args.turn
    rows = [t for t in turns.turns if t.turn == turn]
    row = rows[0] if rows else None
    if row is None and revision != turns.revision:
        raise JsonRpcException(
            f"session {session!r} changed since revision {revision} (now {turns.revision}): it has "
            f"no turn {turn} any more; re-read it and choose the turn again",
            SESSION_REFUSED,
            {"code": "STALE_SOURCE"},
        )  # as the daemon refuses a fork from a changed session
    if row is None:
        count = len(turns.turns)
        raise JsonRpcInvalidParams(f"{ids.FORK}: session {session} has no turn {turn} (it has {count})")
    if len(rows) > 1:  # a log that repeats a turn number: which turn is meant is unknown
        raise JsonRpcInvalidParams(
            f"{ids.FORK}: session {session} has {len(rows)} turns numbered {turn}, so which one to "
            f"branch after is unknown; branch at a turn's event with `remem sessions fork {session} "
            "--at <seq>` (`remem sessions turns` lists each turn's events)"
        )
    if row.status == ROLLED_BACK and revision == turns.revision:
        raise JsonRpcInvalidParams(
            f"{ids.FORK}: turn {turn} of {session} was rolled back (Codex dropped it from the "
            "conversation); branch from a completed turn"
        )
    return row


async def _archive(ls: RememServer, session: str, *, archived: bool) -> dict[str, Any]:
    meta = await ls.link.api.archive_session(ArchiveParams(id=session, archived=archived))
    return meta.model_dump(mode="json")


async def _confirmed(ls: RememServer, args: ForkArgs) -> bool:
    """Whether the user chose "Branch". A stop of the command while the question waits (its
    request cancelled — answered as cancelled, nothing was created —, or the server shutting
    down) ends the wait: an answer that comes later creates nothing. A client that cannot ask
    (it answers `window/showMessageRequest` MethodNotFound) gets the fork refused, saying how to
    confirm it instead."""
    request = ls.protocol.command_request()
    stop = request.stop if request is not None else asyncio.Event()
    question = types.ShowMessageRequestParams(
        type=types.MessageType.Warning,
        # The extension's confirmation in the same words (vscode-extension/src/flows.ts).
        message=(
            f"Branch the session after turn {args.turn}? Branching copies the conversation only: files in "
            "your workspace and external side effects (commands run, services called) are not rolled back."
        ),
        actions=[types.MessageActionItem(title=BRANCH), types.MessageActionItem(title=CANCEL)],
    )
    asking = None if stop.is_set() else asyncio.ensure_future(ls.window_show_message_request_async(question))
    if asking is not None:
        # An answer (or error) that comes after a stop is nobody's: never "never retrieved".
        asking.add_done_callback(lambda done: done.cancelled() or done.exception())
        stopped = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait({asking, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
    if asking is None or not asking.done():
        if request is not None and request.cancelled:
            raise JsonRpcRequestCancelled(
                f"{ids.FORK}: cancelled while asking to branch after turn {args.turn}; nothing was created"
            )
        return False  # stopped otherwise (the server shuts down): nothing was created
    try:
        choice = asking.result()
    except JsonRpcException as error:
        if error.code != JsonRpcMethodNotFound.CODE:
            raise
        raise JsonRpcInvalidParams(
            f"{ids.FORK}: branching asks the user to confirm first, and this client cannot ask "
            "(it does not handle window/showMessageRequest); confirm it yourself and send "
            "`confirmed: true`"
        ) from error
    return choice is not None and choice.title == BRANCH


async def _cwd_of_memory_file(ls: RememServer, uri: str) -> str:
    """The project folder whose memory folder holds the file at `uri` (however the home was
    reached: the quick fix on a MEMORY.md opened by the home's real path names that path)."""
    path = home_path(ls, uri)
    if path is None or path.parent.parent != ls.home.workspaces or not is_workspace_key(path.parent.name):
        raise JsonRpcInvalidParams(
            f"{ids.REGENERATE_INDEX}: {uri} is not a file of a workspace's memory folder"
        )
    cwd = await asyncio.to_thread(workspace_cwd, ls, path.parent.name)
    if not cwd or WorkspaceId.from_cwd(cwd).key != path.parent.name:
        raise JsonRpcInvalidParams(
            f"{ids.REGENERATE_INDEX}: {path.parent / 'workspace.json'} does not name this folder's project; "
            "run the command with `cwd` (the project folder) instead"
        )
    return cwd
