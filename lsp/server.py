"""The language server instance: what every feature shares, injected when it is built.

`RememServer` holds the home, the link to the daemon, the lint cache live validation re-judges
a folder with on each keystroke, the stores receipts and workspace projects are read through,
and the session revision of each transcript text it handed out (what a branch lens sends). It
knows no feature: `lsp/compose.py` builds it and registers them.
"""

from __future__ import annotations

from pygls.lsp.server import LanguageServer

from remem.daemon import __version__
from remem.daemon.home import Home
from remem.daemon.memory.lint_cache import LintCache

from .daemon_link import DaemonLink
from .protocol import RememProtocol
from .stores import Stores
from .transcripts import ShownTranscripts


class RememServer(LanguageServer):
    protocol: RememProtocol

    def __init__(self, home: Home, link: DaemonLink, lint_cache: LintCache, stores: Stores) -> None:
        super().__init__("remem", __version__, protocol_cls=RememProtocol)
        self.home = home
        self.link = link
        self.lint_cache = lint_cache
        self.stores = stores
        self.transcripts = ShownTranscripts()  # the revision each transcript text handed out was read at

    def refresh_lenses(self) -> None:
        """Ask the client to pull its code lenses again (when it supports being asked): a
        record's provenance, or a transcript's branches, may have changed."""
        workspace = self.client_capabilities.workspace
        if workspace is not None and workspace.code_lens is not None and workspace.code_lens.refresh_support:
            self.workspace_code_lens_refresh(None)
