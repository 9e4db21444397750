"""The demo's Claude Code and Codex sessions (scripts/demo_harnesses.py) are ones their harness
takes as its own: remem's fork of each, after turn 1, is resumed by the real CLI against the fake
model, which is sent the seeded conversation through that turn and the child's prompt."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.forks.harness_service import HarnessForkRequest, HarnessForks
from remem.daemon.home import Home
from scripts.seed_demo import harness_home, seed_sessions

from .claude import ClaudeCode
from .codex import Codex
from .fake_anthropic import FakeAnthropic
from .fake_responses import FakeResponses, text

pytestmark = pytest.mark.slow


def fork_after_turn_1(home: Home, harness: str, folder: Path, session: str) -> Any:
    (path,) = folder.rglob(f"*{session}.jsonl")
    request = HarnessForkRequest(harness=harness, path=str(path), operationId="op-demo", afterTurn=1)
    return HarnessForks(home).fork(request)


def test_claude_code_resumes_a_fork_of_the_demos_claude_code_session(home: Home, tmp_path: Path) -> None:
    with FakeAnthropic() as fake:
        cc = ClaudeCode(tmp_path / "run", fake)
        seeded = seed_sessions(tmp_path / "dsh", str(cc.cwd))
        cc.config_dir = harness_home(tmp_path / "dsh", "claude-code")  # where the demo wrote it
        done = fork_after_turn_1(home, "claude-code", cc.projects, seeded.claude_code)
        fake.reply(text("child answer"))
        child = cc.run("child question", resume=done.child)
        sent = json.dumps(fake.requests[-1]["messages"])
    assert child.session_id == done.child and child.result["result"] == "child answer"
    assert "Add a test that the export streams" in sent and "6 passed in 1.3s" in sent  # turn 1
    assert "Name it after what it proves" not in sent  # turn 2, after the cut
    assert "child question" in sent


def test_codex_resumes_a_fork_of_the_demos_codex_session(home: Home, tmp_path: Path) -> None:
    with FakeResponses() as fake:
        cx = Codex(tmp_path / "run", fake)
        seeded = seed_sessions(tmp_path / "dsh", str(cx.cwd))
        demo_home = harness_home(tmp_path / "dsh", "codex")  # where the demo wrote it
        shutil.copy(cx.codex_home / "config.toml", demo_home / "config.toml")  # the fake model
        cx.codex_home = demo_home
        recorded_under_the_fake(cx.sessions, seeded.codex)
        done = fork_after_turn_1(home, "codex", cx.sessions, seeded.codex)
        fake.reply(text("child answer"))
        child = cx.exec("resume", done.child, "child question")
        sent = json.dumps(fake.requests[-1]["input"])
    assert child.session_id == done.child and child.rollout == Path(done.path)
    assert "Write the changelog entry" in sent and "a1b2c3d Stream CSV" in sent
    assert "child question" in sent


def recorded_under_the_fake(folder: Path, session: str) -> None:
    """The demo's thread recorded under this test's provider, `fake` (the fake model server),
    where the demo records `openai`, as a user's Codex would: Codex 0.169 resumes a thread only
    under the provider it recorded ("Cannot change this thread's model provider"). Its time is
    kept, so the thread stays as finished as the demo left it."""
    (path,) = folder.rglob(f"*{session}.jsonl")
    kept = path.stat()
    first, rest = path.read_bytes().split(b"\n", 1)
    meta = json.loads(first)
    assert meta["payload"]["model_provider"] == "openai", meta
    meta["payload"]["model_provider"] = "fake"
    path.write_bytes(json.dumps(meta).encode() + b"\n" + rest)
    os.utime(path, ns=(kept.st_atime_ns, kept.st_mtime_ns))
