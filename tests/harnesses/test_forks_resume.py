"""remem's Claude Code and Codex forks, continued by the real harness.

For each harness a three-turn parent is forked after turn 2 and the child is resumed with the
real CLI against the fake model: the model must be sent exactly what the parent sent before
its own turn 3 (the inherited prefix, nothing after the cut), followed by the child's prompt,
and the parent's bytes never change. Claude Code's own reader (claude-agent-sdk) must read the
child too.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import signal
import struct
import subprocess
import termios
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.forks.harness_service import HarnessForkRequest, HarnessForks
from remem.daemon.home import Home

from .claude import ClaudeCode
from .codex import Codex
from .conftest import Scenario
from .fake_anthropic import FakeAnthropic, tool_uses
from .fake_responses import FakeResponses, function_calls, text
from .requests import same_conversation
from .toolchain import RUN_TIMEOUT

pytestmark = pytest.mark.slow


def fork_after_second_turn(home: Home, harness: str, parent: Path) -> Any:
    request = HarnessForkRequest(harness=harness, path=str(parent), operationId="op-resume", afterTurn=2)
    return HarnessForks(home).fork(request)


def test_claude_code_resumes_a_remem_fork_with_exactly_the_inherited_prefix(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeAnthropic() as fake:
        cc = ClaudeCode(tmp_path, fake)
        (cc.cwd / "notes.txt").write_text("alpha\n")
        read = ("Read", {"file_path": str(cc.cwd / "notes.txt")})
        fake.reply(tool_uses(read, read, text="reading"), text("first answer"))
        parent = cc.run("first question")
        fake.reply(text("second answer"))
        cc.run("second question", resume=parent.session_id)
        fake.reply(text("third answer"))
        cc.run("third question", resume=parent.session_id)
        before_third = fake.requests[-1]["messages"]
        parent_bytes = parent.transcript.read_bytes()

        done = fork_after_second_turn(home, "claude-code", parent.transcript)
        fake.reply(text("child answer"))
        child = cc.run("child question", resume=done.child)

        sent = fake.requests[-1]["messages"]
        assert child.session_id == done.child and child.result["result"] == "child answer"
        assert same_conversation(sent, before_third)
        assert (
            "child question" in str(sent[-1])
            and "third question" not in str(sent)
            and "third answer" not in str(sent)
        )
        assert parent.transcript.read_bytes() == parent_bytes

        import claude_agent_sdk

        monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(cc.config_dir))
        messages = claude_agent_sdk.get_session_messages(done.child, directory=str(cc.cwd))
        said = [str(m.message) for m in messages]
        assert any("first question" in s for s in said) and any("child answer" in s for s in said)
        assert not any("third question" in s for s in said)
        (info,) = [
            s for s in claude_agent_sdk.list_sessions(directory=str(cc.cwd)) if s.session_id == done.child
        ]
        assert info.summary == "first question (1)"


def test_codex_resumes_a_remem_fork_with_exactly_the_inherited_prefix(home: Home, tmp_path: Path) -> None:
    with FakeResponses() as fake:
        cx = Codex(tmp_path, fake)
        (cx.cwd / "notes.txt").write_text("alpha\n")
        fake.reply(function_calls(("exec_command", {"cmd": "cat notes.txt"})), text("first answer"))
        parent = cx.exec("first question")
        fake.reply(text("second answer"))
        cx.exec("resume", parent.session_id, "second question")
        fake.reply(text("third answer"))
        cx.exec("resume", parent.session_id, "third question")
        before_third = fake.requests[-1]["input"]
        parent_bytes = parent.rollout.read_bytes()

        done = fork_after_second_turn(home, "codex", parent.rollout)
        fake.reply(text("child answer"))
        child = cx.exec("resume", done.child, "child question")

        sent = fake.requests[-1]["input"]
        assert child.session_id == done.child and child.rollout == Path(done.path)
        assert same_conversation(sent, before_third)
        assert (
            "child question" in str(sent[-1])
            and "third question" not in str(sent)
            and "third answer" not in str(sent)
        )
        assert parent.rollout.read_bytes() == parent_bytes


def test_codex_resumes_a_remem_fork_of_its_own_paginated_fork(home: Home, tmp_path: Path) -> None:
    """`codex exec fork` writes a child that inherits its parent's history without copying it;
    a remem fork of that child must keep the inherited history."""
    with FakeResponses() as fake:
        cx = Codex(tmp_path, fake)
        fake.reply(text("root answer"))
        root = cx.exec("root question")
        fake.reply(text("fork answer"))
        middle = cx.exec("fork", root.session_id, "fork question")
        fake.reply(text("quokka answer"))
        cx.exec("resume", middle.session_id, "quokka question")

        request = HarnessForkRequest(
            harness="codex", path=str(middle.rollout), operationId="op-p", afterTurn=1
        )
        done = HarnessForks(home).fork(request)
        fake.reply(text("child answer"))
        cx.exec("resume", done.child, "child question")
        sent = str(fake.requests[-1]["input"])
        for inherited in ("root question", "root answer", "fork question", "fork answer", "child question"):
            assert inherited in sent, inherited
        assert "quokka" not in sent


def test_claude_code_resumes_a_remem_fork_made_after_a_compaction(
    home: Home, claude_compact_scenario: Scenario
) -> None:
    parent = claude_compact_scenario.runs["first"]
    parent_bytes = parent.transcript.read_bytes()
    request = HarnessForkRequest(
        harness="claude-code", path=str(parent.transcript), operationId="op-c", afterTurn=3
    )
    done = HarnessForks(home).fork(request)
    (before_third,) = claude_compact_scenario.requests["third"]
    with FakeAnthropic() as fake:
        cc = ClaudeCode(parent.transcript.parents[3], fake)  # the scenario's folders, a new fake
        fake.reply(text("child answer"))
        cc.run("child question", resume=done.child)
    sent = fake.requests[-1]["messages"]
    assert same_conversation(sent, before_third["messages"])
    assert "SUMMARY: two questions were answered" in str(sent) and "third question" not in str(sent)
    assert parent.transcript.read_bytes() == parent_bytes


def fork_with_the_cli(home: Home, root: Path, parent: str) -> dict[str, Any]:
    """`remem sessions fork PARENT --root ROOT --json`, after its second turn."""
    listed = ["--home", str(home.root), "sessions", "turns", parent, "--root", str(root), "--json"]
    at = json.loads(CliRunner().invoke(cli, listed).stdout)["turns"][1]["endSeq"]
    args = [
        "sessions",
        "fork",
        parent,
        "--op-id",
        "op-printed",
        "--at",
        str(at),
        "--root",
        str(root),
        "--json",
    ]
    done = CliRunner().invoke(cli, ["--home", str(home.root), *args])
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def in_a_shell(command: str, env: dict[str, str], name: str, executable: Path, elsewhere: Path) -> str:
    """Run `command` as a person pastes it: in a shell started in another folder, without the
    harness's home variables, the harness found on PATH by its own `name`; its output."""
    folder = elsewhere / "bin"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).symlink_to(executable)
    env = {key: value for key, value in env.items() if key not in ("CLAUDE_CONFIG_DIR", "CODEX_HOME")}
    env["PATH"] = f"{folder}{os.pathsep}{env['PATH']}"
    done = subprocess.run(
        ["sh", "-c", command], cwd=elsewhere, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout + done.stderr


def test_the_command_a_claude_code_fork_prints_resumes_it_from_any_shell(home: Home, tmp_path: Path) -> None:
    with FakeAnthropic() as fake:
        cc = ClaudeCode(tmp_path / "cc", fake)
        fake.reply(text("first answer"))
        parent = cc.run("first question")
        for prompt in ("second question", "third question"):
            fake.reply(text(prompt.replace("question", "answer")))
            cc.run(prompt, resume=parent.session_id)
        made = fork_with_the_cli(home, cc.config_dir, parent.session_id)
        # Its config folder is not ~/.claude, so the command names it.
        assert made["env"] == {"CLAUDE_CONFIG_DIR": str(cc.config_dir)} and made["cwd"] == str(cc.cwd)
        fake.reply(text("child answer"))
        pasted = f"{made['command']} -p 'child question' --output-format json"
        said = json.loads(in_a_shell(pasted, cc.env(), "claude", cc.executable, tmp_path / "elsewhere"))
    assert said["session_id"] == made["child"] and said["result"] == "child answer"
    sent = str(fake.requests[-1]["messages"])
    assert "second answer" in sent and "third question" not in sent


def in_a_terminal(command: str, env: dict[str, str], executable: Path, elsewhere: Path, done: Any) -> str:
    """Run `command` as a person pastes it into a terminal (a pseudo-terminal, a shell started in
    another folder, without CODEX_HOME, `codex` found on PATH) until `done()` or a timeout, then
    end it; its screen output. The cursor position the TUI asks for is answered, and a prompt to
    trust the folder is accepted, as a person would."""
    folder = elsewhere / "bin"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "codex").symlink_to(executable)
    env = {key: value for key, value in env.items() if key != "CODEX_HOME"}
    env.update(PATH=f"{folder}{os.pathsep}{env['PATH']}", TERM="xterm-256color")
    pid, terminal = pty.fork()
    if pid == 0:  # the child: a shell in the other folder, the terminal its standard streams
        os.chdir(elsewhere)
        os.execve("/bin/sh", ["sh", "-c", command], env)
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))  # else it draws nothing
    screen, trusted = b"", False
    deadline = time.monotonic() + RUN_TIMEOUT
    try:
        while time.monotonic() < deadline and not done():
            if select.select([terminal], [], [], 0.2)[0]:
                try:
                    chunk = os.read(terminal, 65536)
                except OSError:  # the shell ended
                    break
                screen += chunk
                if b"\x1b[6n" in chunk:
                    os.write(terminal, b"\x1b[1;1R")
                if not trusted and b"trust" in screen.lower():
                    trusted = True
                    os.write(terminal, b"\r")
    finally:
        os.killpg(pid, signal.SIGKILL)  # the shell and Codex: the terminal's session is theirs
        os.waitpid(pid, 0)
        os.close(terminal)
    return screen.decode(errors="replace")


