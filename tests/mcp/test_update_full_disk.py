"""`memory_update` on a full disk, through the daemon and `--no-daemon`: an audit write refused
before the commit, or a commit refused, is a refusal that changes nothing (`UNWRITABLE`, the
agent told so) and leaves no intent; a commit that landed is answered as committed even when
its audit entry is refused, and that entry is settled as committed once there is room.

The refusals are real: `memory/audit` is a tmpfs of its own (`tests/unwritable.full_disk`),
full, or with one page (room for the intent, none for the entry beside it); a commit is refused
by a file-size limit (`RLIMIT_FSIZE`) on the process that writes memory, below the text it
writes, as in tests/daemon/test_memory_full_disk.py.
"""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from remem.agents.session import DISK_REFUSED
from remem.daemon.agent_updates.audit import AuditStatus, AuditTrail
from remem.daemon.fsutil import is_temp_name
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from tests.unwritable import fill, full_disk

from .conftest import EMPTY, agent, put, server_env, text_of

pytestmark = pytest.mark.slow
MODES = ["daemon", "no-daemon"]
LIMIT = 4 * 1024  # above the daemon's own files and an intent, below LARGE
LARGE = "word " * 1500 + "\n"  # Global text over LIMIT


def options(mode: str) -> tuple[str, ...]:
    return ("--no-daemon",) if mode == "no-daemon" else ()


def audit_files(home: Home) -> list[str]:
    folder = home.memory / "audit"
    return sorted(p.name for p in folder.iterdir() if p.name != "filler" and p.name != "lost+found")


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", MODES)
async def test_an_audit_intent_the_disk_refuses_changes_nothing(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId, mode: str
) -> None:
    store.commit_workspace(workspace, EMPTY, [])
    before = store.read_workspace(workspace).revision
    audit = home.memory / "audit"
    with full_disk(audit, "64k"):
        fill(audit)
        async with agent(home, project, options=options(mode)) as session:
            await session.context()
            refused = await session.update(put("on-a-full-disk"))
            assert refused.is_error and text_of(refused) == DISK_REFUSED, text_of(refused)
            assert store.read_workspace(workspace).revision == before
            assert audit_files(home) == [], "no intent, no temp"
            (audit / "filler").unlink()
            retried = await session.update(put("on-a-full-disk"))
            assert not retried.is_error, text_of(retried)
        assert [e.status for e in AuditTrail(home).all()] == [AuditStatus.COMMITTED]
        assert [r.name for r in store.read_workspace(workspace).records] == ["on-a-full-disk"]


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", MODES)
async def test_a_commit_whose_audit_entry_the_disk_refuses_is_answered_committed(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId, mode: str
) -> None:
    store.commit_workspace(workspace, EMPTY, [])
    audit = home.memory / "audit"
    with full_disk(audit, "4k"):
        async with agent(home, project, options=options(mode)) as session:
            await session.context()
            landed = await session.update(put("landed"))
            assert not landed.is_error, text_of(landed)
            assert "may or may not" not in text_of(landed)
            assert [r.name for r in store.read_workspace(workspace).records] == ["landed"]
            [intent] = audit_files(home)
            assert intent.startswith(".intent-") and not is_temp_name(intent), (
                "settled later, as after a crash"
            )
            subprocess.run(["mount", "-o", "remount,size=64k", str(audit)], check=True)
            after = await session.update(put("after"))  # settles the first one's intent, then commits
            assert not after.is_error, text_of(after)
        first, second = AuditTrail(home).all()
        assert (first.status, second.status) == (AuditStatus.COMMITTED, AuditStatus.COMMITTED)
        assert first.revisions.after == first.revisions.planned
        assert not any(name.startswith(".intent-") for name in audit_files(home))


def limited_command(home: Home, mode: str) -> list[str] | None:
    """What runs the writer of memory under the limit: the server itself (`--no-daemon`), or a
    daemon started so (the server is not)."""
    if mode == "no-daemon":
        return ["prlimit", f"--fsize={LIMIT}", "--"]
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "daemon", "start"]
    started = subprocess.run(command, env=server_env(), capture_output=True, timeout=60, preexec_fn=_limit)
    assert started.returncode == 0, started.stderr
    return None


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))  # Python ignores SIGXFSZ: EFBIG


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", MODES)
async def test_a_refused_commit_whose_audit_entry_is_refused_too_changes_nothing(
    home: Home, store: MemoryStore, project: Path, mode: str
) -> None:
    before = store.read_global().revision
    audit = home.memory / "audit"
    with full_disk(audit, "4k"):
        command = limited_command(home, mode)
        async with agent(home, project, options=options(mode), command=command) as session:
            await session.context()
            refused = await session.update({"action": "replace-global", "content": LARGE})
            assert refused.is_error and text_of(refused) == DISK_REFUSED, text_of(refused)
            assert store.read_global().revision == before
            assert audit_files(home) == [], "the intent of a commit that wrote nothing goes"
