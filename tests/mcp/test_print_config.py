"""`remem mcp --print-config`: the wiring a user pastes, and the real harnesses that use it
(decision 0456). The harnesses are the real Claude Code and Codex CLIs, the model a local fake;
every printed server runs with `--no-daemon` in a home made for the test, so no daemon is left."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from tests.harnesses.claude import ClaudeCode
from tests.harnesses.codex import Codex
from tests.harnesses.fake_anthropic import FakeAnthropic
from tests.harnesses.fake_responses import FakeResponses, function_calls
from tests.harnesses.fake_responses import text as answer
from tests.harnesses.toolchain import RUN_TIMEOUT

REMEM = Path(sys.executable).with_name("remem")  # the console script a user runs
CLAUDE_TITLE = "# Claude Code, for every project (run it in any folder):"
CODEX_TITLE = "# Codex, in ~/.codex/config.toml:"


def print_config(
    home: Path | None, *args: str, stdin: Any = subprocess.DEVNULL, remem: Path = REMEM, **env: str
) -> subprocess.CompletedProcess[str]:
    """`remem [--home HOME] --no-daemon mcp --print-config ARGS` as a user runs it, in a shell
    without $REMEM_HOME but for `env`'s: `home` None is the default home, `~/.remem`."""
    if not REMEM.exists():
        pytest.skip(f"no remem console script at {REMEM} (pip install -e .)")
    unset = (NO_DAEMON_ENV, "REMEM_HOME", "CODEX_HOME")
    shell = {k: v for k, v in os.environ.items() if k not in unset} | env
    homed = [] if home is None else ["--home", str(home)]
    command = [str(remem), *homed, "--no-daemon", "mcp", "--print-config", *args]
    return subprocess.run(command, env=shell, stdin=stdin, capture_output=True, text=True, timeout=60)


