"""The language server instance and what every feature shares: the home and the open documents.

Features live in their own modules and register their LSP methods on `server` when imported
(one registration point per method); `create_server` wires them up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pygls.lsp.server import LanguageServer

from remem.daemon import __version__
from remem.daemon.home import Home
from remem.daemon.memory.lint_cache import LintCache

from .protocol import RememProtocol

if TYPE_CHECKING:
    from .daemon_link import DaemonLink


class RememServer(LanguageServer):
    protocol: RememProtocol
    link: DaemonLink  # set by `daemon_link.register`

    def __init__(self, home: Home) -> None:
        super().__init__("remem", __version__, protocol_cls=RememProtocol)
        self.home = home
        self.degraded: str | None = None  # why there is no daemon, when there is none
        self.lint_cache = LintCache()  # live validation re-judges a folder per keystroke


def create_server(home: Home) -> RememServer:
    from . import daemon_link, logs
    from .features import (
        code_actions,
        code_lens,
        commands,
        completion,
        diagnostics,
        hover,
        links,
        requests,
        symbols,
    )

    logs.quiet_refusals()
    server = RememServer(home)
    diagnostics.register(server)
    daemon_link.register(server)
    requests.register(server)
    commands.register(server)
    code_actions.register(server)
    code_lens.register(server)
    hover.register(server)
    links.register(server)
    completion.register(server)
    symbols.register(server)
    return server
