"""A root's fingerprint (what tells the watcher's reaction a root changed) moves whenever a
log's revision does: a log rewritten in place at the same size with its mtime put back, or a
chmod, changes only its ctime, and that must be announced like any change."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from remem.daemon.sessions.harness_sources import source_fingerprint
from tests.waiting import wait_until


@pytest.mark.parametrize("change", ["rewrite", "chmod"])
def test_a_change_of_ctime_alone_changes_the_fingerprint(tmp_path: Path, change: str) -> None:
    root = tmp_path / "claude"
    log = root / "-w" / "s.jsonl"
    log.parent.mkdir(parents=True)
    log.write_text('{"a": 1}\n')
    before = log.stat()
    fingerprint = source_fingerprint(root)

    def changed() -> bool:
        """The change made again until the clock's tick (ctime is coarse) has moved on."""
        if change == "rewrite":
            log.write_text('{"a": 2}\n')
        else:
            log.chmod(0o600 if log.stat().st_mode & 0o077 else 0o644)
        os.utime(log, ns=(before.st_atime_ns, before.st_mtime_ns))
        return log.stat().st_ctime_ns != before.st_ctime_ns

    wait_until(changed, what="a ctime past the first one")
    after = log.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        before.st_size,
        before.st_mtime_ns,
        before.st_ino,
    )
    assert source_fingerprint(root) != fingerprint
