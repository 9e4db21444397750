"""Drives the real Codex CLI (`codex exec`) against a `FakeResponses` in a temp folder.

Every run is headless and offline: ``CODEX_HOME`` is private to the test and its
``config.toml`` names the local fake as the only provider, with analytics, feedback, update
checks, telemetry export and the plugin catalogue (which would reach out) turned off, and no
retries (a scripted error is final). Rollouts go under ``CODEX_HOME/sessions/``.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
        """The first rollout of `session_id` (exactly one, under ``sessions/YYYY/MM/DD/``; a
        revert rotates the thread to more, named ``…-<id>_<rollout id>.jsonl``)."""
        found = list(self.sessions.glob(f"*/*/*/rollout-*-{session_id}.jsonl"))
        if len(found) != 1:
            raise AssertionError(f"expected one rollout of {session_id} under {self.sessions}, found {found}")
        return found[0]

    def app_server(
        self, *calls: tuple[str, dict[str, Any]], until: str | None = None
    ) -> list[dict[str, Any]]:
        """Call `codex app-server` over stdio: ``initialize``, ``initialized``, then each
        (method, params) in turn, waiting for its answer; then, given `until`, for that
        notification (``turn/completed``: a compaction's turn ran). Its answers, in order."""
        proc = subprocess.Popen(
            [str(self.executable), "app-server"],
            cwd=self.cwd,
            env=self.env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert proc.stdin is not None and proc.stdout is not None
        answers: list[dict[str, Any]] = []
        deadline = time.monotonic() + RUN_TIMEOUT

        def send(message: dict[str, Any]) -> None:
            assert proc.stdin is not None
            proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
            proc.stdin.flush()

        def answer(number: int) -> dict[str, Any]:
            while time.monotonic() < deadline and (line := proc.stdout.readline()):  # type: ignore[union-attr]
                message = json.loads(line)
                if message.get("id") == number and ("result" in message or "error" in message):
                    if "error" in message:
                        raise AssertionError(f"codex app-server refused call {number}: {message['error']}")
                    return dict(message["result"])
                if until is not None and message.get("method") == until:
                    heard.append(until)
            raise AssertionError(f"codex app-server gave no answer to call {number}")

        heard: list[str] = []
        try:
            send(
                {
                    "id": 0,
                    "method": "initialize",
                    "params": {"clientInfo": {"name": "remem-tests", "version": "1"}},
                }
            )
            answer(0)
            send({"method": "initialized"})
            for number, (method, params) in enumerate(calls, start=1):
                send({"id": number, "method": method, "params": params})
                answers.append(answer(number))
            while until is not None and not heard and time.monotonic() < deadline:
                line = proc.stdout.readline()
                if not line:
                    raise AssertionError(f"codex app-server ended before {until}")
                if json.loads(line).get("method") == until:
                    heard.append(until)
        finally:
            proc.stdin.close()
            try:
                proc.wait(RUN_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return answers

    def turn_ids(self, session_id: str) -> list[str]:
        """The turn ids of `session_id`'s turns, in the order its rollouts began them."""
        found = []
        for rollout in sorted(self.sessions.glob(f"*/*/*/rollout-*-{session_id}*.jsonl")):
            for line in rollout.read_text().splitlines():
                record = json.loads(line)
                if record["type"] == "event_msg" and record["payload"].get("type") == "task_started":
                    found.append(record["payload"]["turn_id"])
        return found

    def revert(self, session_id: str, before_turn: str) -> None:
        """Codex's rewind: ``thread/revert`` drops `before_turn` and every later turn."""
        self.app_server(
            ("thread/resume", {"threadId": session_id}),
            ("thread/revert", {"threadId": session_id, "beforeTurnId": before_turn}),
        )