def test_it_prints_at_once_whatever_stdin_is(tmp_path: Path) -> None:
    """A server waits for its client's lines on stdin, and refuses to start with stdin closed:
    printing the wiring does neither."""
    closed = subprocess.run(
        [str(REMEM), "--home", str(tmp_path), "mcp", "--print-config"],
        stdin=subprocess.DEVNULL,
        preexec_fn=lambda: os.close(0),  # noqa: PLW1509 - `remem mcp --print-config <&-`
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert closed.returncode == 0 and closed.stdout.startswith(CLAUDE_TITLE), closed.stderr
    with subprocess.Popen(
        [str(REMEM), "--home", str(tmp_path), "mcp", "--print-config"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    ) as waiting:  # stdin open and never written to, nor closed
        assert waiting.stdout is not None
        assert waiting.stdout.read().decode().startswith(CLAUDE_TITLE)
        assert waiting.wait(timeout=60) == 0
    assert not (tmp_path / "memory").exists(), "printing the wiring makes nothing in the home"


def test_the_default_home_is_passed_on_as_nothing_and_another_by_its_path(tmp_path: Path) -> None:
    default = print_config(None)
    assert default.returncode == 0, default.stderr
    assert "REMEM_HOME" not in default.stdout
    assert f"  claude mcp add --scope user remem -- {REMEM} --no-daemon mcp\n" in default.stdout
    other = json.loads(print_config(tmp_path / "home", "--json").stdout)
    launch = {
        "command": str(REMEM),
        "args": ["--no-daemon", "mcp"],
        "env": {"REMEM_HOME": str(tmp_path / "home")},
    }
    assert other["server"] == launch
    assert other["claude"]["mcpJson"] == {"mcpServers": {"remem": {"type": "stdio", **launch}}}
    assert other["codex"]["configToml"].startswith(f'[mcp_servers.remem]\ncommand = "{REMEM}"\n')


def test_one_harness_and_a_pinned_project(tmp_path: Path) -> None:
    codex = print_config(tmp_path / "home", "--harness", "codex", "--cwd", str(tmp_path))
    assert codex.stdout.startswith(CODEX_TITLE) and CLAUDE_TITLE not in codex.stdout, codex.stdout
    assert f'  args = ["--no-daemon", "mcp", "--cwd", "{tmp_path}"]\n' in codex.stdout
    claude = json.loads(print_config(None, "--harness", "claude", "--json").stdout)
    assert sorted(claude) == ["claude", "server"]


@pytest.mark.parametrize(
    ("odd", "shown"),
    [("\x7f", "\\x7f"), ("\u2028", "\\u2028"), ("\u202e", "\\u202e")],
    ids=["DEL", "LS", "RLO"],
)
def test_a_path_a_terminal_would_change_is_refused_as_text_and_exact_in_json(
    tmp_path: Path, odd: str, shown: str
) -> None:
    """Text is escaped on its way to a terminal, so a pasted command would name another path
    (and a server there would silently make a new, empty home): it is refused, pointing to
    `--json`, whose every form of the wiring parses back to the very paths (decision 0456)."""
    home, project = tmp_path / f"home{odd}x", tmp_path / f"project{odd}y"
    project.mkdir()
    text = print_config(home, "--cwd", str(project))
    assert text.returncode == 2 and text.stdout == "", text.stdout
    assert text.stderr.startswith(f"remem: the path {tmp_path}/home{shown}x holds"), text.stderr
    assert "take the wiring from --json" in text.stderr, text.stderr
    wiring = json.loads(print_config(home, "--cwd", str(project), "--json").stdout)
    args = ["--no-daemon", "mcp", "--cwd", str(project)]
    assert wiring["server"] == {"command": str(REMEM), "args": args, "env": {"REMEM_HOME": str(home)}}
    tomllib = pytest.importorskip("tomllib")  # Python 3.11 on
    server = tomllib.loads(wiring["codex"]["configToml"])["mcp_servers"]["remem"]
    assert (server["args"], server["env"]) == (args, {"REMEM_HOME": str(home)})
    added = shlex.split(wiring["claude"]["command"])
    user = ["claude", "mcp", "add", "--scope", "user", "remem"]
    assert added == [*user, "-e", f"REMEM_HOME={home}", "--", str(REMEM), *args]


def test_a_remem_whose_path_is_not_utf8_is_refused(tmp_path: Path) -> None:
    """As a home whose name is not UTF-8 is: a harness's configuration holds paths as UTF-8 text."""
    folder = os.path.join(os.fsencode(tmp_path), b"bin\xff")
    os.mkdir(folder)
    os.symlink(os.fsencode(REMEM), os.path.join(folder, b"remem"))  # run by that path, unresolved
    refused = print_config(tmp_path / "home", remem=Path(os.fsdecode(os.path.join(folder, b"remem"))))
    assert refused.returncode == 2 and refused.stdout == "", refused.stdout
    assert f"this remem's path {tmp_path}/bin\\xff/remem is not UTF-8" in refused.stderr, refused.stderr


def test_the_default_home_is_passed_on_when_the_environment_names_another(tmp_path: Path) -> None:
    """A harness started from a shell whose $REMEM_HOME names another home may pass it on unless
    the wiring names the home: `--home ~/.remem` there is printed (decision 0456)."""
    default = tmp_path / ".remem"
    elsewhere = print_config(default, "--json", HOME=str(tmp_path), REMEM_HOME=str(tmp_path / "other"))
    assert json.loads(elsewhere.stdout)["server"]["env"] == {"REMEM_HOME": str(default)}, elsewhere.stderr
    for named in ({}, {"REMEM_HOME": "~/.remem"}, {"REMEM_HOME": "  "}):  # nothing names another
        untold = print_config(default, "--json", HOME=str(tmp_path), **named)
        assert json.loads(untold.stdout)["server"]["env"] == {}, (named, untold.stderr)


def test_its_options_need_print_config(tmp_path: Path) -> None:
    refused = subprocess.run(
        [str(REMEM), "--home", str(tmp_path), "mcp", "--harness", "codex", "--json"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2
    assert json.loads(refused.stdout)["error"] == {
        "code": "USAGE",
        "message": "--harness and --json go with --print-config; the server itself takes neither",
    }


def claude_code(root: Path, fake: FakeAnthropic) -> tuple[ClaudeCode, dict[str, str]]:
    """The real Claude Code CLI, named `claude` on the PATH as the printed command calls it."""
    cc = ClaudeCode(root, fake)
    bin_dir = root / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").symlink_to(cc.executable)
    env = cc.env()
    return cc, env | {"PATH": f"{bin_dir}{os.pathsep}{env['PATH']}"}


def claude_mcp(cc: ClaudeCode, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [str(cc.executable), "mcp", *args],
        cwd=cc.cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    return done.stdout


@pytest.mark.slow
def test_claude_code_connects_to_the_server_the_printed_command_adds(tmp_path: Path) -> None:
    """Piped to a shell as printed, from the clone, the command wires the server into the
    user's other projects too: Claude Code's default scope is only the folder it is run in."""
    home = tmp_path / "remem-home"
    printed = print_config(home, "--harness", "claude").stdout
    clone = tmp_path / "clone"
    clone.mkdir()
    with FakeAnthropic() as fake:
        cc, env = claude_code(tmp_path / "claude", fake)
        added = subprocess.run(
            ["bash"], input=printed, cwd=clone, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT
        )
        assert added.returncode == 0, added.stderr
        # A user's server is started only in a folder the user trusted, as in `claude`'s dialog.
        config = cc.config_dir / ".claude.json"
        claude_json = json.loads(config.read_text())
        claude_json.setdefault("projects", {})[str(cc.cwd)] = {"hasTrustDialogAccepted": True}
        config.write_text(json.dumps(claude_json))
        got = claude_mcp(cc, env, "get", "remem")  # starts the server and asks it, as `claude` does
    assert "Scope: User config" in got and "Status: ✔ Connected" in got, got
    assert f"Command: {REMEM}\n" in got and "Args: --no-daemon mcp\n" in got, got
    assert f"REMEM_HOME={home}" in got, got
    assert not home.exists()  # connecting reads, and a read makes nothing (decision 0492)


@pytest.mark.slow
def test_claude_code_connects_to_the_server_of_the_printed_mcp_json(tmp_path: Path) -> None:
    home = tmp_path / "remem-home"
    printed = json.loads(print_config(home, "--harness", "claude", "--json").stdout)
    with FakeAnthropic() as fake:
        cc, env = claude_code(tmp_path / "claude", fake)
        (cc.cwd / ".mcp.json").write_text(json.dumps(printed["claude"]["mcpJson"]))
        # A project's .mcp.json is used once the user approves it: here, all of them.
        (cc.config_dir / "settings.json").write_text(json.dumps({"enableAllProjectMcpServers": True}))
        got = claude_mcp(cc, env, "get", "remem")
    assert "Scope: Project config" in got and "Status: ✔ Connected" in got, got
    assert f"REMEM_HOME={home}" in got, got
    assert not home.exists()  # connecting reads, and a read makes nothing (decision 0492)


@pytest.mark.slow
def test_codex_loads_memory_through_the_printed_table(tmp_path: Path) -> None:
    """Appended to Codex's config.toml as printed, title and all, as docs/agents.md says."""
    home = tmp_path / "remem-home"
    with FakeResponses() as fake:
        cx = Codex(tmp_path / "codex", fake)
        config = cx.codex_home / "config.toml"
        printed = print_config(home, "--harness", "codex", CODEX_HOME=str(cx.codex_home)).stdout
        assert printed.startswith(f"# Codex, in {config}:\n"), printed
        config.write_text(config.read_text() + "\n" + printed)
        listed = subprocess.run(
            [str(cx.executable), "mcp", "list"],
            cwd=cx.cwd,
            env=cx.env(),
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
        )
        assert listed.returncode == 0 and "remem" in listed.stdout, listed.stderr
        fake.reply(function_calls(("memory_context", {}), namespace="mcp__remem"), answer("memory loaded"))
        run = cx.exec("--sandbox", "read-only", "load memory")
        _, second = fake.requests
    assert "mcp: remem/memory_context (completed)" in run.stderr, run.stderr[-2000:]
    [output] = [i for i in second["input"] if i["type"] == "function_call_output"]
    assert "Workspace memory of this project" in json.dumps(output), output
    assert (home / "memory").is_dir()
