"""The language server instance: what every feature shares, injected when it is built.

`RememServer` holds the home, the link to the daemon, the lint cache live validation re-judges
a folder with on each keystroke, the stores receipts and workspace projects are read through,
and the session revision of each transcript text it handed out (what a branch lens sends). It
knows no feature: `lsp/compose.py` builds it and registers them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer

from remem.daemon import __version__
from remem.daemon.home import Home
from remem.daemon.memory.lint_cache import LintCache

from .daemon_link import DaemonLink
from .protocol import RememProtocol
from .stores import Stores
from .text_documents import LspTextDocument
from .transcripts import ShownTranscripts

# What reading a body that is no JSON raises: not JSON, not UTF-8, nested past the recursion limit.
_UNREADABLE = (json.JSONDecodeError, UnicodeDecodeError, RecursionError)


class RememServer(LanguageServer):
    protocol: RememProtocol

    def __init__(self, home: Home, link: DaemonLink, lint_cache: LintCache, stores: Stores) -> None:
        super().__init__("remem", __version__, protocol_cls=RememProtocol)
        self.home = home
        self.link = link
        self.lint_cache = lint_cache
        self.stores = stores
        self.transcripts = ShownTranscripts()  # the revision each transcript text handed out was read at
        # Work a feature put off in a burst of opens or changes on disk (diagnostics judge it once):
        # done before any other message is handled, so what it answers follows every one of them.
        self.before_message: list[Callable[[], None]] = []
        # What a feature does when a document's copy is lost (a change to it dropped).
        self.on_lost: list[Callable[[LspTextDocument], None]] = []
        # What a feature stops when the editor asks the server to shut down (its timers).
        self.on_shutdown: list[Callable[[], None]] = []

    def report_server_error(self, error: Exception, source: Any) -> None:
        # pygls's read loop reports a body that is no JSON here, and pygls showed it as a
        # popup, "Error in server: Expecting value…"; the spec answers it ParseError.
        if source is JsonRpcException and isinstance(error, _UNREADABLE):
            self.protocol.refuse_unreadable(error)
            return
        super().report_server_error(error, source)

    def lose(self, document: LspTextDocument) -> None:
        """Take `document`'s copy as lost: a change the editor sent to it was dropped, so every
        feature takes it for closed until the editor sends its whole text again or reopens it."""
        if document.lost:
            return
        document.lost = True
        for react in self.on_lost:
            react(document)

    def refresh_lenses(self) -> None:
        """Ask the client to pull its code lenses again (when it supports being asked): a
        record's provenance, or a transcript's branches, may have changed."""
        workspace = self.client_capabilities.workspace
        if workspace is not None and workspace.code_lens is not None and workspace.code_lens.refresh_support:
            self.workspace_code_lens_refresh(None)
