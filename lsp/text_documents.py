"""Open documents as the editor holds them: lines broken only where LSP breaks them.

pygls applies an incremental change at the lines of `str.splitlines`, which also breaks at
U+2028, U+2029, U+0085, form feeds and other separators; LSP, and remem's own positions, break
only at `\\r\\n`, `\\r` and `\\n`. A change after such a character landed elsewhere: the server's
text drifted from the editor's, its diagnostics went stale, and a quick fix that replaces the
document wrote the drifted text over the user's edit.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pygls.workspace import TextDocument, Workspace

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


class LspTextDocument(TextDocument):
    @property
    def lines(self) -> Sequence[str]:
        return tuple(_LINE.findall(self.source))


class LspWorkspace(Workspace):
    """pygls's workspace, its text documents `LspTextDocument`s."""

    @classmethod
    def like(cls, workspace: Workspace) -> LspWorkspace:
        """A workspace of the same root, folders and encoding (made at `initialize`, when no
        document is open yet)."""
        return cls(
            workspace.root_uri,
            workspace._sync_kind,  # noqa: SLF001 - pygls keeps the server's sync kind only there
            list(workspace.folders.values()),
            workspace.position_encoding,
        )

    def _create_text_document(
        self,
        doc_uri: str,
        source: str | None = None,
        version: int | None = None,
        language_id: str | None = None,
    ) -> TextDocument:
        return LspTextDocument(
            doc_uri, source=source, version=version, language_id=language_id,
            sync_kind=self._sync_kind, position_codec=self.position_codec,
        )  # fmt: skip
