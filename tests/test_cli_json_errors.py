"""With `--json`, every failure of every command is one JSON error on stdout, its code's exit
status from one table (decision 0444): usage errors, a daemon that cannot be reached, what is
not found and what is refused, through the real `remem` process."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from remem.daemon.fsutil import locked_temp_path_for
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from tests.cli_process import remem as run_remem
from tests.consolidation.conftest import Source, fake, source  # noqa: F401 - fixtures
from tests.fake_openai import FakeOpenAI

KEY = {"DEEPSEEK_API_KEY": "sk-test"}  # the default route's: a refusal comes before any model call


def remem(home: Home, *args: str, daemon: bool = False) -> subprocess.CompletedProcess[str]:
    return run_remem(home, *args, daemon=daemon, env=KEY)


def assert_json_error(done: subprocess.CompletedProcess[str], code: str, status: int) -> str:
    """`done` failed with `code` and `status`, said as JSON on stdout alone; its message."""
    assert (done.returncode, done.stderr) == (status, ""), (done.returncode, done.stderr, done.stdout)
    error = json.loads(done.stdout)["error"]
    assert error["code"] == code and error["message"].strip(), error
    return str(error["message"])


@pytest.mark.parametrize(
    "args",
    [
        ("sessions", "list", "--bogus", "--json"),
        ("sessions", "bogus", "--json"),
        ("sessions", "show", "s", "--markdown", "--json"),
        ("memory", "log", "--limit", "x", "--json"),
        ("memory", "log", "--limit", "-1", "--json"),  # below what it takes, as a turn 0 is
        ("consolidate", "--json"),
        ("receipts", "--json", "--session"),
        ("settings", "model", "--model", "", "--json"),
        ("daemon", "start", "--bogus", "--json"),
        ("eval", "--bogus", "--json"),
        # An option the root or a group does not know: it was click's text.
        ("--bogus", "sessions", "list", "--json"),
        ("memory", "--bogus", "log", "--json"),
        ("sessions", "--json", "list"),
    ],
)
def test_a_usage_error_is_json(home: Home, args: tuple[str, ...]) -> None:
    assert_json_error(remem(home, *args), "USAGE", 2)


@pytest.mark.parametrize(
    "args",
    [
        ("sessions", "list", "--json"),
        ("memory", "show", "--json"),
        ("consolidate", "s", "--json"),
        ("receipts", "--json"),
        ("settings", "model", "--json"),
        ("daemon", "start", "--json"),
    ],
)
def test_a_daemon_that_cannot_be_reached_is_json(home: Home, args: tuple[str, ...]) -> None:
    # Where the daemon writes its status file before renaming it: it starts and fails.
    locked_temp_path_for(home.state / "daemon.json").mkdir(parents=True)
    message = assert_json_error(remem(home, *args, daemon=True), "DAEMON_UNAVAILABLE", 1)
    assert message.startswith("the remem daemon failed to start"), message


@pytest.mark.parametrize(
    ("args", "code", "status"),
    [
        # Not found: the same code exits the same in every group.
        (("sessions", "turns", "nope", "--json"), "NOT_FOUND", 1),
        (("sessions", "rename", "nope", "t", "--json"), "NOT_FOUND", 1),
        (("consolidate", "nope", "--json"), "NOT_FOUND", 1),
        # Refused: the command line is understood, what it asks is not done.
        (("memory", "log", "--cwd", ".", "--global", "--json"), "INVALID", 2),
        (("settings", "model", "--provider", "nowhere", "--json"), "INVALID", 2),
        (("eval", "--cases", "nothing-matches", "--json"), "INVALID", 2),
    ],
)
def test_not_found_and_refused_are_json_with_the_tables_exit_status(
    home: Home, args: tuple[str, ...], code: str, status: int
) -> None:
    assert_json_error(remem(home, *args), code, status)


def test_invalid_settings_are_refused_as_json(home: Home) -> None:
    home.ensure_layout()
    home.settings_file.write_text("sessions: [\n")
    message = assert_json_error(remem(home, "sessions", "list", "--json"), "INVALID", 2)
    assert "settings.yml is invalid" in message, message


def test_without_json_a_failure_is_one_line_on_stderr(home: Home) -> None:
    done = remem(home, "eval", "--cases", "nothing-matches")
    assert (done.returncode, done.stdout) == (2, "") and done.stderr.startswith("remem: no case matches")


def test_a_consolidation_refusal_keeps_its_data(
    home: Home,
    fake: FakeOpenAI,  # noqa: F811 - a parameter, not the fixture
    source: Source,  # noqa: F811
) -> None:
    """`MEMORY_INVALID` names the memory files to fix first (`files`): the JSON error lost them."""
    folder = MemoryStore(home).folder(WorkspaceId.from_cwd(source.cwd))
    folder.mkdir(parents=True, exist_ok=True)
    broken = folder / "broken.md"
    broken.write_text("---\nname: broken\ntype: Feedback\n---\nA body.\n")
    done = remem(home, "consolidate", source.id, "--json")
    assert_json_error(done, "MEMORY_INVALID", 1)
    assert json.loads(done.stdout)["error"]["files"] == [str(broken)] and fake.count == 0


def test_memory_files_not_found_are_one_json_message_a_line_each(home: Home, tmp_path: Path) -> None:
    """Its lines were joined by `remem: `, the prefix of stderr's lines, inside the JSON."""
    done = remem(home, "memory", "validate", str(tmp_path / "a.md"), str(tmp_path / "b.md"), "--json")
    lines = assert_json_error(done, "INVALID", 2).splitlines()
    assert len(lines) == 2 and not any("remem: " in line for line in lines), lines
