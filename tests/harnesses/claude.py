"""Drives the real Claude Code CLI (`claude -p`) against a `FakeAnthropic` in a temp folder.

Every run is headless and offline: the model is the local fake, telemetry and non-essential
traffic are off, and the config dir (``CLAUDE_CONFIG_DIR``, where transcripts go under
``projects/``) is private to the test.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from typing_extensions import Unpack

from .fake_anthropic import FakeAnthropic
from .toolchain import RUN_TIMEOUT, base_env, bundled


@dataclass(frozen=True)
class ClaudeRun:
    """One `claude -p` run: its session id, the transcript it wrote and its JSON result."""

    session_id: str
    transcript: Path
    result: dict[str, Any]


class Resuming(TypedDict, total=False):
    """What `ClaudeCode.command` takes besides the prompt, which `ClaudeCode.run` passes on."""

    resume: str | None
    fork: bool
    resume_at: str | None
    options: tuple[str, ...]


class ClaudeCode:
    """The real Claude Code CLI in `root` (config dir, home and working folder under it)."""

    def __init__(self, root: Path, fake: FakeAnthropic) -> None:
        self.executable = bundled("claude_agent_sdk", "_bundled/claude")
        self.fake = fake
        root = root.resolve()
        self.config_dir = root / "claude-config"
        self.home = root / "home"
        self.cwd = root / "work"
        for folder in (self.config_dir, self.home, self.cwd):
            folder.mkdir(parents=True, exist_ok=True)

    @property
    def projects(self) -> Path:
        return self.config_dir / "projects"

    def env(self) -> dict[str, str]:
        return {
            **base_env(self.home),
            "ANTHROPIC_BASE_URL": self.fake.base_url,
            "ANTHROPIC_API_KEY": "sk-ant-fake",
            "CLAUDE_CONFIG_DIR": str(self.config_dir),
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }

    def command(
        self,
        prompt: str,
        *,
        resume: str | None = None,
        fork: bool = False,
        resume_at: str | None = None,
        options: tuple[str, ...] = (),
    ) -> list[str]:
        """`claude -p PROMPT` (with ``--resume``, ``--fork-session``, ``--resume-session-at``
        and any further `options`)."""
        args = [str(self.executable), "-p", prompt, "--output-format", "json", "--allowedTools", "Read"]
        args += options
        if resume is not None:
            args += ["--resume", resume]
        if fork:
            args.append("--fork-session")
        if resume_at is not None:
            args += ["--resume-session-at", resume_at]
        return args

    def run(self, prompt: str, *, check: bool = True, **how: Unpack[Resuming]) -> ClaudeRun:
        """Run `command(prompt, **how)` to its end and read its JSON result."""
        args = self.command(prompt, **how)
        done = subprocess.run(
            args, cwd=self.cwd, env=self.env(), capture_output=True, text=True, timeout=RUN_TIMEOUT
        )
        if check and done.returncode != 0:
            raise AssertionError(
                f"claude exited {done.returncode}: {done.stderr[-2000:]}{done.stdout[-2000:]}"
            )
        result = json.loads(done.stdout)
        session_id = result["session_id"]
        return ClaudeRun(session_id=session_id, transcript=self.transcript(session_id), result=result)

    def transcript(self, session_id: str) -> Path:
        """The transcript of `session_id` (exactly one, in the working folder's project folder)."""
        found = list(self.projects.glob(f"*/{session_id}.jsonl"))
        if len(found) != 1:
            raise AssertionError(
                f"expected one transcript of {session_id} under {self.projects}, found {found}"
            )
        return found[0]
