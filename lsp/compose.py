"""`create_server`, the one place the language server is composed: the services every feature
shares are built and injected into `RememServer`, then each declared feature registers itself
(`features.FEATURES`, in its order)."""

from __future__ import annotations

from remem.daemon.home import Home
from remem.daemon.memory.lint_cache import LintCache

from . import logs
from .daemon_link import DaemonLink
from .features import FEATURES
from .server import RememServer
from .stores import Stores


def create_server(home: Home, *, use_daemon: bool = True) -> RememServer:
    """`use_daemon=False` (`remem --no-daemon lsp`): no daemon is started or joined, and the
    features it serves say so (decision 0507)."""
    logs.quiet_refusals()
    server = RememServer(home, DaemonLink(home, use_daemon=use_daemon), LintCache(), Stores(home))
    for feature in FEATURES:
        feature.register(server)
    return server
