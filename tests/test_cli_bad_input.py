"""Input the request models would refuse, and a home with something in the way: one `remem: …`
line (or click's usage error) and the documented exit code, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, NoReturn

import pytest
from click.testing import CliRunner, Result

from remem.daemon.cli import cli
from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.sessions.paths import Encoding
from tests.conftest import NOT_UTF8
from tests.failure_said import failure_line
from tests.sessions.factory import SessionSpec, build_session, write_session

TOO_LONG = "a" * 65


def invoke(*args: str) -> Result:
    result = CliRunner().invoke(cli, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["memory", "diff", TOO_LONG], "is longer than 64 characters"),
        (["memory", "diff", "1234567", TOO_LONG], "is longer than 64 characters"),
        (["memory", "show", "--at", TOO_LONG], "is longer than 64 characters"),
        (["memory", "revert", TOO_LONG], "is longer than 64 characters"),
        (["memory", "diff", ""], "must not be empty"),
        (["memory", "show", "--at", ""], "must not be empty"),
        (["memory", "revert", ""], "must not be empty"),
        (["memory", "diff", NOT_UTF8], "is not UTF-8"),
        (["sessions", "show", NOT_UTF8], "is not UTF-8"),
        (["memory", "revert", "1234567", "--expected-revision", NOT_UTF8], "is not UTF-8"),
        (["memory", "apply", "--expected-revision", NOT_UTF8, "--changes", "-"], "is not UTF-8"),
        (["memory", "replace-global", "--expected-revision", NOT_UTF8, "--file", "-"], "is not UTF-8"),
        (["memory", "revert", "1234567", "--expected-revision", ""], "must not be empty"),
        (
            ["sessions", "fork", "s", "--op-id", "o", "--expected-revision", NOT_UTF8],
            "is no session revision",
        ),
        (
            ["sessions", "fork", "s", "--op-id", "o", "--expected-revision", "garbage"],
            "is no session revision",
        ),
        (["sessions", "fork", "s", "--op-id", "o", "--title", NOT_UTF8], "is not UTF-8"),
        (["sessions", "rename", "s", NOT_UTF8], "is not UTF-8"),
        (["receipts", "--session", NOT_UTF8], "is not UTF-8"),
        (["eval", "--provider", NOT_UTF8], "is not UTF-8"),
        (["eval", "--model", NOT_UTF8], "is not UTF-8"),
    ],
)
def test_an_argument_the_request_would_refuse_is_a_usage_error(
    home: Home, args: list[str], problem: str
) -> None:
    result = invoke("--home", str(home.root), *args)
    assert (result.exit_code, result.stdout) == (2, "")
    assert "Error: Invalid value for" in result.stderr and problem in result.stderr


def test_an_empty_title_is_the_requests_to_judge(home: Home) -> None:
    result = invoke("--home", str(home.root), "--no-daemon", "sessions", "rename", "s", "")
    assert (result.exit_code, result.stderr) == (
        2,
        "remem: INVALID: the title is empty once control characters and blanks are removed\n",
    )


def test_an_entry_id_the_request_takes_is_the_historys_to_judge(home: Home) -> None:
    result = invoke("--home", str(home.root), "memory", "diff", "a" * 64)
    assert result.exit_code == 1 and "is not a history entry id" in result.stderr


def not_utf8_line(folder: Path) -> str:
    shown = os.fsencode(folder).decode("utf-8", "backslashreplace")
    return f"remem: the folder name {shown} is not UTF-8; remem names workspaces by UTF-8 paths\n"


@pytest.mark.parametrize(
    "command",
    [["memory", "show"], ["memory", "context"], ["mcp"], ["sessions", "list"], ["sessions", "tree"]],
)
def test_a_cwd_that_is_not_utf8_is_named(home: Home, latin1_folder: Path, command: list[str]) -> None:
    result = invoke("--home", str(home.root), *command, "--cwd", str(latin1_folder))
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", not_utf8_line(latin1_folder))


def test_a_current_folder_that_is_not_utf8_is_named(
    home: Home, latin1_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(latin1_folder)
    for command in (["memory", "log"], ["sessions", "tree"]):
        result = invoke("--home", str(home.root), *command)
        assert (result.exit_code, result.stdout, result.stderr) == (2, "", not_utf8_line(latin1_folder))


@pytest.mark.parametrize(
    ("lock", "command"),
    [("spawn.lock", ["memory", "context"]), ("daemon.lock", ["daemon", "status"])],
)
@pytest.mark.parametrize("kind", ["folder", "symlink"])
def test_a_lock_file_that_cannot_be_one_is_named_not_a_traceback(
    tmp_path: Path, lock: str, command: list[str], kind: str
) -> None:
    path = tmp_path / "home" / "state" / lock
    path.parent.mkdir(parents=True)
    if kind == "folder":
        path.mkdir()
    else:
        path.symlink_to(tmp_path / "elsewhere")
    env = {key: value for key, value in os.environ.items() if key != NO_DAEMON_ENV}  # the daemon's locks
    done = subprocess.run(
        [sys.executable, "-m", "remem.daemon", "--home", str(tmp_path / "home"), *command],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"remem: {path} cannot be used as a lock file (a folder or a symlink stands there); "
        "remove it, remem recreates it\n"
    )
    assert not (tmp_path / "elsewhere").exists(), "nothing created through the link"


@pytest.mark.parametrize("blank", [" ", "\t \n"])
def test_a_blank_remem_home_means_the_default_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, blank: str
) -> None:
    user, work = tmp_path / "user", tmp_path / "work"
    user.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(user))  # ~/.remem is then inside this test's folder
    monkeypatch.setenv("REMEM_HOME", blank)
    monkeypatch.chdir(work)
    # A write, as a read of a fresh home makes nothing there (decision 0499).
    result = invoke("settings", "model", "--provider", "deepseek", "--model", "deepseek-v4-pro")
    assert result.exit_code == 0, result.stderr
    assert (user / ".remem" / "settings.yml").is_file()
    assert list(work.iterdir()) == [], "no home named by the blank value in the current folder"


def test_remem_home_still_chooses_the_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.setenv("REMEM_HOME", str(tmp_path / "chosen"))
    result = invoke("settings", "model", "--provider", "deepseek", "--model", "deepseek-v4-pro")
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / "chosen" / "settings.yml").is_file() and not (tmp_path / "user").exists()


def test_a_bug_met_in_this_process_is_one_line_and_its_traceback_is_kept(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without the daemon, an exception remem did not foresee ends the command with one line
    (the credential it may quote masked) and exit 4; its traceback goes to the home, not the
    terminal."""
    from remem.daemon.cli import main
    from remem.daemon.server.session_methods import SessionMethods

    key = "sk-" + "k" * 30

    async def broken(self: SessionMethods, params: object) -> NoReturn:
        raise RuntimeError(f"a bug in the tree, quoting {key}")

    monkeypatch.setattr(SessionMethods, "tree", broken)
    command = ["--home", str(home.root), "--no-daemon", "sessions", "tree", "--cwd", str(tmp_path)]
    monkeypatch.setattr(sys, "argv", ["remem", *command])
    with pytest.raises(SystemExit) as exited:
        main()
    kept = home.state / "last-error.log"
    assert (exited.value.code, *capsys.readouterr()) == (
        4,
        "",
        "remem: internal error, a bug in remem (RuntimeError: a bug in the tree, quoting "
        f"[redacted api-key]); its traceback is in {kept}\n",
    )
    text = kept.read_text()
    assert f"remem --home {home.root} --no-daemon sessions tree" in text
    assert "Traceback (most recent call last):" in text and "in broken" in text
    assert "RuntimeError: a bug in the tree, quoting [redacted api-key]" in text and key not in text
    assert kept.stat().st_mode & 0o777 == 0o600


