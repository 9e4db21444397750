"""Drives the real Codex CLI (`codex exec`) against a `FakeResponses` in a temp folder.

Every run is headless and offline: ``CODEX_HOME`` is private to the test and its
``config.toml`` names the local fake as the only provider, with analytics, feedback, update
checks, telemetry export and the plugin catalogue (which would reach out) turned off, and no
retries (a scripted error is final). Rollouts go under ``CODEX_HOME/sessions/``.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .fake_responses import FakeResponses
from .toolchain import RUN_TIMEOUT, base_env, bundled

_SESSION_ID = re.compile(r"^session id: ([0-9a-f-]{36})$", re.MULTILINE)

CONFIG = """\
model = "fake-model"
model_provider = "fake"
check_for_update_on_startup = false
approval_policy = "never"
sandbox_mode = "danger-full-access"

[analytics]
enabled = false

[feedback]
enabled = false

[features]
plugins = false

[otel]
exporter = "none"

[model_providers.fake]
name = "fake"
base_url = "{base_url}"
wire_api = "responses"
env_key = "FAKE_MODEL_KEY"
request_max_retries = 0
stream_max_retries = 0
"""


@dataclass(frozen=True)
class CodexRun:
    """One `codex exec` run: its session (thread) id, the rollout it wrote, and its output."""

    session_id: str
    rollout: Path
    stdout: str
    stderr: str
    returncode: int


class Codex:
    """The real Codex CLI in `root` (``CODEX_HOME``, home and working folder under it)."""

    def __init__(self, root: Path, fake: FakeResponses) -> None:
        self.executable = bundled("codex_cli_bin", "bin/codex")
        self.fake = fake
        root = root.resolve()
        self.codex_home = root / "codex-home"
        self.home = root / "home"
        self.cwd = root / "work"
        for folder in (self.codex_home, self.home, self.cwd):
            folder.mkdir(parents=True, exist_ok=True)
        (self.codex_home / "config.toml").write_text(CONFIG.format(base_url=fake.base_url))

    @property
    def sessions(self) -> Path:
        return self.codex_home / "sessions"

    def env(self) -> dict[str, str]:
        return {**base_env(self.home), "CODEX_HOME": str(self.codex_home), "FAKE_MODEL_KEY": "sk-fake"}

    def command(self, *args: str) -> list[str]:
        """`codex exec --skip-git-repo-check ARGS…`."""
        return [str(self.executable), "exec", "--skip-git-repo-check", *args]

    def exec(self, *args: str, check: bool = True) -> CodexRun:
        """Run `command(ARGS…)` (``resume ID PROMPT``, ``fork ID PROMPT``, a prompt) to its end."""
        done = subprocess.run(
            self.command(*args),
            cwd=self.cwd,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
        )
        output = done.stdout + done.stderr
        if check and done.returncode != 0:
            raise AssertionError(f"codex exited {done.returncode}: {output[-3000:]}")
        found = _SESSION_ID.search(output)
        if found is None:
            raise AssertionError(f"codex printed no session id: {output[-3000:]}")
        session_id = found.group(1)
        return CodexRun(session_id, self.rollout(session_id), done.stdout, done.stderr, done.returncode)

    def rollout(self, session_id: str) -> Path:
        """The rollout of `session_id` (exactly one, under ``sessions/YYYY/MM/DD/``)."""
        found = list(self.sessions.glob(f"*/*/*/rollout-*-{session_id}.jsonl"))
        if len(found) != 1:
            raise AssertionError(f"expected one rollout of {session_id} under {self.sessions}, found {found}")
        return found[0]
