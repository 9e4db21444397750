"""remem's custom requests for the extension: sessions, transcripts, memory, its history,
receipts, settings.

Each takes one JSON object, checked by its model before anything is asked of the daemon, and
answers with the daemon's result or a composition of its results (see docs/lsp.md for the
shapes). A receipt and the memory overview are one daemon call each: the daemon reads REMEM_HOME.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from pydantic import Field
from pygls.exceptions import JsonRpcException

from remem.daemon.memory.record import GLOBAL_FILE
from remem.daemon.memory.revision import REVISION_PATTERN
from remem.daemon.protocol.memory import RECORD_SUFFIX
from remem.daemon.protocol.rpc import (
    Empty,
    HistoryEntryParams,
    HistoryLogParams,
    ModelsParams,
    RevertParams,
    ReviewParams,
    SessionParams,
    TranscriptParams,
    TreeResult,
    TurnRow,
    WorkspaceParams,
)
from remem.daemon.protocol.sessions import FlatNode
from remem.daemon.sessions.harness_homes import looked_in, roots_said

from .. import ids
from ..documents import home_files
from ..overview import memory_overview
from ..receipt_view import render
from ..server import RememServer
from ..transcripts import transcript_uri
from ..wire import AbsolutePath, Cwd, Strict, parse

_REVIEW_ID = r"^[0-9a-f]{64}$"  # a review id: never a path
_ENTRY_ID = r"^[0-9a-f]{7,40}$"  # a history entry id (a git commit id, or its first digits)
HISTORY_LIMIT = 100
_PROMPT_CHARS = 80


class SessionId(Strict):
    id: str = Field(min_length=1)


class ReviewId(Strict):
    review: str = Field(pattern=_REVIEW_ID)


class Nothing(Strict):
    pass


class Provider(Strict):
    provider: str = Field(min_length=1, max_length=200)


class HistoryScope(Strict):
    """A workspace (`cwd`), or Global memory (no `cwd`); `record` keeps the entries touching it."""

    cwd: AbsolutePath | None = None
    record: str | None = Field(default=None, min_length=1, max_length=200)


class HistoryEntryId(Strict):
    entry: str = Field(pattern=_ENTRY_ID)


class RevertArgs(HistoryEntryId):
    # The scope's revision the user decided on (the history they were shown): a change made while
    # they decided makes the revert a conflict, not a change undone unseen.
    expectedRevision: str | None = Field(default=None, pattern=f"^{REVISION_PATTERN}$")
    before: bool = False  # undo the entry: the state before it (a scope's first has no parent)


def register(server: RememServer) -> None:
    @server.feature(ids.SESSION_TREE)
    async def session_tree(ls: RememServer, params: Any) -> dict[str, Any]:
        workspace = parse(Cwd, params, ids.SESSION_TREE)
        tree = await ls.link.api.session_tree(WorkspaceParams(cwd=workspace.cwd))
        if tree.nodes:
            answer = await with_own_prompts(ls, tree)
            # The daemon drew the tree on its last valid settings: the view says why, and links the file.
            return {**answer, "settingsFile": str(ls.home.settings_file)} if tree.settingsProblems else answer
        searched = await searched_roots(ls)
        return {
            **tree.model_dump(mode="json"),
            "searched": searched,
            "settingsFile": str(ls.home.settings_file),
        }

    @server.feature(ids.SESSION_TURNS)
    async def session_turns(ls: RememServer, params: Any) -> dict[str, Any]:
        session = parse(SessionId, params, ids.SESSION_TURNS)
        return (await ls.link.api.session_turns(SessionParams(id=session.id))).model_dump(mode="json")

    @server.feature(ids.TRANSCRIPT)
    async def transcript(ls: RememServer, params: Any) -> dict[str, Any]:
        request = parse(TranscriptParams, params, ids.TRANSCRIPT)
        answer = await ls.link.api.session_transcript(request)
        # Its branch lenses are checked against the revision this text was read at. A text that
        # is news may already be open (read again after a change it does not show, or before
        # this server started), and the editor sends no change for a text that stays the same.
        if ls.transcripts.record(request.id, answer.markdown, answer.revision):
            ls.refresh_lenses()
        return {"uri": transcript_uri(request.id), "markdown": answer.markdown, "revision": answer.revision}

    @server.feature(ids.MEMORY_OVERVIEW)
    async def overview(ls: RememServer, params: Any) -> dict[str, Any]:
        workspace = parse(Cwd, params, ids.MEMORY_OVERVIEW)
        return (await memory_overview(ls, workspace.cwd)).model_dump(by_alias=True)

    @server.feature(ids.RECEIPT)
    async def receipt(ls: RememServer, params: Any) -> dict[str, Any]:
        return await read_receipt(ls, parse(ReviewId, params, ids.RECEIPT).review)

    @server.feature(ids.MEMORY_HISTORY)
    async def memory_history(ls: RememServer, params: Any) -> dict[str, Any]:
        scope = parse(HistoryScope, params, ids.MEMORY_HISTORY)
        # A record's entries may all lie past its workspace's newest HISTORY_LIMIT: the daemon
        # keeps those that changed its file from the whole log, then limits.
        file = None if scope.record is None else _file_of(scope.record)
        log = HistoryLogParams(cwd=scope.cwd, limit=HISTORY_LIMIT, stat=True, file=file)
        return (await ls.link.api.memory_log(log)).model_dump(mode="json")

    @server.feature(ids.MEMORY_AT)
    async def memory_at(ls: RememServer, params: Any) -> dict[str, Any]:
        entry = parse(HistoryEntryId, params, ids.MEMORY_AT)
        answer = await ls.link.api.memory_show_at(HistoryEntryParams(entry=entry.entry))
        return answer.model_dump(mode="json")

    @server.feature(ids.REVERT_MEMORY)
    async def revert_memory(ls: RememServer, params: Any) -> dict[str, Any]:
        asked = parse(RevertArgs, params, ids.REVERT_MEMORY)
        revert = RevertParams(entry=asked.entry, expectedRevision=asked.expectedRevision, before=asked.before)
        answer = await ls.link.api.memory_revert(revert)
        return answer.model_dump(mode="json")

    @server.feature(ids.MODELS)
    async def models(ls: RememServer, params: Any) -> dict[str, Any]:
        provider = parse(Provider, params, ids.MODELS)
        return (await ls.link.api.models(ModelsParams(provider=provider.provider))).model_dump(mode="json")

    @server.feature(ids.SETTINGS)
    async def settings(ls: RememServer, params: Any) -> dict[str, Any]:
        parse(Nothing, params, ids.SETTINGS)
        route = await ls.link.api.model_settings(Empty())
        return {**route.model_dump(mode="json"), **home_files(ls)}


async def with_own_prompts(ls: RememServer, tree: TreeResult) -> dict[str, Any]:
    """Each fork with `ownPrompt`, the first line of its first prompt after the fork point (None
    until it has one, or when where its own turns begin cannot be told): what tells sibling
    branches apart when their titles are the default."""
    answer = tree.model_dump(mode="json")
    forks = [at for at, node in enumerate(tree.nodes) if node.kind == "fork"]
    # A Claude Code session's abandoned branches (rewinds, edits), by where they leave it: a
    # copy made before the rewind holds the branch's turns as its parent's.
    abandoned = {(n.parent, n.forkTurn): _first_line(n.title) for n in tree.nodes if n.kind == "branch"}
    turns = _TurnsOnce(ls)  # a parent of several forks is read once
    prompts = await asyncio.gather(*(_own_prompt(turns, tree.nodes[at], abandoned) for at in forks))
    for at, prompt in zip(forks, prompts, strict=True):
        answer["nodes"][at]["ownPrompt"] = prompt
    return answer


class _TurnsOnce:
    """Each session's turns, asked of the daemon once per tree; None when it cannot read them."""

    def __init__(self, ls: RememServer) -> None:
        self._ls = ls
        self._asked: dict[str, asyncio.Task[list[TurnRow] | None]] = {}

    def __call__(self, session: str) -> asyncio.Task[list[TurnRow] | None]:
        if session not in self._asked:
            self._asked[session] = asyncio.ensure_future(self._read(session))
        return self._asked[session]

    async def _read(self, session: str) -> list[TurnRow] | None:
        try:
            return (await self._ls.link.api.session_turns(SessionParams(id=session))).turns
        except JsonRpcException:
            return None