def test_a_bug_met_in_this_process_with_json_is_one_json_error(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`main`'s own handler says it as every failure is said with `--json`: JSON on stdout."""
    script = (
        "import sys\n"
        "from remem.daemon.cli import main\n"
        "from remem.daemon.server.session_methods import SessionMethods\n"
        "async def broken(self, params):\n"
        "    raise RuntimeError('a bug in the tree')\n"
        "SessionMethods.tree = broken\n"
        "main()\n"
    )
    args = ["--home", str(home.root), "--no-daemon", "sessions", "tree", "--cwd", str(tmp_path), "--json"]
    done = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, env=os.environ, timeout=120
    )
    assert done.returncode == 4, done.stderr
    assert json.loads(done.stdout)["error"]["code"] == "INTERNAL"
    assert failure_line(done.stdout, done.stderr, as_json=True).startswith(
        "remem: internal error, a bug in remem (RuntimeError: a bug in the tree); its traceback is in "
    )


@pytest.mark.parametrize("output", ["usage error", "answer"])
def test_output_into_a_closed_pipe_is_no_internal_error(home: Home, tmp_path: Path, output: str) -> None:
    """`remem memory show --global 2>&1 | head -1`, `remem memory show | true`: the reader went
    away before remem wrote (click itself would exit 1 on the answer's, which says "errors")."""
    args = (
        ["memory", "show", "--global"]
        if output == "usage error"
        else ["memory", "show", "--cwd", str(tmp_path)]
    )
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "--no-daemon", *args]
    running = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert running.stdout is not None
    running.stdout.close()  # before it writes: its usage error meets a pipe no one reads
    assert running.wait(30) == 141  # 128 + SIGPIPE, as a shell reports it
    assert not (home.root / "state" / "last-error.log").exists(), "no bug of remem's was recorded"


