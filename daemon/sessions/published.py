"""The revisions at which remem itself published session logs (fork children).

A log remem just wrote is not in use by anyone: its recent modification time says nothing
about a harness writing to it. Each publish records the child's revision here, keyed by its
path; a log still at exactly that revision is remem's untouched output, and once a harness
appends to it the revision moves on and the usual liveness rule applies again. Losing a
record (a crash between publish and record) only makes the child look live for a while.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from ..fsutil import atomic_write, ensure_private_dir
from ..home import Home
from .reader import file_revision


class PublishedLogs:
    def __init__(self, home: Home) -> None:
        self.folder = home.state / "published"

    def record(self, path: Path) -> None:
        """Remember `path`'s current revision as remem's own output."""
        ensure_private_dir(self.folder)
        atomic_write(self._record_path(path), file_revision(path).encode())

    def untouched(self, path: str, revision: str) -> bool:
        """Whether the log at `path` is still exactly as remem published it."""
        try:
            return self._record_path(Path(path)).read_bytes() == revision.encode()
        except FileNotFoundError:
            return False

    def _record_path(self, path: Path) -> Path:
        return self.folder / hashlib.sha256(str(path).encode()).hexdigest()[:32]
