"""`bash scripts/demo --no-setup --no-editor`, run once, whole, as a newcomer runs it: it runs
clean and stops what it started, and its CLI walkthrough shows consolidation through the scripted
demo model, the sessions of all three harnesses, a Claude Code fork with the command that resumes
it, memory's history and its undo, and the MCP wiring, each as remem really did it."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

import pytest

from remem.agents.wiring import claude_code_command, codex_config
from remem.daemon.cli.backend import NO_DAEMON_ENV

REPO = Path(__file__).resolve().parents[2]
REMEM = REPO / ".venv" / "bin" / "remem"
_STYLE = re.compile(r"\x1b\[[0-9;]*m")
# Two dozen CLI processes, one after another: over 280 s on two cores at load 30 (three busy loops
# beside other work), more than the suite's 300 s per test. A bound on a hang, never a speed figure.
DEMO_TIMEOUT_S = 600
pytestmark = pytest.mark.timeout(DEMO_TIMEOUT_S)  # the first test runs the demo


@dataclass(frozen=True)
class Walkthrough:
    demo: Path
    output: str
    steps: list[tuple[str, str]]  # each `$ command` the demo ran, and what it printed

    def said(self, command: str) -> list[str]:
        """What each step `remem COMMAND...` printed, in order."""
        found = [said for ran, said in self.ran(command)]
        assert found, f"the demo ran no `remem {command}`"
        return found

    def ran(self, command: str) -> list[tuple[str, str]]:
        """Each step `remem COMMAND...`: its command line, and what it printed."""
        return [(ran, said) for ran, said in self.steps if ran.startswith(f".venv/bin/remem {command}")]

    def remem(self, *args: str) -> str:
        """`remem --no-daemon ARGS` on the demo's home, after the demo."""
        env = {**os.environ, "REMEM_HOME": str(self.demo / "home")}
        done = subprocess.run(
            [REMEM, "--no-daemon", *args], env=env, capture_output=True, text=True, check=True
        )
        return done.stdout


def steps_of(output: str) -> list[tuple[str, str]]:
    steps: list[tuple[str, str]] = []
    for block in re.split(r"^\$ ", output, flags=re.MULTILINE)[1:]:
        command, _, said = block.partition("\n")
        steps.append((command, said.rstrip("\n")))  # the blank line before the next step
    return steps


@pytest.fixture(scope="module")
def walkthrough(tmp_path_factory: pytest.TempPathFactory) -> Walkthrough:
    if not REMEM.exists():
        pytest.skip("scripts/demo runs the checkout's .venv (bash scripts/setup makes it)")
    root = tmp_path_factory.mktemp("walkthrough")
    demo = root / "demo"
    unset = (NO_DAEMON_ENV, "REMEM_DEMO_EDITOR", "REMEM_DEMO_MODEL", "REMEM_DEMO_PORT")
    env = {name: value for name, value in os.environ.items() if name not in unset}
    env |= {"REMEM_HOME": str(root / "user"), "REMEM_DEMO_DIR": str(demo), "DEEPSEEK_API_KEY": ""}
    # No session of this machine's user shows up in the demo's: every harness home is the test's.
    env |= {"DSH_HOME": str(root / "no-dsh"), "CLAUDE_CONFIG_DIR": str(root / "no-claude")}
    env |= {"CODEX_HOME": str(root / "no-codex")}
    done = subprocess.run(
        ["bash", "scripts/demo", "--no-setup", "--no-editor"],
        cwd=REPO,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=DEMO_TIMEOUT_S - 60,
    )
    output = _STYLE.sub("", done.stdout)
    assert done.returncode == 0, output + done.stderr
    return Walkthrough(demo, output, steps_of(output))


def test_the_demos_cli_part_runs_clean_and_stops_what_it_started(walkthrough: Walkthrough) -> None:
    out, demo = walkthrough.output, walkthrough.demo
    assert "SCRIPTED DEMO MODEL" in out and "not a real one" in out
    assert "committed, 2 change(s)" in out
    receipt = next(line for line in out.splitlines() if " committed " in line)
    assert "gateway-30-second-limit" in receipt and "standard-library-first" in receipt
    assert "remem daemon stopped" in out
    # The home it leaves asks a model that stops with it: the way out is said with it.
    assert "stops with the demo" in out and f"REMEM_HOME={demo / 'home'} " in out
    port = urllib.parse.urlsplit((demo / "model-url").read_text().strip()).port
    with pytest.raises(ConnectionRefusedError):  # the demo stopped its model
        socket.create_connection(("127.0.0.1", port), timeout=5).close()


