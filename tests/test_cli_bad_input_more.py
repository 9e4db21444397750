"""More of what a command can be given or meet that is no bug of remem's: one `remem: …` line
(or click's usage error) and the documented exit code, never a traceback. Each runs the real
command line in a process of its own."""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home, HomeUnusable
from tests.conftest import NOT_UTF8
from tests.failure_said import failure_line
from tests.sessions.factory import SessionSpec, build_session, write_session


def remem(
    *args: str,
    cwd: Path | None = None,
    stdin: int | None = subprocess.DEVNULL,
    input: str | None = None,
    **env: str,
) -> subprocess.CompletedProcess[str]:
    """`remem ARGS` in a process of its own (without the daemon, as the suite's fixture sets)."""
    return subprocess.run(
        [sys.executable, "-m", "remem.daemon", *args],
        capture_output=True,
        text=True,
        errors="backslashreplace",
        cwd=cwd,
        stdin=None if input is not None else stdin,
        input=input,
        env={**os.environ, **env},
        timeout=120,
    )


def shown(path: Path) -> str:
    return os.fsencode(path).decode("utf-8", "backslashreplace")


@pytest.mark.parametrize("exists", [True, False])
@pytest.mark.parametrize(
    "command", [["sessions", "list", "--json"], ["sessions", "turns", "s"], ["sessions", "show", "s"]]
)
def test_a_root_that_is_not_utf8_is_named_as_a_cwd_is(
    home: Home, latin1_folder: Path, command: list[str], exists: bool
) -> None:
    """Before, a root that exists ended in a bug's UnicodeEncodeError where the index stores its
    path, and one that does not printed its raw bytes into the JSON."""
    root = latin1_folder if exists else latin1_folder.parent / f"{latin1_folder.name}-gone"
    done = remem("--home", str(home.root), *command, "--root", str(root))
    assert done.returncode == 2, done.stderr
    assert failure_line(done.stdout, done.stderr, as_json="--json" in command) == (
        f"remem: the folder name {shown(root)} is not UTF-8; remem names session roots by UTF-8 paths\n"
    )


@pytest.mark.parametrize(
    "command",
    [
        ["memory", "apply", "--expected-revision", "r", "--changes", "-", "--cwd", ""],
        ["memory", "show", "--cwd", ""],
        ["sessions", "list", "--cwd", ""],
        ["sessions", "tree", "--cwd", ""],
        ["sessions", "list", "--root", ""],
    ],
)
def test_an_empty_folder_argument_is_a_usage_error_not_the_current_folder(
    home: Home, tmp_path: Path, command: list[str]
) -> None:
    """`--cwd "$UNSET"` was the current folder: `memory apply` committed to its memory."""
    done = remem("--home", str(home.root), *command, cwd=tmp_path, input="[]")
    option = "--root" if "--root" in command else "--cwd"
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr.endswith(
        f"Error: Invalid value for '{option}': must not be empty; name a folder (`.` for the current one)\n"
    )
    assert not (home.root / "memory" / "workspaces").exists() or not any(
        (home.root / "memory" / "workspaces").iterdir()
    ), "no memory was started"


@pytest.mark.parametrize("named_in", ["--root", "settings"])
def test_a_root_named_through_a_link_to_another_root_is_that_root_once(
    home: Home, tmp_path: Path, named_in: str
) -> None:
    """DSH's folder named again through a link: each log was at two paths, so none was listed
    ("also exists at …") and `turns` found the id AMBIGUOUS, naming one file twice."""
    dsh_home = tmp_path / "dsh"
    draft = build_session(SessionSpec(seed=7, turns=2, cwd="/home/dev/p"))
    write_session(dsh_home / "sessions", draft)
    link = tmp_path / "dshlink"
    link.symlink_to(dsh_home / "sessions")
    extra = ["--root", str(link)] if named_in == "--root" else []
    if named_in == "settings":
        home.ensure_layout()
        home.settings_file.write_text(f"sessions:\n  roots: ['{link}']\n")
    base = ["--home", str(home.root), "sessions"]
    listed = remem(*base, "list", *extra, "--json", DSH_HOME=str(dsh_home))
    assert listed.returncode == 0, listed.stderr
    answer = json.loads(listed.stdout)
    assert ([s["id"] for s in answer["sessions"]], answer["errors"]) == ([draft.header.id], [])
    turns = remem(*base, "turns", draft.header.id, *extra, "--json", DSH_HOME=str(dsh_home))
    assert turns.returncode == 0, turns.stdout + turns.stderr
    assert len(json.loads(turns.stdout)["turns"]) == 2
    # Named through the link alone, the link's path is the root's: nothing inside it is followed.
    alone = remem(*base, "list", *extra, "--json", DSH_HOME=str(tmp_path / "no-dsh"))
    assert [s["id"] for s in json.loads(alone.stdout)["sessions"]] == [draft.header.id]


