"""A write of the home refused once a fork's child is in place (a full disk under `state/`) is
told as what it is: the child is published, remem could not record it, the folder that refused
is the home's; the retry with the same operation id, once there is room, answers that child.

The refusal is real: the home's folder is a tmpfs of its own (`tests/unwritable.full_disk`),
full (`state/published`) or with room for the prepared journal entry only (`state/forks`),
while the session root is on another disk.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from remem.daemon.forks.journal import ForkJournal
from remem.daemon.forks.service import ForkService
from remem.daemon.fsutil import is_temp_name
from remem.daemon.home import Home
from remem.daemon.protocol.forks import ForkRequest
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.errors import OperationError
from remem.daemon.sessions.paths import Encoding
from remem.daemon.sessions.reader import read_session
from tests.sessions.factory import SessionSpec, build_session, write_session
from tests.unwritable import fill, full_disk

CWD = "/home/dev/projects/demo"
ONE_PAGE = "4k"  # the prepared entry fits, the committed one's temp beside it does not


def logs(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def fork(home: Home, root: Path, source: str) -> tuple[bool, str]:
    catalog = SessionCatalog(home, [root], idle_seconds=120)
    result = ForkService(catalog).fork(ForkRequest(source=source, operationId="op-1"))
    return result.created, result.child


@pytest.mark.parametrize("refusing", ["published", "forks"])
def test_a_child_published_before_the_home_refused_is_said_published_and_the_retry_answers_it(
    home: Home, tmp_path: Path, refusing: str
) -> None:
    root = tmp_path / "root"
    parent = write_session(root, build_session(SessionSpec(seed=3, turns=2, cwd=CWD)), encoding=Encoding.RAW)
    source = read_session(parent).header.id
    home.ensure_layout()
    before = logs(root)
    folder = home.state / refusing
    with full_disk(folder, "64k" if refusing == "published" else ONE_PAGE):
        if refusing == "published":
            fill(folder)
        with pytest.raises(OperationError) as refused:
            fork(home, root, source)
        message = refused.value.message
        assert refused.value.code == "UNWRITABLE", message
        assert "is published" in message and "not published" not in message, message
        assert f"{folder} refused a write (No space left on device)" in message, message
        assert "retry with the same operation id" in message, message
        [child] = [path for path in logs(root) if path not in before]
        assert child in message, "the child is named as published, not as the folder that refused"
        assert [p for p in root.rglob("*") if is_temp_name(p.name)] == []
        published = logs(root)
        entry = ForkJournal(home).get("op-1")
        assert entry is not None and entry.status == "prepared", "the entry waits for the retry"
        # Room again: the filler goes, or the one-page disk grows.
        if refusing == "published":
            (folder / "filler").unlink()
        else:
            subprocess.run(["mount", "-o", "remount,size=64k", str(folder)], check=True)
        created, made = fork(home, root, source)
        assert created is False and made in child
        assert logs(root) == published, "the retry writes no other child"
        entry = ForkJournal(home).get("op-1")
        assert entry is not None and entry.status == "committed"
        assert fork(home, root, source) == (False, made)