async def _own_prompt(
    turns_of: _TurnsOnce, node: FlatNode, abandoned: dict[tuple[str | None, int | None], str]
) -> str | None:
    turns = await turns_of(node.id)
    if turns is None:
        return None  # unreadable now: the tree still shows it, by its title
    parent = await turns_of(node.parent) if node.parent is not None else None
    inherited = _inherited(turns, parent, node.forkTurn)
    # Where a copy leaves its parent's conversation, the parent may have been rewound after the
    # copy was made: its next turn is then the abandoned branch's, and how many more are is not
    # known, so neither is its own first prompt.
    left = turns[inherited].user if node.forkTurn is None and inherited < len(turns) else None
    if left is not None and abandoned.get((node.parent, inherited)) == _first_line(left):
        return None
    own = next((t.user for t in turns[inherited:] if t.user.strip()), None)
    if own is None:
        return None
    line = _first_line(own)
    return line if len(line) <= _PROMPT_CHARS else f"{line[: _PROMPT_CHARS - 1]}…"


def _first_line(text: str | None) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0].strip() if lines else ""


def _inherited(turns: list[TurnRow], parent: list[TurnRow] | None, fork_turn: int | None) -> int:
    """How many of a fork's first turns are its parent's, by what the turns say, not by their
    numbers (decision 0369). A fork that copied its parent's turns holds them first, as the
    parent has them: then the fork point (`fork_turn`) counts them, or, when the tree does not
    know it (a `--fork-session` copy sharing no whole turn with its parent, decision 0517), the
    turns it shares with its parent do. A
    fork that inherits them by reference (Codex's own fork) holds only its own turns, from 1,
    though its fork point is after its parent's turn N. Without the parent's turns the fork
    point is all there is to count by."""
    if parent is None:
        return fork_turn if fork_turn is not None else len(turns)
    shared = 0
    for mine, theirs in zip(turns, parent, strict=False):
        if mine.user != theirs.user:
            break
        shared += 1
    if fork_turn is None:
        return shared
    return fork_turn if shared >= fork_turn else 0