def end_codex_daemons(codex_home: Path) -> None:
    """End the app server an interactive Codex starts and leaves running: its executable lies
    under its CODEX_HOME (`packages/app-server-daemon`)."""
    listed = subprocess.run(
        ["ps", "-ww", "-eo", "pid=,args="], capture_output=True, text=True, check=True
    ).stdout
    for line in listed.splitlines():
        pid, _, args = line.strip().partition(" ")
        if args.split(" ")[0].startswith(f"{codex_home}{os.sep}"):
            os.kill(int(pid), signal.SIGKILL)


@pytest.mark.parametrize("repository", [True, False], ids=["in-a-repository", "outside-any-repository"])
def test_the_command_a_codex_fork_prints_resumes_it_from_any_terminal(
    home: Home, tmp_path: Path, repository: bool
) -> None:
    """The printed command opens the child in Codex's interactive TUI, which takes the next
    prompt (here as its optional last argument, `codex resume [SESSION_ID] [PROMPT]`): the model
    is sent the inherited prefix, nothing after the cut (decision 0438). (`codex exec resume
    <child>`, printed before, continued nothing: without a prompt it exits, "No prompt provided".)"""
    with FakeResponses() as fake:
        cx = Codex(tmp_path / "cx", fake)
        if repository:
            subprocess.run(["git", "init", "-q", str(cx.cwd)], check=True)
            trusted(cx.codex_home, cx.cwd)
        fake.reply(text("first answer"))
        parent = cx.exec("first question")
        for prompt in ("second question", "third question"):
            fake.reply(text(prompt.replace("question", "answer")))
            cx.exec("resume", parent.session_id, prompt)
        made = fork_with_the_cli(home, cx.codex_home, parent.session_id)
        assert made["env"] == {"CODEX_HOME": str(cx.codex_home)} and made["cwd"] == str(cx.cwd)
        assert made["resume"] == ["codex", "resume", made["child"]]
        fake.reply(text("child answer"))
        asked = len(fake.requests)
        try:
            screen = in_a_terminal(
                f"{made['command']} 'child question'",
                cx.env(),
                cx.executable,
                tmp_path / "elsewhere",
                lambda: len(fake.requests) > asked,
            )
        finally:
            end_codex_daemons(cx.codex_home)
    assert len(fake.requests) > asked, screen[-3000:]
    sent = str(fake.requests[asked]["input"])
    assert "second answer" in sent and "third question" not in sent and "child question" in sent
    assert "child question" in cx.rollout(made["child"]).read_text()  # Codex went on in remem's child


def trusted(codex_home: Path, folder: Path) -> None:
    """`folder` trusted, as a user who once answered Codex's question has it in `config.toml`:
    Codex 0.169's TUI asks whether to trust a repository before it takes a prompt."""
    with (codex_home / "config.toml").open("a") as config:
        config.write(f'\n[projects."{folder}"]\ntrust_level = "trusted"\n')
