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


class SessionWorkspace:
    def __init__(self, start_dir: str, explicit: bool) -> None:
        self.start_dir = os.path.abspath(start_dir)
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
                roots = await ctx.session.send_request(types.ListRootsRequest(), types.ListRootsResult)
            except (MCPError, ValidationError) as exc:
                log.warning(
                    "the client declares roots but did not list them (%s); using %s", exc, self.start_dir
                )
                roots = None
            return self._pin(roots)

    def _pin(self, roots: types.ListRootsResult | None) -> str:
        chosen = first_local_root(roots) if roots is not None else None
        self._pinned = chosen or self.start_dir
        return self._pinned


def first_local_root(roots: types.ListRootsResult) -> str | None:
    return next((path for root in roots.roots if (path := local_path(str(root.uri))) is not None), None)


def local_path(uri: str) -> str | None:
    """The absolute local folder a `file://` URI names, lexically normalised; None for others."""
    parsed = urlparse(uri)
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return None
    path = unquote(parsed.path)
    if not os.path.isabs(path) or "\0" in path:
        return None
    return os.path.abspath(path)