def test_a_reader_leaving_in_the_middle_of_a_large_answer_is_told_by_the_exit(
    home: Home, tmp_path: Path
) -> None:
    """An answer larger than the pipe holds: the reader takes a little and leaves while remem
    still writes. Python's buffered writer drops the EPIPE after a partial write, and such a
    run ended 0, its output cut and nothing said."""
    draft = build_session(SessionSpec(seed=5, target_bytes=300_000, turns=10, cwd="/home/dev/p"))
    log = write_session(tmp_path / "root", draft, encoding=Encoding.RAW)
    args = ["sessions", "show", draft.header.id, "--root", str(tmp_path / "root"), "--json"]
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "--no-daemon", *args]
    running = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert running.stdout is not None and running.stderr is not None
    assert running.stdout.read(10) == b'{\n  "heade', log  # it writes: the pipe is full behind this
    running.stdout.close()
    assert running.wait(30) == 141, running.stderr.read()


def _written(home: Home, tmp_path: Path, stdout: Any, **env: str) -> subprocess.CompletedProcess[bytes]:
    """`remem memory show` of a Global memory that is not ASCII, its output to `stdout`."""
    home.ensure_layout()
    home.global_file.write_text("# Global\n\nPrefer “uv” — always.\n", encoding="utf-8")
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "--no-daemon"]
    command += ["memory", "show", "--cwd", str(tmp_path)]
    return subprocess.run(
        command, stdout=stdout, stderr=subprocess.PIPE, env={**os.environ, **env}, timeout=60
    )


def test_an_ascii_terminal_gets_the_text_not_an_internal_error(home: Home, tmp_path: Path) -> None:
    """A C locale or PYTHONIOENCODING=ascii: the text is written UTF-8, as click writes it."""
    shown = _written(home, tmp_path, subprocess.PIPE, PYTHONIOENCODING="ascii")
    assert shown.returncode == 0, shown.stderr
    assert "Prefer “uv” — always." in shown.stdout.decode("utf-8")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
def test_output_to_a_full_disk_is_said_not_taken_for_a_bug(home: Home, tmp_path: Path) -> None:
    with open("/dev/full", "wb") as full:
        shown = _written(home, tmp_path, full)
    assert shown.returncode == 1, shown.stderr
    assert shown.stderr.decode() == "remem: the output could not be written (No space left on device)\n"
    assert not (home.state / "last-error.log").exists()


@pytest.mark.parametrize(
    "command",
    [
        ["memory", "show"],
        ["memory", "context"],
        ["sessions", "tree"],
        ["sessions", "list", "--root", "logs"],
        ["daemon", "status"],
    ],
    ids=["memory-show", "memory-context", "sessions-tree", "relative-root", "relative-home"],
)
def test_a_current_folder_that_was_removed_is_said_so_not_a_bug(tmp_path: Path, command: list[str]) -> None:
    gone = tmp_path / "worktree"
    gone.mkdir()
    home = "relhome" if command == ["daemon", "status"] else str(tmp_path / "home")  # a relative home
    cli = [sys.executable, "-m", "remem.daemon", "--home", home, "--no-daemon", *command]
    script = 'cd "$1" && rmdir "$1" && shift && exec "$@"'  # a shell left in a deleted worktree
    done = subprocess.run(
        ["sh", "-c", script, "sh", str(gone), *cli], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        "remem: the current folder no longer exists (it was removed while this shell was in it); "
        "cd to a folder that exists, or give an absolute path\n"
    )
