"""What the agent is told when a request cannot be served: a sentence saying what to do, never a
bare protocol error or a path of the user's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from remem.agents.session import HOME_IN_THE_WAY
from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import HOME_ENV, Home
from tests.daemon.helpers import remem
from tests.unwritable import unwritable

from .conftest import TIMEOUT_SECONDS, agent, server_env, text_of

pytestmark = pytest.mark.asyncio


@pytest.mark.parametrize("name", ["", "a" * 201])
async def test_a_record_resource_without_a_valid_name_says_what_a_name_is(
    home: Home, project: Path, name: str
) -> None:
    async with agent(home, project, options=("--no-daemon",)) as session:
        with pytest.raises(MCPError) as refused:
            await session.client.read_resource(f"remem://workspace/{name}")
    assert refused.value.error.code == types.INVALID_PARAMS
    message = refused.value.error.message
    assert "does not name a memory record" in message and "memory_context's index" in message, message


@pytest.mark.parametrize("kind", ["folder", "symlink"])
async def test_an_unusable_spawn_lock_is_named_by_its_file_name_alone(
    home: Home, project: Path, tmp_path: Path, kind: str
) -> None:
    lock = home.root / "state" / "spawn.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    if kind == "folder":
        lock.mkdir()
    else:
        lock.symlink_to(tmp_path / "elsewhere")
    async with agent(home, project) as session:
        result = await session.call("memory_context")
    assert result.is_error
    message = text_of(result)
    assert "`spawn.lock`" in message and "Ask the user to remove that file" in message, message
    assert str(tmp_path) not in message and " /" not in message


async def test_a_daemon_that_cannot_start_is_said_without_the_homes_path_naming_a_command_that_says_why(
    home: Home, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent named `remem daemon status`, which says only "not running" there."""
    (home.ensure_layout().state / "daemon.json").mkdir()  # where it writes its status: it fails to start
    async with agent(home, project) as session:
        result = await session.call("memory_context")
    assert result.is_error
    message = text_of(result)
    assert "daemon could not be reached or started" in message and "`remem memory show`" in message
    assert str(home.root) not in message and " /" not in message, message
    monkeypatch.delenv(NO_DAEMON_ENV, raising=False)  # the command as the user runs it: through the daemon
    shown = remem(home, "memory", "show")
    assert "daemon.json is a folder, where remem keeps a file" in shown.stderr, shown.stderr


@pytest.mark.parametrize("options", [(), ("--no-daemon",)], ids=["daemon", "no-daemon"])
async def test_a_state_folder_that_cannot_be_written_is_said_as_the_home_in_the_way(
    home: Home, project: Path, options: tuple[str, ...]
) -> None:
    """The server's own watch of memory laid the home out first, and said its refusal as a bug
    ("remem failed unexpectedly"), whether or not a daemon was to answer."""
    home.ensure_layout()
    async with agent(home, project, options=options) as session:
        with unwritable(home.state):
            result = await session.call("memory_context")
    assert result.is_error and text_of(result) == HOME_IN_THE_WAY, text_of(result)


@pytest.fixture
def latin1_folder(tmp_path: Path) -> Path:
    folder = tmp_path / os.fsdecode(b"caf\xe9")
    try:
        folder.mkdir()
    except OSError:
        pytest.skip("this file system refuses names that are not UTF-8")
    return folder


# `remem mcp` whose session fails as no handler foresees, with a path in what it raises.
_FAILING = (
    "import sys\n"
    "from remem.agents import session\n"
    "async def failing(self, cwd): raise RuntimeError(f'nothing at {cwd}/caf')\n"
    "session.AgentSession.context = failing\n"
    "from remem.daemon.cli import main\n"
    "sys.argv = ['remem', *sys.argv[4:]]\n"  # past `-c`, and the python -m remem.daemon appended
    "main()\n"
)


