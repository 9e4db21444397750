"""Which project an MCP session works in: the one its client declares, or the server's own.

Precedence: `remem mcp --cwd DIR`; else the first `file://` root the client declares (MCP roots,
asked once, when memory is first touched); else the folder the server was started in. The
answer is pinned for the session's life, because its observation belongs to one workspace. A
tool call never names a folder. Clients of the 2025 handshake are asked with a `roots/list`
request; clients of the stateless 2026-07-28 protocol get an `InputRequiredResult` carrying the
same request, and their retry brings the answer.
"""

from __future__ import annotations

import asyncio
import logging
import os
from urllib.parse import unquote, urlparse

import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

log = logging.getLogger("remem.agents")
ROOTS_KEY = "roots"
# How long a 2025 client has to answer `roots/list`. A client answers it itself, without its user
# (unlike elicitation), in milliseconds; 5 s is ample for a busy harness on a loaded machine and
# still far inside the minute a harness gives a tool call. A client that declares roots and then
# never answers would otherwise hold every call forever (decision 0386).
ROOTS_TIMEOUT_SECONDS = 5.0


# Said when only the start folder could choose the workspace, and it was removed before the start.
START_FOLDER_GONE = (
    "remem cannot tell which project this is: the folder its MCP server was started in no longer "
    "exists, and the client names no folder (MCP roots). Ask the user to restart the agent in the "
    "project's folder, or to give the server `--cwd` with the project's folder."
)


class StartFolderGone(Exception):
    """The workspace would be the start folder, which was removed before the server started."""


class SessionWorkspace:
    def __init__(self, start_dir: str | None, explicit: bool) -> None:
        """`start_dir` None: the server was started in a folder that no longer exists."""
        self.start_dir = None if start_dir is None else os.path.abspath(start_dir)
        self._pinned: str | None = self.start_dir if explicit else None
        self._asking = asyncio.Lock()

    @property
    def pinned(self) -> str | None:
        return self._pinned

    async def resolve(
        self, ctx: ServerRequestContext, answers: types.InputResponses | None
    ) -> str | types.InputRequiredResult:
        """The session's workspace folder, or the request for the client's roots that decides it."""
        if self._pinned is not None:
            return self._pinned
        capabilities = ctx.session.client_capabilities
        if capabilities is None or capabilities.roots is None:
            return self._pin(None)
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            answer = (answers or {}).get(ROOTS_KEY)
            if not isinstance(answer, types.ListRootsResult):
                return types.InputRequiredResult(input_requests={ROOTS_KEY: types.ListRootsRequest()})
            return self._pin(answer)
        async with self._asking:  # concurrent first calls ask once
            if self._pinned is not None:
                return self._pinned
            try:
                roots = await ctx.session.send_request(
                    types.ListRootsRequest(),
                    types.ListRootsResult,
                    request_read_timeout_seconds=ROOTS_TIMEOUT_SECONDS,
                )
            except (MCPError, ValidationError) as exc:  # an error, a bad answer, or none in time
                log.warning(
                    "the client declares roots but did not list them (%s); using %s",
                    exc,
                    self.start_dir or "the start folder, which no longer exists",
                )
                roots = None
            return self._pin(roots)

    def _pin(self, roots: types.ListRootsResult | None) -> str:
        """The workspace chosen (and kept); StartFolderGone when only the start folder could be."""
        chosen = (first_local_root(roots) if roots is not None else None) or self.start_dir
        if chosen is None:
            raise StartFolderGone(START_FOLDER_GONE)  # not pinned: roots listed later may choose
        self._pinned = chosen
        return chosen


def first_local_root(roots: types.ListRootsResult) -> str | None:
    return next((path for root in roots.roots if (path := local_path(str(root.uri))) is not None), None)


def local_path(uri: str) -> str | None:
    """The absolute local folder a `file://` URI names, lexically normalised; None for others."""
    parsed = urlparse(uri)
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return None
    try:
        path = unquote(parsed.path, errors="strict")
        path.encode("utf-8")  # a lone surrogate, escaped in the JSON
    except UnicodeError:
        # Not UTF-8: no request to the daemon can carry it, and decoding it loosely would give
        # distinct folders one workspace (decision 0387).
        log.warning("the client's root %r names a folder remem cannot work in (not UTF-8); skipped", uri)
        return None
    if not os.path.isabs(path) or "\0" in path:
        return None
    return os.path.abspath(path)
