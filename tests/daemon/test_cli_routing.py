"""The CLI goes through the daemon by default and prints exactly what `--no-daemon` prints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from remem.daemon import client as daemon_client
from remem.daemon.cli import cli
from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.client import DaemonUnavailable
from remem.daemon.fsutil import locked_temp_path_for
from remem.daemon.home import Home
from remem.daemon.protocol.rpc import ANSWER_TOO_LARGE, RpcError
from remem.daemon.server.runtime import DaemonPaths
from tests.failure_said import failure_line
from tests.sessions.factory import SessionSpec, build_family, build_session, write_session

from ..yaml_bombs import BILLION_LAUGHS, ERROR_BYTES_MAX
from .helpers import calls, wait_until

pytestmark = pytest.mark.slow
EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def run(home: Home, *args: str, daemon: bool, stdin: str | None = None) -> tuple[int, str, str]:
    flags = [] if daemon else ["--no-daemon"]
    result = CliRunner().invoke(cli, ["--home", str(home.root), *flags, *args], input=stdin)
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def project(home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, dict[str, str]]:
    monkeypatch.delenv(NO_DAEMON_ENV)
    (tmp_path / "project").mkdir()
    cwd = str(tmp_path / "project")
    root = tmp_path / "dsh-sessions"
    family = build_family(7, cwd=cwd)
    for draft in family.drafts:
        os.utime(write_session(root, draft), (1_600_000_000, 1_600_000_000))
    home.settings_file.write_text(f"daemon:\n  idle_minutes: 2\nsessions:\n  roots: [{str(root)!r}]\n")
    return cwd, {"main": family.main.header.id, "fork": family.fork.header.id}


def test_every_reading_command_prints_the_same_both_ways(
    home: Home, project: tuple[str, dict[str, str]]
) -> None:
    cwd, ids = project
    record = {"name": "prefer-uv", "description": "Use uv", "type": "feedback", "content": "Faster.\n"}
    changes = json.dumps([{"action": "put", "record": record}])
    committed = run(home, "memory", "apply", "--cwd", cwd, "--expected-revision", EMPTY, "--changes", "-",
                    "--json", daemon=True, stdin=changes)  # fmt: skip
    assert committed[0] == 0 and json.loads(committed[1])["status"] == "committed"
    assert DaemonPaths(home).running(), "the command started the daemon"
    commands = [
        ("memory", "show", "--cwd", cwd, "--json"),
        ("memory", "show", "--cwd", cwd),
        ("memory", "context", "--cwd", cwd),
        ("memory", "reindex", "--cwd", cwd, "--json"),
        ("sessions", "list", "--json"),
        ("sessions", "list", "--cwd", cwd),
        ("sessions", "tree", "--cwd", cwd, "--json"),
        ("sessions", "tree", "--cwd", cwd),
        ("sessions", "tree", "--cwd", f"{cwd}-elsewhere"),  # empty: where it looked, on stderr
        ("sessions", "turns", ids["main"], "--json"),
        ("sessions", "show", ids["main"]),
        ("sessions", "show", ids["main"], "--json"),
        ("sessions", "turns", "session-nope", "--json"),
    ]
    for command in commands:
        through_daemon = run(home, *command, daemon=True)
        assert through_daemon == run(home, *command, daemon=False), command
    stale = run(home, "memory", "apply", "--cwd", cwd, "--expected-revision", EMPTY, "--changes", "-",
                "--json", daemon=True, stdin=changes)  # fmt: skip
    assert stale[0] == 3 and json.loads(stale[1])["status"] == "conflict"
    revision = json.loads(committed[1])["revision"]
    bad = run(home, "memory", "apply", "--cwd", cwd, "--expected-revision", revision, "--changes", "-",
              daemon=True, stdin='[{"action": "delete", "name": "ghost"}]')  # fmt: skip
    assert bad[0] == 2 and "[remem/delete-missing]" in bad[2]
    fork = ("sessions", "fork", ids["main"], "--op-id", "op-1", "--json")
    made, again = run(home, *fork, daemon=True), run(home, *fork, daemon=False)
    assert json.loads(made[1]) == {**json.loads(again[1]), "created": True}, "one fork, whichever path"
    renamed = run(home, "sessions", "rename", ids["fork"], "  ", "--json", daemon=True)
    assert renamed[0] == 2 and json.loads(renamed[1])["error"]["code"] == "INVALID"


def test_invalid_memory_is_reported_the_same_both_ways(
    home: Home, project: tuple[str, dict[str, str]]
) -> None:
    home.ensure_layout()
    home.global_file.write_text("x" * 30_000 + "\n")  # over the 24 KiB budget
    for args in (("memory", "show", "--json"), ("memory", "show")):
        through_daemon = run(home, *args, daemon=True)
        assert through_daemon[0] == 1 and through_daemon == run(home, *args, daemon=False)


def test_an_invalid_settings_file_is_refused_the_same_both_ways(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon answers sessions on its last valid settings (the defaults when there never were
    any) and says the file's problems in its answer: a command then refuses the file as it does
    without the daemon, never lists by other roots than the file names (decision 0363)."""
    monkeypatch.delenv(NO_DAEMON_ENV)
    root = tmp_path / "dsh-sessions"
    session = build_session(SessionSpec(seed=4, turns=2, cwd="/w"))
    os.utime(write_session(root, session), (1_600_000_000, 1_600_000_000))
    home.ensure_layout()
    home.settings_file.write_text(
        "daemon:\n  idle_minutes: 2\nsessions:\n  roots: [{path: /x, format: claudecode}]\n"
    )
    problem = (
        f"{home.settings_file}:4: sessions.roots.0.format: Input should be 'dsh', 'claude-code' or 'codex'"
    )
    commands = [
        ("sessions", "list"),
        ("sessions", "list", "--json"),
        ("sessions", "tree", "--cwd", "/w"),
        ("sessions", "turns", session.header.id),
        ("sessions", "show", session.header.id, "--json"),
        ("sessions", "fork", session.header.id, "--op-id", "op-1"),
        ("sessions", "rename", session.header.id, "new title"),
    ]
    for command in commands:
        through_daemon = run(home, *command, daemon=True)
        assert through_daemon == run(home, *command, daemon=False), command
        assert through_daemon[0] == 2 and problem in through_daemon[1] + through_daemon[2], through_daemon
    assert DaemonPaths(home).running(), "the daemon runs, on the defaults"
    [tree, status] = calls(home, [("sessions/tree", {"cwd": "/w"}), ("daemon/status", {})])
    assert (tree["nodes"], tree["settingsProblems"], status["settingsProblems"]) == ([], [problem], [problem])

    home.settings_file.write_text(f"daemon:\n  idle_minutes: 2\nsessions:\n  roots: [{str(root)!r}]\n")
    assert run(home, "sessions", "turns", session.header.id, daemon=True)[0] == 0, "valid again: at once"
    wait_until(lambda: calls(home, [("daemon/status", {})])[0]["settingsProblems"] == [])
    home.settings_file.write_text(home.settings_file.read_text() + "  idle_secs: 5\n")
    refused = run(home, "sessions", "turns", session.header.id, "--json", daemon=True)
    assert refused == run(home, "sessions", "turns", session.header.id, "--json", daemon=False)
    assert refused[0] == 2 and json.loads(refused[1])["error"]["code"] == "INVALID"
    [tree] = calls(home, [("sessions/tree", {"cwd": "/w"})])  # the editor's: by the last valid roots
    assert [n["id"] for n in tree["nodes"]] == [session.header.id]
    [typo] = tree["settingsProblems"]
    assert (
        typo.split(": ", 1)[1]
        == "sessions.idle_secs: unknown key; check its spelling against docs/cli.md#settings"
    )
    assert not list(home.sessions.rglob("session.jsonl*")), (
        "no fork was made (a DSH fork lands in remem's root)"
    )


