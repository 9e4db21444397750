"""A history whose branch no longer reads, met by a command run without the daemon: given
`--json`, its stderr stays empty as it does through the daemon (the warning goes to the home's
log, decision 0509), and the warning says the damage whole, with its remedy, through the real
`remem` process."""

from __future__ import annotations

import json
import os
from pathlib import Path
from subprocess import CompletedProcess

from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.server.runtime import DaemonPaths
from tests.cli_process import remem

EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
REMEDY = (
    "memory itself is whole: move history aside and remem starts the history again from the current state"
)


def _apply(
    home: Home, workspace: WorkspaceId, revision: str, name: str, *json_: str
) -> CompletedProcess[str]:
    """`memory apply` of a put of the record `name`, without the daemon."""
    record = {
        "name": name,
        "description": "Use uv, not pip",
        "type": "feedback",
        "content": "It is faster.\n",
    }
    changes = Path(workspace.cwd).with_name(f"{name}.json")
    changes.write_text(json.dumps([{"action": "put", "record": record}]))
    args = ["--cwd", workspace.cwd, "--expected-revision", revision, "--changes", str(changes), *json_]
    return remem(home, "--no-daemon", "memory", "apply", *args)


def _branch_damaged(home: Home, workspace: WorkspaceId) -> str:
    """A memory with one entry, its branch's file then emptied (a sync tool, a crash): the
    revision memory is at."""
    done = _apply(home, workspace, EMPTY, "prefer-uv", "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["history"] is not None, done
    os.truncate(home.root / "history" / "refs" / "heads" / f"ws-{workspace.key}", 0)
    return str(json.loads(done.stdout)["revision"])


def test_given_json_a_command_without_the_daemon_says_nothing_on_stderr(
    home: Home, workspace: WorkspaceId
) -> None:
    """The handlers' warnings were logged to stderr beside the JSON: a refusal was then two
    texts, where `--json` promises one object on stdout and nothing on stderr."""
    revision = _branch_damaged(home, workspace)
    logged = remem(home, "--no-daemon", "memory", "log", "--cwd", workspace.cwd, "--json")
    assert logged.returncode == 1 and logged.stderr == "", logged
    error = json.loads(logged.stdout)["error"]
    assert error["code"] == "HISTORY_REFUSED" and error["message"].endswith(REMEDY), error
    applied = _apply(home, workspace, revision, "prefer-pytest", "--json")
    assert applied.returncode == 0 and applied.stderr == "", applied
    assert json.loads(applied.stdout)["history"] is None, "memory commits, the history cannot record it"
    # Not lost: in the home's log, where the daemon logs it when it runs the command.
    lines = DaemonPaths(home).log.read_text().splitlines()
    branch = f"ws-{workspace.key}"
    assert any(f"memory history: could not record {branch} (the memory history" in line for line in lines), (
        lines
    )
    assert all(" [a command, pid " in line for line in lines), lines


def test_the_warning_of_a_damaged_history_keeps_its_remedy(home: Home, workspace: WorkspaceId) -> None:
    """remem's own reason was cut at 200 characters, mid-word, losing what to do about it."""
    revision = _branch_damaged(home, workspace)
    applied = _apply(home, workspace, revision, "prefer-pytest")
    assert applied.returncode == 0, applied
    said = f"remem: memory history: could not record ws-{workspace.key} (the memory history at "
    warning = next(line for line in applied.stderr.splitlines() if line.startswith(said))
    assert warning.endswith(f"corrupted loose reference file: refs/heads/ws-{workspace.key}); {REMEDY})"), (
        warning
    )
