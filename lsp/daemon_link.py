"""The server's link to the daemon: opened once the editor is ready, notifications passed on.

Opening it starts the daemon if needed (an editor opening a workspace is what starts it). The
daemon's `memory/changed` re-validates the open documents of that scope, since a file changed
on disk can change a sibling's diagnostics, and reaches the editor as `remem/memoryChanged`;
`sessions/changed` reaches it as `remem/treeChanged`. Without a daemon the server keeps
validating (in its own process) and says once why the rest is unavailable.
"""

from __future__ import annotations

import logging
from typing import Any

from lsprotocol import types

from remem.daemon.client import AsyncDaemonClient, DaemonUnavailable

from .diagnostics import refresh_global, refresh_workspace
from .server import RememServer

log = logging.getLogger("remem.lsp")


def register(server: RememServer) -> None:
    @server.feature(types.INITIALIZED)
    async def initialized(ls: RememServer, params: types.InitializedParams) -> None:
        await connect(ls)

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: RememServer, params: None) -> None:
        if ls.daemon is not None:
            await ls.daemon.close()


async def connect(ls: RememServer) -> None:
    try:
        ls.daemon = await AsyncDaemonClient.open(ls.home, listener=lambda m, p: _heard(ls, m, p))
    except DaemonUnavailable as exc:
        ls.degraded = str(exc)
        log.warning("no daemon: %s", exc)
        message = (
            f"remem: the daemon is unavailable ({exc}). Validation still works; run `remem daemon start`."
        )
        ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=message))


def _heard(ls: RememServer, method: str, params: dict[str, Any]) -> None:
    if method == "memory/changed":
        if params.get("scope") == "global":
            refresh_global(ls)
        elif isinstance(params.get("workspace"), str):
            refresh_workspace(ls, ls.home.workspaces / params["workspace"])
        ls.protocol.notify("remem/memoryChanged", params)
    elif method == "sessions/changed":
        ls.protocol.notify("remem/treeChanged", params)
