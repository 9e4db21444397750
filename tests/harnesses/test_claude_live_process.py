"""A quiet session the real Claude Code CLI is still running is live (decision 0376).

`claude -p` asks the fake model, which never answers: the transcript then stays quiet past a
short `sessions.idle_seconds`, and Claude Code holds no file of it open. Its home's
`sessions/<pid>.json` names the session and the process: the listing shows the session live,
and consolidation refuses it `LIVE`, naming the pid. Once the process ends (its pid file removed
on a clean exit, left behind by a kill), the session is not live.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.consolidation.runner import Consolidator, Refused
from remem.daemon.home import Home
from tests.consolidation.conftest import KEY_ENV, configure
from tests.fake_openai import FakeOpenAI
from tests.waiting import wait_until

from .claude import ClaudeCode
from .fake_anthropic import FakeAnthropic, hang
from .toolchain import RUN_TIMEOUT

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="Linux /proc only"),
]
IDLE_SECONDS = 1


def _live(home: Home) -> dict[str, bool]:
    """`remem sessions list --json`: each session's liveness, by id."""
    out = CliRunner().invoke(cli, ["--home", str(home.root), "sessions", "list", "--json"]).stdout
    return {row["id"]: row["live"] for row in json.loads(out)["sessions"]}


def _quiet(path: Path) -> None:
    """Wait until `path` last changed longer than `sessions.idle_seconds` ago."""
    wait_until(
        lambda: time.time() - path.stat().st_mtime > IDLE_SECONDS + 0.5, what=f"{path.name} to go quiet"
    )


def _pid_file(cc: ClaudeCode, pid: int) -> dict[str, object] | None:
    try:
        record = json.loads((cc.config_dir / "sessions" / f"{pid}.json").read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and isinstance(record.get("sessionId"), str) else None


@pytest.mark.parametrize("ending", [signal.SIGTERM, signal.SIGKILL], ids=["exits", "killed"])
def test_a_quiet_session_claude_code_still_runs_is_live_and_refused_naming_its_pid(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ending: signal.Signals
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    with FakeAnthropic() as model, FakeOpenAI(api_key="sk-test") as reviewer:
        cc = ClaudeCode(tmp_path / "cc", model)
        configure(home, reviewer, tmp_path / "dsh", (cc.projects, "claude-code"))
        with home.settings_file.open("a") as settings:
            settings.write(f"  idle_seconds: {IDLE_SECONDS}\n")
        model.reply(hang())
        claude = subprocess.Popen(
            cc.command("take your time"),
            cwd=cc.cwd,
            env=cc.env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            wait_until(
                lambda: model.count >= 1 and _pid_file(cc, claude.pid) is not None, what="the model asked"
            )
            record = _pid_file(cc, claude.pid)
            assert record is not None and record["pid"] == claude.pid
            session = str(record["sessionId"])
            wait_until(lambda: any(cc.projects.glob(f"*/{session}.jsonl")), what="the transcript")
            transcript = cc.transcript(session)
            _quiet(transcript)
            assert claude.poll() is None, "Claude Code still waits for the model"
            assert _live(home)[session] is True
            with pytest.raises(Refused) as refused:
                asyncio.run(Consolidator(home).consolidate(session, lambda *_: None))
            assert refused.value.code == "LIVE"
            assert f"Claude Code (pid {claude.pid}) is still running this session" in refused.value.message
            assert reviewer.count == 0
            os.killpg(claude.pid, ending)
            claude.wait(timeout=RUN_TIMEOUT)
        finally:
            if claude.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(claude.pid, signal.SIGKILL)
                claude.wait(timeout=RUN_TIMEOUT)
    pid_file = cc.config_dir / "sessions" / f"{claude.pid}.json"
    assert pid_file.exists() == (ending == signal.SIGKILL), "removed on exit, left behind by a kill"
    _quiet(transcript)
    assert _live(home)[session] is False