async def test_an_unexpected_failure_is_an_error_result_without_paths(
    home: Home, project: Path, tmp_path: Path
) -> None:
    command = [sys.executable, "-c", _FAILING]
    async with agent(home, project, options=("--no-daemon",), command=command) as session:
        result = await session.call("memory_context")
        with pytest.raises(MCPError) as refused:
            await session.client.read_resource("remem://context")
    assert result.is_error
    assert refused.value.error.code == types.INTERNAL_ERROR
    for message in (text_of(result), refused.value.error.message):
        assert "remem failed unexpectedly" in message and "log" in message, message
        assert str(tmp_path) not in message and "caf" not in message, message


async def test_a_start_folder_the_protocol_cannot_carry_is_said_without_its_name(
    home: Home, latin1_folder: Path, tmp_path: Path
) -> None:
    """Started in a folder whose name is not UTF-8, with no --cwd and no roots."""
    async with agent(home, None, start_dir=latin1_folder, options=("--no-daemon",)) as session:
        result = await session.call("memory_context")
        with pytest.raises(MCPError) as refused:
            await session.client.read_resource("remem://context")
    assert result.is_error
    for message in (text_of(result), refused.value.error.message):
        assert "its name is not UTF-8" in message and "--cwd" in message, message
        assert str(tmp_path) not in message and "caf" not in message, message


async def test_a_link_made_in_the_home_is_said_to_the_agent_without_paths(
    home: Home, project: Path, tmp_path: Path
) -> None:
    """The daemon names the link and the fix (HOME_UNUSABLE), for the user's log; the agent is
    told to ask the user, never an internal error."""
    outside, audit = tmp_path / "outside", home.memory / "audit"
    outside.mkdir()
    async with agent(home, project) as session:
        await session.context()
        audit.symlink_to(outside)  # while the daemon runs: its layout check passed long ago
        try:
            result = await session.update({"action": "put", "record": {
                "name": "one", "description": "d", "type": "feedback", "content": "x\n"}})  # fmt: skip
        finally:
            audit.unlink()  # so the fixture can look for a daemon to stop
    assert result.is_error
    message = text_of(result)
    assert "something in remem's home stands in the way" in message and "internal" not in message, message
    assert str(tmp_path) not in message and " /" not in message, message
    assert list(outside.iterdir()) == [], "nothing written through it"


@pytest.mark.parametrize("options", [(), ("--no-daemon",)], ids=["daemon", "no-daemon"])
@pytest.mark.parametrize("below", ["", "sub"], ids=["file", "below-a-file"])
async def test_a_home_that_is_a_file_is_logged_as_such_at_start_and_the_agent_is_sent_to_memory_show(
    tmp_path: Path, project: Path, options: tuple[str, ...], below: str
) -> None:
    """The log's only line blamed settings.yml ("settings.yml is invalid, so memory folders are
    not watched: … Not a directory"), and the agent was sent to that log first; with --no-daemon
    the server exited 2 before answering `initialize`, its log saying every tool would answer.
    A home below a file was found only by the handlers, with --no-daemon as a bug's
    NotADirectoryError ("remem failed unexpectedly")."""
    file = tmp_path / "home"
    file.write_text("not a folder\n")
    home = Home(file / below if below else file)
    said_first = (
        f"{file} is a file, where the way to {home.root} needs a folder; move it"
        if below
        else f"{home.root} cannot be made a folder (File exists)"
    )
    served = subprocess.run(
        [
            sys.executable,
            "-m",
            "remem.daemon",
            *options,
            "mcp",
            "--cwd",
            str(project),
        ],  # --home refuses a file
        input=_lines(
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": _INITIALIZE},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "memory_context"}},
        ),
        capture_output=True,
        text=True,
        env=server_env(**{HOME_ENV: str(home.root)}),
        timeout=TIMEOUT_SECONDS,
    )
    first = served.stderr.splitlines()[0]
    assert said_first in first, served.stderr
    assert "settings.yml" not in served.stderr, served.stderr
    [answer] = [json.loads(line) for line in served.stdout.splitlines() if json.loads(line).get("id") == 1]
    said = answer["result"]["content"][0]["text"]
    assert "Ask the user to run `remem memory show`, which says what and how to fix it" in said, said


_INITIALIZE = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "raw", "version": "1"},
}


def _lines(*messages: dict[str, object]) -> str:
    return "".join(json.dumps(message) + "\n" for message in messages)
