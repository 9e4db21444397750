"""remem's custom requests for the extension: sessions, transcripts, memory, its history,
receipts, settings.

Each takes one JSON object, checked by its model before anything is asked of the daemon, and
answers with the daemon's result or a composition of its results (see docs/lsp.md for the
shapes). A receipt and the memory overview are one daemon call each: the daemon reads REMEM_HOME.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import Field
from pygls.exceptions import JsonRpcException

from remem.daemon.protocol.memory import HistoryEntry
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
    WorkspaceParams,
)
from remem.daemon.protocol.sessions import FlatNode
from remem.daemon.sessions.sources import default_roots

from .. import ids
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


def register(server: RememServer) -> None:
    @server.feature(ids.SESSION_TREE)
    async def session_tree(ls: RememServer, params: Any) -> dict[str, Any]:
        workspace = parse(Cwd, params, ids.SESSION_TREE)
        tree = await ls.link.api.session_tree(WorkspaceParams(cwd=workspace.cwd))
        if tree.nodes:
            return await with_own_prompts(ls, tree)
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
        return {"uri": transcript_uri(request.id), "markdown": answer.markdown}

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
        answer = await ls.link.api.memory_log(HistoryLogParams(cwd=scope.cwd, limit=HISTORY_LIMIT, stat=True))
        if scope.record is not None:
            answer.entries = [e for e in answer.entries if _touches(e, scope.record)]
        return answer.model_dump(mode="json")

    @server.feature(ids.MEMORY_AT)
    async def memory_at(ls: RememServer, params: Any) -> dict[str, Any]:
        entry = parse(HistoryEntryId, params, ids.MEMORY_AT)
        answer = await ls.link.api.memory_show_at(HistoryEntryParams(entry=entry.entry))
        return answer.model_dump(mode="json")

    @server.feature(ids.REVERT_MEMORY)
    async def revert_memory(ls: RememServer, params: Any) -> dict[str, Any]:
        entry = parse(HistoryEntryId, params, ids.REVERT_MEMORY)
        answer = await ls.link.api.memory_revert(RevertParams(entry=entry.entry))
        return answer.model_dump(mode="json")

    @server.feature(ids.MODELS)
    async def models(ls: RememServer, params: Any) -> dict[str, Any]:
        provider = parse(Provider, params, ids.MODELS)
        return (await ls.link.api.models(ModelsParams(provider=provider.provider))).model_dump(mode="json")

    @server.feature(ids.SETTINGS)
    async def settings(ls: RememServer, params: Any) -> dict[str, Any]:
        parse(Nothing, params, ids.SETTINGS)
        route = await ls.link.api.model_settings(Empty())
        return {**route.model_dump(mode="json"), "settingsFile": str(ls.home.settings_file)}


async def with_own_prompts(ls: RememServer, tree: TreeResult) -> dict[str, Any]:
    """Each fork with `ownPrompt`, the first line of its first prompt after the fork point (None
    until it has one): what tells sibling branches apart when their titles are the default."""
    answer = tree.model_dump(mode="json")
    forks = [at for at, node in enumerate(tree.nodes) if node.kind == "fork"]
    prompts = await asyncio.gather(*(_own_prompt(ls, tree.nodes[at]) for at in forks))
    for at, prompt in zip(forks, prompts, strict=True):
        answer["nodes"][at]["ownPrompt"] = prompt
    return answer


async def _own_prompt(ls: RememServer, node: FlatNode) -> str | None:
    try:
        turns = (await ls.link.api.session_turns(SessionParams(id=node.id))).turns
    except JsonRpcException:
        return None  # unreadable now: the tree still shows it, by its title
    after = node.forkTurn or 0
    own = next((t.user for t in turns if t.turn > after and t.user.strip()), None)
    if own is None:
        return None
    line = own.strip().splitlines()[0].strip()
    return line if len(line) <= _PROMPT_CHARS else f"{line[: _PROMPT_CHARS - 1]}…"


async def searched_roots(ls: RememServer) -> list[dict[str, Any]]:
    """The session roots the daemon reads, each with whether it exists, and each harness's
    default folder, found or not: where an empty tree looked. A harness's default folder says
    whose it is (`harness`, its format)."""
    try:
        watch = (await ls.link.api.status(Empty())).watch
    except JsonRpcException:
        return []  # no daemon: the tree's own answer already says so
    memory = str(ls.home.memory)
    searched: list[dict[str, Any]] = [
        {"path": path, "exists": True} for path in watch.paths if path != memory
    ]
    searched += [{"path": path, "exists": False} for path in watch.missing]
    listed = {entry["path"]: entry for entry in searched}
    # The daemon reads a default folder only when it exists, so its status leaves the others
    # out; this server's environment is the one it starts the daemon with.
    for root in default_roots():
        entry = listed.get(str(root.path))
        if entry is None:
            searched.append({"path": str(root.path), "exists": root.path.is_dir(), "harness": root.format})
        else:
            entry["harness"] = root.format
    return searched


def _touches(entry: HistoryEntry, record: str) -> bool:
    stat = entry.stat
    return stat is not None and any(record in names for names in (stat.added, stat.changed, stat.removed))


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
