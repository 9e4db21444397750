"""The language server instance and what every feature shares: the home and the open documents.

Features live in their own modules and register their LSP methods on `server` when imported
(one registration point per method); `create_server` wires them up.
"""

from __future__ import annotations

from pygls.lsp.server import LanguageServer

from remem.daemon import __version__
from remem.daemon.home import Home


class RememServer(LanguageServer):
    def __init__(self, home: Home) -> None:
        super().__init__("remem", __version__)
        self.home = home


def create_server(home: Home) -> RememServer:
    from . import diagnostics

    server = RememServer(home)
    diagnostics.register(server)
    return server