def _no_file_can_grow() -> None:  # `ulimit -f 0`: no temporary folder can be written either
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))


def test_no_writable_temporary_folder_is_no_traceback_before_main(home: Home, tmp_path: Path) -> None:
    """portalocker's import asked for a temporary folder: every command, even `--version`,
    ended in a FileNotFoundError traceback before remem could say anything."""
    command = [sys.executable, "-m", "remem.daemon"]
    for args in (
        ["--version"],
        ["--home", str(home.root), "memory", "show", "--cwd", str(tmp_path), "--json"],
    ):
        done = subprocess.run(
            [*command, *args], capture_output=True, text=True, preexec_fn=_no_file_can_grow, timeout=120
        )
        assert (done.returncode, done.stderr) == (0, ""), args
    assert done.stdout.startswith('{\n  "global"')


@pytest.mark.parametrize(
    ("name", "command"),
    [
        ("daemon.log", ["memory", "show", "--json"]),
        ("daemon.json", ["memory", "show", "--json"]),
        # Not `daemon run` with a folder at the log: in the foreground it logs to its standard
        # error, and runs (tests/test_cli_home_unusable_by_some.py).
        ("daemon.json", ["daemon", "run"]),
    ],
)
def test_a_folder_where_the_daemon_keeps_a_file_is_named_not_a_bug(
    home: Home, tmp_path: Path, name: str, command: list[str]
) -> None:
    """A folder at the daemon's log ended a command in a bug's IsADirectoryError where the
    client opened the log for the daemon it spawned; one at its status file, the daemon, at
    the rename of the status file it had written (exit 4 from a daemon that had started). The
    daemon refuses the latter itself, and a command that spawned it quotes it (exit 1: the
    daemon could not start, nothing of the command was done)."""
    in_the_way = home.state / name
    in_the_way.mkdir(parents=True)
    env = {key: value for key, value in os.environ.items() if key != NO_DAEMON_ENV}  # through the daemon
    done = subprocess.run(
        [sys.executable, "-m", "remem.daemon", "--home", str(home.root), *command],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    said = f"remem's home {home.root} cannot be used: {in_the_way} is a folder, where remem keeps a file"
    said += "; remove it"
    if name == "daemon.json" and command[0] == "memory":  # said by the daemon it started
        assert done.returncode == 1
        assert failure_line(done.stdout, done.stderr, as_json="--json" in command).startswith(
            f"remem: the remem daemon failed to start (exit status 2): remem: {said}"
        )
    else:
        assert (done.returncode, failure_line(done.stdout, done.stderr, as_json="--json" in command)) == (
            2,
            f"remem: {said}\n",
        )
    assert sorted(p.name for p in home.state.iterdir() if ".remem-tmp-" in p.name) == []


def test_a_folder_where_the_home_keeps_a_file_is_unusable_not_an_error(home: Home) -> None:
    home.ensure_layout()
    (home.state / "last-error.log").mkdir()
    with pytest.raises(HomeUnusable, match="last-error.log is a folder, where remem keeps a file"):
        home.open_file(home.state / "last-error.log", os.O_WRONLY | os.O_CREAT)


@pytest.mark.parametrize(
    ("option", "command"),
    [
        ("--changes", ["memory", "apply", "--expected-revision", "E", "--changes", "-", "--json"]),
        ("--file", ["memory", "replace-global", "--expected-revision", "E", "--file", "-"]),
    ],
)
def test_standard_input_closed_is_a_usage_error(
    home: Home, tmp_path: Path, option: str, command: list[str]
) -> None:
    """`<&-`: Python starts without sys.stdin, and click's RuntimeError was a bug's exit 4."""
    args = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), *command]
    done = subprocess.run(
        ["sh", "-c", 'exec "$@" <&-', "sh", *args], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    said = f"Invalid value for '{option}': '-' reads standard input, which is closed; pipe the text in, or "
    said += "name a file"
    assert done.returncode == 2, done.stderr
    if "--json" in command:  # a usage error too is JSON then
        assert (json.loads(done.stdout)["error"], done.stderr) == ({"code": "USAGE", "message": said}, "")
    else:
        assert done.stdout == "" and done.stderr.endswith(f"Error: {said}\n")


@pytest.mark.parametrize("named_by", ["--home", "REMEM_HOME"])
@pytest.mark.parametrize(
    "command", [["sessions", "list", "--json"], ["daemon", "status"], ["memory", "show", "--json"]]
)
def test_a_home_whose_name_is_not_utf8_is_refused_in_one_line(
    tmp_path: Path, named_by: str, command: list[str]
) -> None:
    """Its paths failed where the index stored them or an answer carried them (exit 4)."""
    home = tmp_path / NOT_UTF8
    args = ["--home", str(home)] if named_by == "--home" else []
    done = remem(*args, *command, cwd=tmp_path, **({"REMEM_HOME": str(home)} if not args else {}))
    assert done.returncode == 2, done.stderr
    assert failure_line(done.stdout, done.stderr, as_json="--json" in command) == (
        f"remem: remem's home {shown(home)} cannot be used: its name is not UTF-8, and remem keeps its "
        "paths as UTF-8 text; choose another home with --home or $REMEM_HOME\n"
    )


@pytest.mark.parametrize("command", [["sessions", "list", "--json"], ["memory", "show"]])
def test_standard_output_closed_is_output_that_could_not_be_written(
    home: Home, tmp_path: Path, command: list[str]
) -> None:
    """`>&-`: the answer went nowhere, and the command exited 0."""
    args = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), *command, "--cwd", str(tmp_path)]
    done = subprocess.run(
        ["sh", "-c", 'exec "$@" >&-', "sh", *args], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert (done.returncode, done.stderr) == (
        1,
        "remem: the output could not be written (standard output is closed)\n",
    )


# `python -m remem.daemon ARGS`, sent SIGINT as MODULE is first imported: before `main` exists.
_INTERRUPTED_LOADING = """
import importlib, os, runpy, signal, sys

class Interrupt:
    def find_spec(self, name, path=None, target=None):
        if name == MODULE:
            os.kill(os.getpid(), signal.SIGINT)
        return None

MODULE, ENTRY = sys.argv.pop(1), sys.argv.pop(1)
sys.meta_path.insert(0, Interrupt())
if ENTRY == "-m":
    runpy.run_module("remem.daemon", run_name="__main__", alter_sys=True)
else:  # as the installed `remem` script runs its entry point
    module, _, function = ENTRY.partition(":")
    getattr(importlib.import_module(module), function)()
"""
# The `remem` script's entry point, as pyproject.toml declares it (`remem = "module:function"`).
_SCRIPT = re.search(r'^remem = "([^"]+)"$', (Path(__file__).parents[1] / "pyproject.toml").read_text(), re.M)[
    1
]


@pytest.mark.parametrize("entry", ["-m", _SCRIPT])
@pytest.mark.parametrize("module", ["click", "remem.daemon.cli.output"])
def test_ctrl_c_while_the_command_line_loads_is_one_line(
    home: Home, tmp_path: Path, module: str, entry: str
) -> None:
    """A Ctrl-C in the first moments of a command (its imports) printed a whole traceback, by
    `python -m remem.daemon` and by the installed `remem` script alike."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            _INTERRUPTED_LOADING,
            module,
            entry,
            "--home",
            str(home.root),
            "memory",
            "show",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert (done.returncode, done.stdout, done.stderr) == (130, "", "remem: interrupted\n")


HELP_AND_VERSION = [
    ["--help"],
    ["--version"],
    ["memory", "--help"],
    ["sessions", "list", "-h"],
    ["eval", "--help"],
    ["mcp", "--help"],
]


@pytest.mark.parametrize("args", HELP_AND_VERSION, ids=" ".join)
def test_help_or_version_into_a_closed_pipe_exits_as_any_output_does(home: Home, args: list[str]) -> None:
    """`remem --help | true` exited 1 (click's own handling, before remem's), `remem memory
    --help | true` 141."""
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), *args]
    running = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert running.stdout is not None and running.stderr is not None
    running.stdout.close()  # before it writes
    assert running.wait(60) == 141, running.stderr.read()


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
@pytest.mark.parametrize("args", HELP_AND_VERSION, ids=" ".join)
def test_help_or_version_to_a_full_disk_is_said_not_taken_for_a_bug(home: Home, args: list[str]) -> None:
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            [sys.executable, "-m", "remem.daemon", "--home", str(home.root), *args],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    assert (done.returncode, done.stderr) == (
        1,
        "remem: the output could not be written (No space left on device)\n",
    )
    assert not (home.state / "last-error.log").exists()


def test_show_at_an_entry_with_a_cwd_is_a_usage_error(home: Home, tmp_path: Path) -> None:
    """The entry names its own scope: --cwd was silently ignored, a typo in it unsaid."""
    done = remem(
        "--home", str(home.root), "memory", "show", "--at", "1234567", "--cwd", str(tmp_path / "gone")
    )
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr.endswith(
        "Error: --at shows the scope its entry changed (a workspace, or Global), so it takes no --cwd; "
        "give one of them\n"
    )