def test_a_request_over_the_message_cap_is_refused_the_same_both_ways(
    home: Home, project: tuple[str, dict[str, str]], tmp_path: Path
) -> None:
    cwd, _ = project
    record = {"name": "huge", "description": "d", "type": "feedback", "content": "x" * (5 << 20)}
    changes = json.dumps([{"action": "put", "record": record}])
    args = ("memory", "apply", "--cwd", cwd, "--expected-revision", EMPTY, "--changes", "-")
    through, alone = (run(home, *args, daemon=daemon, stdin=changes) for daemon in (True, False))
    assert through == alone and through[0] == 2 and "[remem/body-too-large]" in through[2], through
    assert run(home, "memory", "show", "--cwd", cwd, daemon=True)[0] == 0, "the daemon still answers"


def test_a_daemon_that_cannot_start_is_explained(home: Home, project: tuple[str, dict[str, str]]) -> None:
    # (An invalid settings.yml no longer stops it: tests/daemon/test_state_touched.py.)
    # Where the daemon writes its status file before renaming it over daemon.json (a folder at
    # daemon.json itself is refused before any daemon is started: tests/test_cli_bad_input_more.py).
    locked_temp_path_for(home.state / "daemon.json").mkdir(parents=True)
    code, _, err = run(home, "memory", "show", daemon=True)
    assert code == 1 and "daemon.json" in err and "--no-daemon" in err
    # The cause, not the stack above it: the log's last statement, and where the log is.
    [cause, hint] = err.splitlines()
    assert cause.startswith("remem: the remem daemon failed to start (exit status 4): IsADirectoryError: ")
    assert cause.endswith(f"(the daemon's log: {home.state / 'daemon.log'})") and hint.startswith(
        "(--no-daemon"
    )
    assert run(home, "memory", "show", daemon=False)[0] == 0