async def searched_roots(ls: RememServer) -> list[dict[str, Any]]:
    """The session roots the daemon reads, each with whether it exists, and each harness's
    default folder, found or not: where an empty tree looked. A harness's default folder says
    whose it is (`harness`, its format)."""
    try:
        watch = (await ls.link.api.status(Empty())).watch
    except JsonRpcException:
        return []  # no daemon: the tree's own answer already says so
    memory = str(ls.home.memory)
    # The daemon reads a default folder only when it exists, so its status leaves the others
    # out; `looked_in` adds them from the daemon's environment, which it said in hello.
    roots = [Path(path) for path in [*watch.paths, *watch.missing] if path != memory]
    defaults = roots_said(ls.link.client.hello.harness_roots)
    return [folder.to_json() for folder in looked_in(roots, defaults)]


def _file_of(record: str) -> str:
    """The file of a record (by its name), or of Global memory (`GLOBAL.md`, by its own)."""
    return record if record == GLOBAL_FILE else f"{record}{RECORD_SUFFIX}"


async def read_receipt(ls: RememServer, review: str) -> dict[str, Any]:
    """A receipt the daemon knows: its file's text exactly as written, and as a person reads it."""
    view = await ls.link.api.receipt(ReviewParams(review=review))
    receipt = view.receipt
    return {
        "review": review,
        "status": receipt.status.value,
        "session": receipt.source.session,
        "title": view.title,
        "path": view.path,
        "text": view.text,
        "summary": render(ls.home, view),
    }
