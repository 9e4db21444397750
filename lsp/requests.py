"""remem's custom requests for the extension: sessions, transcripts, memory, receipts, settings.

Each takes one JSON object, checked by its model before anything is asked of the daemon, and
answers with the daemon's result or a composition of its results (see docs/lsp.md for the
shapes). Receipt files are read only by a review id the daemon lists, inside REMEM_HOME.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import quote

from pydantic import Field
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from remem.daemon.consolidation.receipts import Receipt, ReceiptStore
from remem.daemon.server.protocol import TurnsResult, WatchStatus

from .overview import memory_overview
from .server import RememServer
from .wire import Cwd, Strict, parse

TRANSCRIPT_SCHEME = "remem-session"
_REVIEW_ID = r"^[0-9a-f]{64}$"  # a review id: never a path
_URI_SAFE = "-_.!~*'()"  # what encodeURIComponent leaves as it is
_PROMPT_CHARS = 80


class SessionId(Strict):
    id: str = Field(min_length=1)


class ReviewId(Strict):
    review: str = Field(pattern=_REVIEW_ID)


class Nothing(Strict):
    pass


def register(server: RememServer) -> None:
    @server.feature("remem/sessionTree")
    async def session_tree(ls: RememServer, params: Any) -> dict[str, Any]:
        workspace = parse(Cwd, params, "remem/sessionTree")
        tree = await ls.link.call("sessions/tree", workspace.model_dump())
        if tree["nodes"]:
            return await with_own_prompts(ls, tree)
        return {**tree, "searched": await searched_roots(ls), "settingsFile": str(ls.home.settings_file)}

    @server.feature("remem/sessionTurns")
    async def session_turns(ls: RememServer, params: Any) -> dict[str, Any]:
        session = parse(SessionId, params, "remem/sessionTurns")
        return await ls.link.call("sessions/turns", session.model_dump())

    @server.feature("remem/transcript")
    async def transcript(ls: RememServer, params: Any) -> dict[str, Any]:
        session = parse(SessionId, params, "remem/transcript")
        answer = await ls.link.call("sessions/transcript", session.model_dump())
        return {"uri": transcript_uri(session.id), "markdown": answer["markdown"]}

    @server.feature("remem/memoryOverview")
    async def overview(ls: RememServer, params: Any) -> dict[str, Any]:
        workspace = parse(Cwd, params, "remem/memoryOverview")
        return (await memory_overview(ls, workspace.cwd)).model_dump(by_alias=True)

    @server.feature("remem/receipt")
    async def receipt(ls: RememServer, params: Any) -> dict[str, Any]:
        return await read_receipt(ls, parse(ReviewId, params, "remem/receipt").review)

    @server.feature("remem/settings")
    async def settings(ls: RememServer, params: Any) -> dict[str, Any]:
        parse(Nothing, params, "remem/settings")
        route = await ls.link.call("consolidation/settings/read", {})
        return {**route, "settingsFile": str(ls.home.settings_file)}


async def with_own_prompts(ls: RememServer, tree: dict[str, Any]) -> dict[str, Any]:
    """Each fork with `ownPrompt`, the first line of its first prompt after the fork point (None
    until it has one): what tells sibling branches apart when their titles are the default."""
    forks = [node for node in tree["nodes"] if node["kind"] == "fork"]
    prompts = await asyncio.gather(*(_own_prompt(ls, node) for node in forks))
    for node, prompt in zip(forks, prompts, strict=True):
        node["ownPrompt"] = prompt
    return tree


async def _own_prompt(ls: RememServer, node: dict[str, Any]) -> str | None:
    try:
        turns = TurnsResult.model_validate(await ls.link.call("sessions/turns", {"id": node["id"]})).turns
    except JsonRpcException:
        return None  # unreadable now: the tree still shows it, by its title
    after = node["forkTurn"] or 0
    own = next((t.user for t in turns if t.turn > after and t.user.strip()), None)
    if own is None:
        return None
    line = own.strip().splitlines()[0].strip()
    return line if len(line) <= _PROMPT_CHARS else f"{line[: _PROMPT_CHARS - 1]}…"


async def searched_roots(ls: RememServer) -> list[dict[str, Any]]:
    """The session roots the daemon reads, each with whether it exists: where an empty tree looked."""
    try:
        watch = WatchStatus.model_validate((await ls.link.call("daemon/status", {}))["watch"])
    except JsonRpcException:
        return []  # no daemon: the tree's own answer already says so
    memory = str(ls.home.memory)
    found = [{"path": path, "exists": True} for path in watch.paths if path != memory]
    return found + [{"path": path, "exists": False} for path in watch.missing]


def transcript_uri(session: str) -> str:
    """`remem-session:/<encodeURIComponent(id)>.md`, the document the extension shows."""
    return f"{TRANSCRIPT_SCHEME}:/{quote(session, safe=_URI_SAFE)}.md"


async def read_receipt(ls: RememServer, review: str) -> dict[str, Any]:
    """A receipt the daemon knows, with its file's text exactly as written."""
    answer = await ls.link.call("consolidation/receipts", {"review": review})
    known = next(iter(answer["receipts"]), None)
    if known is None:
        raise JsonRpcInvalidParams(f"remem/receipt: no review {review}; the Memory view lists the receipts")
    receipt = Receipt.model_validate(known)
    path = ReceiptStore(ls.home).path(review)
    try:
        text = await asyncio.to_thread(path.read_text, encoding="utf-8")
    except OSError as exc:
        raise JsonRpcInvalidParams(f"remem/receipt: the receipt file {path} cannot be read ({exc})") from None
    return {
        "review": review,
        "status": receipt.status.value,
        "session": receipt.source.session,
        "path": str(path),
        "text": text,
    }