def test_a_daemon_that_dies_starting_is_not_explained_by_an_older_daemons_log_line(home: Home) -> None:
    """The log is every daemon's: one killed before it wrote a word is said to be, never
    explained by the line a daemon before it wrote last."""
    paths = DaemonPaths(home)
    paths.log.write_text("2026-12-01 10:00:00,000 INFO listening on /tmp/remem-0/old.sock (pid 1)\n")
    since = paths.log.stat().st_size
    killed = subprocess.Popen(
        [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"]
    )
    with pytest.raises(DaemonUnavailable) as failed:
        daemon_client._wait_for_status(paths, killed, None, since, time.monotonic() + 30)
    assert str(failed.value) == (
        f"the remem daemon failed to start (killed by SIGKILL): it wrote nothing to its log "
        f"(the daemon's log: {paths.log})"
    )


def test_a_billion_laughs_settings_file_is_one_small_problem_the_daemon_reports(
    home: Home, project: tuple[str, dict[str, str]]
) -> None:
    home.settings_file.write_text(BILLION_LAUGHS)
    code, _, err = run(home, "memory", "show", daemon=True)
    assert code == 0, err  # the daemon started on the defaults instead of expanding the bomb
    code, out, _ = run(home, "daemon", "status", daemon=True)
    assert code == 0 and "YAML aliases are not allowed in settings.yml" in out
    assert len(out) < ERROR_BYTES_MAX and len(DaemonPaths(home).log.read_bytes()) < ERROR_BYTES_MAX


def test_an_answer_over_the_cap_is_an_error_that_says_how_to_get_it(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(NO_DAEMON_ENV)
    root = tmp_path / "dsh-sessions"
    big = build_session(SessionSpec(seed=3, turns=1, target_bytes=1_500_000))
    write_session(root, big)
    limit = 1 << 20  # the smallest cap allowed; this session's events are larger
    home.settings_file.write_text(
        f"daemon:\n  idle_minutes: 2\n  max_answer_bytes: {limit}\nsessions:\n  roots: [{str(root)!r}]\n"
    )
    code, out, err = run(home, "sessions", "show", big.header.id, "--json", daemon=True)
    assert code == 1
    [line] = failure_line(out, err, as_json=True).splitlines()
    assert "sessions/log" in line and "daemon.max_answer_bytes: 1.0 MiB" in line and "--no-daemon" in line
    direct = run(home, "sessions", "show", big.header.id, "--json", daemon=False)
    assert direct[0] == 0 and len(direct[1].encode()) > limit
    # The daemon answered with an error and kept the connection: the next request is served.
    too_big, status = calls(home, [("sessions/log", {"id": big.header.id}), ("daemon/status", {})])
    assert isinstance(too_big, RpcError) and too_big.code == ANSWER_TOO_LARGE
    assert too_big.data["limit"] == limit and too_big.data["bytes"] > limit
    assert status["pid"] == DaemonPaths(home).read_status().pid  # type: ignore[union-attr]
