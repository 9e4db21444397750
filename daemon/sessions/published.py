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

from ..fsutil import atomic_rewrite
from ..home import Home
from ..safe_open import read_regular, refused
from .reader import file_revision


class PublishedLogs:
    def __init__(self, home: Home) -> None:
        self._home = home
        # Refused before a fork writes anything, not once its child is out (nor read through).
        self.folder = home.refuse_link(home.state / "published")

    def record(self, path: Path, revision: str | None = None) -> None:
        """Remember `path`'s `revision` (else its current one) as remem's own output. A child
        whose folder is gone (or swapped for a link) since it was published is not recorded:
        it only looks live for a while."""
        if revision is None:
            try:
                revision = file_revision(path)
            except OSError:
                return
        self._home.private_dir(self.folder)  # a link there is refused, never written through
        atomic_rewrite(self._record_path(path), revision.encode())

    def untouched(self, path: str, revision: str) -> bool:
        """Whether the log at `path` is still exactly as remem published it. The record is
        opened as `safe_open.open_regular` opens it: a FIFO put there would hold the listing (and
        a daemon thread) for good. A record that is no regular file is as good as lost."""
        expected = revision.encode()
        try:  # a longer record is another revision: no more of it is read
            return read_regular(self._record_path(Path(path)), len(expected)) == expected
        except FileNotFoundError:
            return False
        except OSError as exc:
            if not refused(exc):
                raise
            return False

    def _record_path(self, path: Path) -> Path:
        return self.folder / hashlib.sha256(str(path).encode()).hexdigest()[:32]
