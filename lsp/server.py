"""The language server instance and what every feature shares: the home and the open documents.

Features live in their own modules and register their LSP methods on `server` when imported
(one registration point per method); `create_server` wires them up.
"""

from __future__ import annotations

from pygls.lsp.server import LanguageServer

from remem.daemon import __version__
from remem.daemon.client import AsyncDaemonClient
from remem.daemon.home import Home


class RememServer(LanguageServer):
    def __init__(self, home: Home) -> None:
        super().__init__("remem", __version__)
        self.home = home
        self.daemon: AsyncDaemonClient | None = None
        self.degraded: str | None = None  # why there is no daemon, when there is none


def create_server(home: Home) -> RememServer:
    from . import daemon_link, diagnostics

    server = RememServer(home)
    diagnostics.register(server)
    daemon_link.register(server)
    return server
