"""Which project an MCP session works in: the one its client declares, or the server's own.

Precedence: `remem mcp --cwd DIR`; else the first `file://` root the client declares (MCP roots,
asked once, when memory is first touched); else the folder the server was started in. The
answer is pinned for the session's life, because its observation belongs to one workspace. A
tool call never names a folder. Clients of the 2025 handshake are asked with a `roots/list`
request; clients of the stateless 2026-07-28 protocol get an `InputRequiredResult` carrying the
same request, and their retry brings the answer.

The client's answer is read as raw JSON, leniently: the SDK's model of a root refuses the whole
list for one root that is not a `file://` URI (or whose `name` is not a string), and remem uses
the first root that names a local folder, passing over the others.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import unquote, urlparse

import anyio
import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from remem.daemon.os_names import is_utf8

log = logging.getLogger("remem.agents")
ROOTS_KEY = "roots"
# How long a 2025 client has to answer `roots/list`. A client answers it itself, without its user
# (unlike elicitation), in milliseconds; 5 s is ample for a busy harness on a loaded machine and
# still far inside the minute a harness gives a tool call. A client that declares roots and then
# never answers would otherwise hold every call forever (decision 0386).
ROOTS_TIMEOUT_SECONDS = 5.0
SHOWN_URI_CHARS = 200  # of a root's URI, in the server's log


@dataclass(frozen=True)
class _RootsAnswer:
    """What a 2026-07-28 client sent as its roots (`inputResponses.roots`), as raw JSON."""

    value: Any


# The roots answer of the request being served, taken out of its params before the SDK validates
# them (by `read_roots_answer`), for `SessionWorkspace.resolve`; None when the request has none.
_ROOTS_ANSWER: ContextVar[_RootsAnswer | None] = ContextVar("remem_roots_answer", default=None)


# Said when only the start folder could choose the workspace, and it was removed before the start.
START_FOLDER_GONE = (
    "remem cannot tell which project this is: the folder its MCP server was started in no longer "
    "exists, and the client names no folder (MCP roots). Ask the user to restart the agent in the "
    "project's folder, or to give the server `--cwd` with the project's folder."
)


class StartFolderGone(Exception):
    """The workspace would be the start folder, which was removed before the server started."""


START_FOLDER_NOT_UTF8 = (
    "remem cannot work in the folder its MCP server was started in: its name is not UTF-8, which "
    "memory and its requests are written in, and the client names no other folder (MCP roots). "
    "Ask the user to restart the agent in a project folder whose name is UTF-8, or to give the "
    "server `--cwd` with such a folder."
)


class SessionWorkspace:
    def __init__(self, start_dir: str | None, explicit: bool) -> None:
        """`start_dir` None: the server was started in a folder that no longer exists. One whose
        name is not UTF-8 cannot be worked in either (no request can carry it): roots may still
        choose the workspace, and if none does, each call says why."""
        self._no_start = START_FOLDER_GONE
        if start_dir is not None and not is_utf8(start_dir):
            log.warning("the folder this server was started in has a name that is not UTF-8")
            start_dir, self._no_start = None, START_FOLDER_NOT_UTF8
        self.start_dir = None if start_dir is None else os.path.abspath(start_dir)
        self._pinned: str | None = self.start_dir if explicit else None
        self._asking = asyncio.Lock()
        self._input_closed = False
        self._listing: anyio.CancelScope | None = None  # the wait for the client's roots, if one runs

    def input_closed(self) -> None:
        """The client closed its input: no answer to `roots/list` can come any more, so a wait for
        one ends now (it held the server's exit for `ROOTS_TIMEOUT_SECONDS`), and none begins."""
        self._input_closed = True
        if self._listing is not None:
            self._listing.cancel()

    @property
    def pinned(self) -> str | None:
        return self._pinned

    async def resolve(self, ctx: ServerRequestContext) -> str | types.InputRequiredResult:
        """The session's workspace folder, or the request for the client's roots that decides it."""
        if self._pinned is not None:
            return self._pinned
        capabilities = ctx.session.client_capabilities
        if capabilities is None or capabilities.roots is None:
            return self._pin(None)
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            answer = _ROOTS_ANSWER.get()
            if answer is None:
                return types.InputRequiredResult(input_requests={ROOTS_KEY: types.ListRootsRequest()})
            return self._pin(answer.value)
        async with self._asking:  # concurrent first calls ask once
            if self._pinned is not None:
                return self._pinned
            return self._pin(await self._listed_roots(ctx))

    async def _listed_roots(self, ctx: ServerRequestContext) -> Any:
        """The client's answer to `roots/list` (raw JSON); None when there is none: an error, no
        answer in time, or the client's input closed (before the request, or while it waited)."""
        if not self._input_closed:
            with anyio.CancelScope() as self._listing:
                try:
                    # Raw, not `send_request`: it validates the answer with the SDK's model of a
                    # root, refusing the whole list for one root it does not take (module doc).
                    answer: Any = await ctx.session._connection.send_raw_request(  # noqa: SLF001
                        types.ListRootsRequest().method, None, {"timeout": ROOTS_TIMEOUT_SECONDS}
                    )
                    return answer
                except MCPError as exc:  # an error, or no answer in time
                    log.warning(
                        "the client declares roots but did not list them (%s); using %s", exc, self._else
                    )
                    return None
                finally:
                    self._listing = None  # a scope left is never cancelled: nothing waits in it
        log.warning("the client closed its input before it listed its roots; using %s", self._else)
        return None

    @property
    def _else(self) -> str:
        """The folder used when the client's roots choose none, as the log names it."""
        return self.start_dir or "the start folder, which no longer exists"

    def _pin(self, roots: Any) -> str:
        """The workspace chosen (and kept) from the client's roots answer (raw JSON, None when
        there is none); StartFolderGone when only the start folder could be."""
        chosen = (self._first_local_root(roots) if roots is not None else None) or self.start_dir
        if chosen is None:
            raise StartFolderGone(self._no_start)  # not pinned: roots listed later may choose
        self._pinned = chosen
        return chosen

    def _first_local_root(self, answer: Any) -> str | None:
        listed = answer.get("roots") if isinstance(answer, Mapping) else None
        if not isinstance(listed, list):
            log.warning(
                "the client's answer to roots/list holds no list of roots; using %s",
                self.start_dir or "the start folder, which no longer exists",
            )
            return None
        chosen = first_local_root(listed)
        if chosen is None and listed:
            log.warning(
                "none of the client's %d root(s) is a local folder (a file:// URI); using %s",
                len(listed),
                self.start_dir or "the start folder, which no longer exists",
            )
        return chosen


async def read_roots_answer(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Middleware: takes a 2026-07-28 client's roots (`inputResponses.roots`) out of the request's
    params before the SDK validates them, for `SessionWorkspace.resolve` to read leniently; the
    SDK's model refuses the whole request for one root it does not take (the module's doc)."""
    params = ctx.params
    responses = None if params is None else params.get("inputResponses")
    if params is None or not isinstance(responses, Mapping) or ROOTS_KEY not in responses:
        return await call_next(ctx)
    others = {key: value for key, value in responses.items() if key != ROOTS_KEY}
    token = _ROOTS_ANSWER.set(_RootsAnswer(responses[ROOTS_KEY]))
    try:
        return await call_next(replace(ctx, params={**params, "inputResponses": others}))
    finally:
        _ROOTS_ANSWER.reset(token)


def first_local_root(roots: list[Any]) -> str | None:
    """The local folder of the first root (raw JSON) that names one; the others are passed over."""
    for root in roots:
        uri = root.get("uri") if isinstance(root, Mapping) else None
        if isinstance(uri, str) and (path := local_path(uri)) is not None:
            return path
    return None


def local_path(uri: str) -> str | None:
    """The absolute local folder a `file://` URI names, lexically normalised; None for others,
    and for one that names no folder that exists."""
    parsed = urlparse(uri)
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return None
    try:
        path = unquote(parsed.path, errors="strict")
        path.encode("utf-8")  # a lone surrogate, escaped in the JSON
    except UnicodeError:
        # Not UTF-8: no request to the daemon can carry it, and decoding it loosely would give
        # distinct folders one workspace (decision 0387).
        log.warning(
            "the client's root %r names a folder remem cannot work in (not UTF-8); skipped",
            uri[:SHOWN_URI_CHARS],
        )
        return None
    if not os.path.isabs(path) or "\0" in path:
        return None
    folder = os.path.abspath(path)
    if not os.path.isdir(folder):
        # A folder of the client's machine, or one since removed: memory started for it would be
        # read by no project, and new memory is started only in a folder that exists (decision
        # 0508, as `--cwd` and `memory apply` take none other).
        log.warning(
            "the client's root %r names no folder on this machine (nothing is there, or no folder); skipped",
            uri[:SHOWN_URI_CHARS],
        )
        return None
    return folder
