"""A symbolic link at the folder an attempt writes its worker session into (its own, or its
project's) ends the attempt `internal-error` in its receipt, naming the link and what to do,
exit 1, and nothing is looked at, written or removed through it. It was refused HOME_UNUSABLE
(exit 2) after the receipt said the attempt `running`, so the receipt was left running and said
interrupted for good; a link whose target held a worker log was looked through, that log taken
for an attempt of the review and its crashed writer's temp deleted out of the home.

Run as the real `remem`, with and without its daemon, against the fake model server."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.consolidation.worker_log import worker_dir, worker_session_id
from remem.daemon.fsutil import temp_path_for
from remem.daemon.home import Home
from remem.daemon.protocol.consolidation import Status
from remem.daemon.sessions.paths import Encoding
from remem.daemon.sessions.writer import LOCK_NAME
from tests.daemon.helpers import remem
from tests.fake_openai import FakeOpenAI, status, tool_call

from .conftest import Source, proposal, put

pytestmark = pytest.mark.slow


def _crashed_writer(folder: Path) -> None:
    """A worker session's folder as a crashed writer left it: a log, its writer's lock, a temp."""
    folder.mkdir(parents=True)
    log = folder / Encoding.ZSTD.file_name
    for path in (log, folder / LOCK_NAME, temp_path_for(log)):
        path.write_bytes(b"not remem's to touch")


def _tree(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` and its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    ("level", "daemon"),
    [("session", False), ("project", False), ("session", True)],
    ids=["session-folder", "project-folder", "session-folder-daemon"],
)
def test_a_linked_worker_folder_ends_the_attempt_in_its_receipt_saying_why(
    home: Home, fake: FakeOpenAI, source: Source, tmp_path: Path, request: pytest.FixtureRequest,
    level: str, daemon: bool,
) -> None:  # fmt: skip
    if daemon:
        request.getfixturevalue("served")
    fake.reply(status(400, "bad request"))
    assert remem(home, "consolidate", source.id).returncode == 1  # provider-failed: attempt 1
    [failed] = ReceiptStore(home).all()
    folder = worker_dir(home, worker_session_id(failed.review, 2))
    link = folder if level == "session" else folder.parent
    target = tmp_path / "outside"
    if level == "project":  # the worker sessions made so far go with it, the link in their place
        shutil.move(link, target)
    _crashed_writer(target / folder.name if level == "project" else target)
    before = _tree(target)
    link.symlink_to(target, target_is_directory=True)

    refused = remem(home, "consolidate", source.id)

    assert refused.returncode == 1, refused.stdout + refused.stderr
    why = f"{link} is a symbolic link, and remem writes its worker sessions only inside its home"
    assert why in refused.stdout and "remove the link, then retry" in refused.stdout, refused.stdout
    receipts = remem(home, "receipts")
    assert "interrupted" not in receipts.stdout and why in receipts.stdout, receipts.stdout
    [receipt] = ReceiptStore(home).all()
    assert receipt.status is Status.INTERNAL_ERROR, receipt
    assert [(a.number, a.status) for a in receipt.attempts] == [
        (1, Status.PROVIDER_FAILED),
        (2, Status.INTERNAL_ERROR),
    ]
    assert receipt.attempts[1].endedAt and why in (receipt.attempts[1].error or "")
    assert _tree(target) == before  # nothing read back, written or removed through the link

    link.unlink()  # the fix it said; the retry goes on with the next attempt
    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence()))))
    retried = remem(home, "consolidate", source.id)
    assert retried.returncode == 0 and retried.stdout.startswith("committed, 1 change(s)"), retried
    assert fake.count == 2  # the linked attempt never asked the model


def _obstruct(folder: Path, obstacle: str, outside: Path) -> tuple[Path, Callable[[], None]]:
    """Put `obstacle` in the way of the worker session at `folder`: the path the refusal names,
    and how to take it away again."""
    if obstacle == "lock-link":  # the lock would be taken through it, out of the home
        folder.mkdir(parents=True)
        lock = folder / LOCK_NAME
        lock.symlink_to(outside)
        return lock, lock.unlink
    if obstacle == "fifo":
        os.mkfifo(folder)
        return folder, folder.unlink
    project = folder.parent if obstacle == "project-file" else folder
    moved = outside.with_name("moved")
    if project.exists():  # the worker sessions made so far, kept aside meanwhile
        shutil.move(project, moved)
    project.write_bytes(b"not a folder")

    def undo() -> None:
        project.unlink()
        if moved.exists():
            shutil.move(moved, project)

    return project, undo


@pytest.mark.parametrize(
    ("obstacle", "daemon"),
    [("lock-link", False), ("file", False), ("project-file", False), ("lock-link", True), ("fifo", True)],
)
def test_a_worker_folder_that_cannot_be_used_ends_the_attempt_in_its_receipt_saying_why(
    home: Home, fake: FakeOpenAI, source: Source, tmp_path: Path, request: pytest.FixtureRequest,
    obstacle: str, daemon: bool,
) -> None:  # fmt: skip
    """Whatever stops the worker session's start once the receipt says the attempt running (a
    link at its `writer.lock`, a file or a FIFO where its folder or its project's is made) ends
    the attempt there, naming the path, exit 1: it left the receipt running, said interrupted,
    and exit 2, or 4 as a bug of remem's."""
    if daemon:
        request.getfixturevalue("served")
    fake.reply(status(400, "bad request"))
    assert remem(home, "consolidate", source.id).returncode == 1  # provider-failed: attempt 1
    [failed] = ReceiptStore(home).all()
    outside = tmp_path / "outside"
    outside.write_bytes(b"not remem's")
    named, undo = _obstruct(worker_dir(home, worker_session_id(failed.review, 2)), obstacle, outside)

    refused = remem(home, "consolidate", source.id)

    assert refused.returncode == 1, refused.stdout + refused.stderr
    said = (
        f"the worker session could not be started: {named} cannot be used as a lock file"
        if obstacle == "lock-link"
        else f"the worker session could not be started at {named} (File exists); something other "
        "than a folder stands where remem makes one: move it away, then retry"
    )
    assert said in refused.stdout, refused.stdout
    receipts = remem(home, "receipts")
    assert "interrupted" not in receipts.stdout and str(named) in receipts.stdout, receipts.stdout
    [receipt] = ReceiptStore(home).all()
    assert [(a.number, a.status) for a in receipt.attempts] == [
        (1, Status.PROVIDER_FAILED),
        (2, Status.INTERNAL_ERROR),
    ]
    assert outside.read_bytes() == b"not remem's"

    undo()  # the retry goes on with the next attempt
    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence()))))
    retried = remem(home, "consolidate", source.id)
    assert retried.returncode == 0 and retried.stdout.startswith("committed, 1 change(s)"), retried
    assert fake.count == 2  # the refused attempt never asked the model
