"""A session whose file a live process holds open for writing is live, however quiet the file.

Codex keeps its rollout open for writing for the whole session: a turn still running a long
tool call leaves the file quiet for longer than `sessions.idle_seconds`, yet the harness will
write it again. Consolidation asks Linux's /proc (decision 0357) and refuses `LIVE`, naming the
pid, before anything is read or asked; once the process is gone the session is reviewed. A
process that only reads the file does not count. The listing's liveness is not asked: it stays
the file's recency.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.consolidation.runner import Consolidator, Refused
from remem.daemon.home import Home
from remem.daemon.protocol.consolidation import ConsolidationResult, Status
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.settings import SettingsStore
from tests.fake_openai import FakeOpenAI, tool_call
from tests.sessions import claude_lines as cl
from tests.sessions import codex_lines as cx
from tests.sessions.factory import SessionSpec, build_session, write_session
from tests.sessions.harness_roots import OLD, claude_project, write
from tests.sessions.holders import holding

from .conftest import configure, proposal

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc tells on Linux only")

TID = "019c0000-0000-7000-8000-0000000000d1"
READ_TID = "019c0000-0000-7000-8000-0000000000d2"

# Holds the file open in the given mode until its stdin closes; says so once it is open.


def mid_turn(tid: str) -> bytes:
    """A Codex rollout whose second turn is still running a tool: task_started, no task_complete."""
    return cx.rollout(
        cx.meta(tid, cwd=cl.CWD),
        *cx.turn("t1", "build it", "built"),
        cx.event("task_started", turn_id="t2"),
        cx.message("user", "run the long test suite"),
        cx.call("c1"),
    )


def _roots(home: Home, fake: FakeOpenAI, tmp_path: Path) -> dict[str, Path]:
    """A quiet session of each format (mtime long past), and a second Codex one; paths by name."""
    claude, codex, dsh = tmp_path / "claude", tmp_path / "codex", tmp_path / "dsh"
    transcript = write(
        claude_project(claude) / f"{cl.SID}.jsonl",
        cl.jsonl(cl.prompt("u1", None, "use tabs"), cl.say("a1", "u1", "ok")),
    )
    day = codex / "2026" / "05" / "01"
    rollout = write(day / f"rollout-2026-05-01T00-00-00-{TID}.jsonl", mid_turn(TID))
    other = write(day / f"rollout-2026-05-01T00-05-00-{READ_TID}.jsonl", mid_turn(READ_TID))
    draft = build_session(SessionSpec(seed=1, turns=2, cwd=cl.CWD))
    log = write_session(dsh, draft)
    os.utime(log, (OLD, OLD))
    configure(home, fake, dsh, (claude, "claude-code"), (codex, "codex"), timeout_seconds=20)
    return {"claude-code": transcript, "codex": rollout, "codex read": other, "dsh": log}


def _ids(home: Home) -> dict[Path, tuple[str, bool]]:
    """Each listed session's id and listing liveness, by path."""
    entries = SessionCatalog.configured(home, SettingsStore(home).read()[0]).entries()[0]
    return {e.path: (e.summary.id, e.summary.live) for e in entries}


def consolidate(home: Home, session_id: str) -> ConsolidationResult:
    return asyncio.run(Consolidator(home).consolidate(session_id, lambda phase, data: None))


@pytest.mark.parametrize("fmt", ["codex", "claude-code", "dsh"])
def test_a_quiet_session_a_process_holds_open_for_writing_is_refused_live_until_it_exits(
    home: Home, fake: FakeOpenAI, tmp_path: Path, fmt: str
) -> None:
    path = _roots(home, fake, tmp_path)[fmt]
    fake.reply(tool_call(proposal()))
    with holding(path, "a") as harness:
        assert path.stat().st_mtime == OLD, "quiet: changed long before sessions.idle_seconds"
        session, listed_live = _ids(home)[path]
        assert not listed_live, "the listing's liveness stays the file's recency (no /proc in its path)"
        with pytest.raises(Refused) as refused:
            consolidate(home, session)
        assert refused.value.code == "LIVE"
        assert f"a process (pid {harness.pid}) still has its file open" in refused.value.message
        assert fake.count == 0 and ReceiptStore(home).all() == [], "no model call, no receipt"
    assert consolidate(home, session).status is Status.NO_CHANGE, "reviewed once the process is gone"
    assert fake.count == 1


def test_a_process_that_only_reads_the_file_does_not_keep_it_live(
    home: Home, fake: FakeOpenAI, tmp_path: Path
) -> None:
    paths = _roots(home, fake, tmp_path)
    ids = _ids(home)
    fake.reply(tool_call(proposal()))
    with holding(paths["codex read"], "r") as reader, holding(paths["codex"], "a") as writer:
        assert consolidate(home, ids[paths["codex read"]][0]).status is Status.NO_CHANGE
        assert fake.count == 1
        with pytest.raises(Refused) as refused:  # the same check, on a file held for writing
            consolidate(home, ids[paths["codex"]][0])
        assert refused.value.code == "LIVE" and f"(pid {writer.pid})" in refused.value.message
        assert f"(pid {reader.pid})" not in refused.value.message and fake.count == 1