def test_the_tree_shows_sessions_of_all_three_harnesses(walkthrough: Walkthrough) -> None:
    first_tree = walkthrough.said("sessions tree")[0].splitlines()
    roots = [line for line in first_tree if line.startswith("root: ")]
    badges = sorted(re.findall(r" \[(Claude Code|Codex)\]  \S+$", "\n".join(roots), re.MULTILINE))
    assert badges == ["Claude Code", "Codex"]
    dsh = [line for line in roots if "[" not in line]
    assert len(dsh) == 1 and dsh[0].startswith("root: The quarterly report export returns  session-")


def test_a_claude_code_fork_prints_the_command_that_resumes_it(walkthrough: Walkthrough) -> None:
    tree = "\n".join(walkthrough.said("sessions tree")[0].splitlines())
    claude_code = re.search(r"^root: .* \[Claude Code\]  (\S+)$", tree, re.MULTILINE)
    assert claude_code is not None
    forked = walkthrough.said(f"sessions fork {claude_code[1]} ")
    assert len(forked) == 1
    child = re.match(
        r"created (\S+) \(after turn 1, \d+ lines inherited\)\nresume it with: (.*)\n", forked[0]
    )
    assert child is not None, forked[0]
    # The demo's own word after it: its Claude Code folder holds no login of the user's.
    assert "Claude Code folder is a fresh one, without your login" in forked[0][child.end() :]
    project, home = walkthrough.demo / "project", walkthrough.demo / "claude"
    assert child[2] == f"cd {project} && CLAUDE_CONFIG_DIR={home} claude --resume {child[1]}"
    assert len(list((home / "projects").glob(f"*/{child[1]}.jsonl"))) == 1  # where `claude --resume` looks
    last_tree = walkthrough.said("sessions tree")[-1]
    assert re.search(rf"^  fork: .* \(from turn 1\) \[Claude Code\]  {child[1]}$", last_tree, re.MULTILINE)


def test_memory_history_shows_the_change_and_its_revert_restores_the_records_bytes(
    walkthrough: Walkthrough,
) -> None:
    log = walkthrough.said("memory log")[0].splitlines()
    deleted = re.fullmatch(r"([0-9a-f]{12})  \S+  cli  removed test-command \(\+0 -\d+\)", log[0])
    assert deleted is not None, log
    deleting, said = walkthrough.ran("memory apply")[-1]
    before = re.search(r"--expected-revision (\S+) --changes examples/demo/forget.json$", deleting)
    assert before is not None and said.startswith("committed: ")
    revert = walkthrough.said(f"memory revert {deleted[1]}")
    # the revision memory had before the delete, what the revert changed, how to take it back
    committed, change, take_back = revert[0].splitlines()
    assert committed == f"committed: {before[1]}"
    assert re.fullmatch(r"this revert: added test-command \(\+\d+ -0\)", change), change
    assert take_back == f"to take it back: remem memory revert {deleted[1]}"
    entries = json.loads(
        walkthrough.remem("memory", "log", "--cwd", str(walkthrough.demo / "project"), "--json")
    )
    ids = [entry["id"] for entry in entries["entries"]]
    at = ids.index(next(i for i in ids if i.startswith(deleted[1]))) + 1  # the entry before the delete
    shown = json.loads(walkthrough.remem("memory", "show", "--at", ids[at], "--json"))
    record = next((walkthrough.demo / "home" / "memory" / "workspaces").glob("*/test-command.md"))
    assert record.read_bytes() == shown["files"]["test-command.md"].encode()
    assert "  test-command [reference]" in walkthrough.said("memory show")[1]  # shown back after the revert


def test_the_mcp_wiring_for_the_demo_home_is_printed(walkthrough: Walkthrough) -> None:
    home = str(walkthrough.demo / "home")
    assert f"  {claude_code_command(str(REMEM), home)}\n" in walkthrough.output
    block = "\n".join(f"  {line}" if line else "" for line in codex_config(str(REMEM), home))
    assert block in walkthrough.output
