"""A memory commit the file system refuses (a full disk) is refused as UNWRITABLE, exit 1, with or
without the daemon: nothing changes, no temp file stays, the daemon goes on serving, and the
retry once there is room commits with the history it should have (decision 0398).

The refusal is real, as in tests/forks/test_unwritable.py: the writing process (the CLI run
`--no-daemon`, or the daemon) runs under a file-size limit (`RLIMIT_FSIZE`) below the file it
writes, so its write fails with EFBIG as it would with ENOSPC. What is set up before is written
without the limit.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.fsutil import TEMP_MARKER
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.journal import JOURNAL_NAME
from remem.daemon.memory.record import INDEX_FILE
from remem.daemon.protocol import rpc
from remem.daemon.server.runtime import DaemonPaths

from .helpers import calls, wait_until

pytestmark = pytest.mark.slow
LIMIT = 4 * 1024  # above a small record, workspace.json and the daemon's own files; below the rest
LARGE = "word " * 1500 + "\n"  # a record body, or Global text, over LIMIT
MODES = ["no-daemon", "daemon"]


def limited() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))  # Python ignores SIGXFSZ: EFBIG


def remem(
    home: Home, *args: str, full: bool = False, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`remem ARGS`; `full`: under the limit, so the writes it makes itself are refused."""
    return subprocess.run(
        [sys.executable, "-m", "remem.daemon", "--home", str(home.root), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=limited if full else None,
    )


def full_disk(home: Home, mode: str, monkeypatch: pytest.MonkeyPatch) -> bool:
    """From now on the writer of memory has no room: the command itself (`--no-daemon`; whether
    each command runs limited), or a daemon started under the limit (the commands are not)."""
    if mode == "no-daemon":
        return True
    monkeypatch.delenv(NO_DAEMON_ENV)
    started = remem(home, "daemon", "start", full=True)
    assert started.returncode == 0, started.stderr
    return False


def cli_json(home: Home, *args: str, stdin: str | None = None) -> Any:
    done = remem(home, *args, "--json", stdin=stdin)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def revisions(home: Home, cwd: str) -> tuple[str, str]:
    shown = cli_json(home, "memory", "show", "--cwd", cwd)
    return shown["global"]["revision"], shown["workspace"]["revision"]


def put(name: str, content: str = "Why it matters.\n", description: str | None = None) -> dict[str, object]:
    record = {
        "name": name,
        "description": description or f"About {name}",
        "type": "project",
        "content": content,
    }
    return {"action": "put", "record": record}


def apply(
    home: Home, cwd: str, changes: list[dict[str, object]], *, full: bool = False
) -> subprocess.CompletedProcess[str]:
    revision = revisions(home, cwd)[1]
    args = ["memory", "apply", "--cwd", cwd, "--expected-revision", revision, "--changes", "-"]
    return remem(home, *args, full=full, stdin=json.dumps(changes))


def temps(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if TEMP_MARKER in p.name or p.name == JOURNAL_NAME)


def assert_refused(done: subprocess.CompletedProcess[str], folder: Path) -> None:
    """Exit 1, one line naming the error, the folder and what to do; never "a bug in remem"."""
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert done.stderr.startswith("remem: ") and done.stderr.count("\n") == 1, done.stderr
    assert f"{folder} refused a write (File too large), so nothing was changed there" in done.stderr
    assert "`ulimit -f`" in done.stderr and "bug" not in done.stderr


@pytest.fixture
def project(tmp_path: Path) -> str:
    (tmp_path / "project").mkdir()
    return str(tmp_path / "project")


@pytest.mark.parametrize("mode", MODES)
def test_a_batch_that_does_not_fit_changes_nothing_and_leaves_no_temp(
    home: Home, project: str, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert apply(home, project, [put("keep")]).returncode == 0
    folder = home.workspaces / WorkspaceId.from_cwd(project).key
    before, files = revisions(home, project), {p.name: p.read_bytes() for p in folder.iterdir()}
    full = full_disk(home, mode, monkeypatch)
    # The small record's temp is written before the large one's is refused: both go at once.
    refused = apply(home, project, [put("first"), put("large", LARGE)], full=full)
    assert_refused(refused, folder)
    assert temps(folder) == []
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == files
    assert revisions(home, project) == before  # through the daemon: it goes on serving
    if mode == "daemon":
        assert DaemonPaths(home).running()


@pytest.mark.parametrize("mode", MODES)
def test_a_new_workspace_that_does_not_fit_leaves_no_folder(
    home: Home, project: str, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    full = full_disk(home, mode, monkeypatch)
    refused = apply(home, project, [put("large", LARGE)], full=full)
    assert_refused(refused, home.workspaces / WorkspaceId.from_cwd(project).key)
    assert list(home.workspaces.iterdir()) == []


@pytest.mark.parametrize("mode", MODES)
def test_replace_global_that_does_not_fit_says_so_in_json(
    home: Home, project: str, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    revision = revisions(home, project)[0]
    full = full_disk(home, mode, monkeypatch)
    args = ["memory", "replace-global", "--expected-revision", revision, "--file", "-", "--json"]
    refused = remem(home, *args, full=full, stdin=LARGE)
    assert refused.returncode == 1, refused.stderr
    error = json.loads(refused.stdout)["error"]
    assert error["code"] == "UNWRITABLE" and error["errno"] == "EFBIG", error
    assert error["path"] == str(home.memory) and "nothing was changed" in error["message"]
    assert revisions(home, project)[0] == revision
    assert temps(home.memory) == [] and not home.global_file.exists()


@pytest.mark.parametrize("mode", MODES)
def test_a_revert_that_does_not_fit_is_refused(
    home: Home, project: str, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert apply(home, project, [put("large", LARGE)]).returncode == 0
    assert apply(home, project, [put("large")]).returncode == 0
    folder = home.workspaces / WorkspaceId.from_cwd(project).key
    log = cli_json(home, "memory", "log", "--cwd", project)["entries"]
    large = log[1]["id"]
    before = revisions(home, project)
    full = full_disk(home, mode, monkeypatch)
    assert_refused(remem(home, "memory", "revert", large, full=full), folder)
    assert revisions(home, project) == before and temps(folder) == []


@pytest.mark.parametrize("mode", MODES)
def test_an_index_that_does_not_fit_is_refused(
    home: Home, project: str, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 40 lines of about 230 bytes: an index over LIMIT, of records each under it.
    assert apply(home, project, [put(f"r{n:02}", description="d" * 200) for n in range(40)]).returncode == 0
    folder = home.workspaces / WorkspaceId.from_cwd(project).key
    (folder / INDEX_FILE).unlink()
    full = full_disk(home, mode, monkeypatch)
    assert_refused(remem(home, "memory", "reindex", "--cwd", project, full=full), folder)
    assert not (folder / INDEX_FILE).exists() and temps(folder) == []


@pytest.mark.parametrize("mode", MODES)
def test_the_retry_once_there_is_room_commits_with_its_history(
    home: Home, project: str, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert apply(home, project, [put("keep")]).returncode == 0
    full = full_disk(home, mode, monkeypatch)
    batch = [put("first"), put("large", LARGE)]
    assert apply(home, project, batch, full=full).returncode == 1
    if mode == "daemon":  # room again: a daemon without the limit
        assert remem(home, "daemon", "stop").returncode == 0
    assert apply(home, project, batch).returncode == 0
    log = cli_json(home, "memory", "log", "--cwd", project)["entries"]
    assert [entry["stat"]["added"] for entry in log] == [["first", "large"], ["keep"]]
    records = cli_json(home, "memory", "show", "--cwd", project)["workspace"]["records"]
    assert sorted(r["name"] for r in records) == ["first", "keep", "large"]
    assert os.path.getsize(home.workspaces / WorkspaceId.from_cwd(project).key / "large.md") > LIMIT


def test_an_agent_update_that_does_not_fit_is_unwritable_on_the_wire(
    home: Home, project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    global_revision, workspace_revision = revisions(home, project)
    full_disk(home, "daemon", monkeypatch)
    observed = {
        "workspace": WorkspaceId.from_cwd(project).key,
        "globalRevision": global_revision,
        "workspaceRevision": workspace_revision,
    }
    update = {
        "cwd": project,
        "observed": observed,
        "changes": [{"action": "replace-global", "content": LARGE}],
        "agent": {"session": "s1"},
    }
    [refused] = calls(home, [("agents/update", update)])
    assert isinstance(refused, rpc.RpcError) and refused.code == rpc.UNWRITABLE, refused
    assert refused.data == {"path": str(home.memory), "errno": "EFBIG"}
    assert "nothing was changed" in refused.message
    assert revisions(home, project)[0] == global_revision and temps(home.memory) == []


def test_a_hand_edit_the_daemon_cannot_index_for_want_of_room_is_a_warning(
    home: Home, project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon's reaction to the edit, an index past the limit, was logged as an ERROR with a
    traceback, three times over: a full disk is no bug of remem's."""
    assert apply(home, project, [put(f"r{n:02}", description="d" * 200) for n in range(40)]).returncode == 0
    folder = home.workspaces / WorkspaceId.from_cwd(project).key
    full_disk(home, "daemon", monkeypatch)
    record = folder / "r00.md"
    record.write_text(record.read_text().replace("d" * 200, "e" * 200))  # by hand
    log = home.state / "daemon.log"
    wait_until(lambda: "reacting to a change" in log.read_text(), seconds=30)
    said = log.read_text()
    assert "WARNING reacting to a change of" in said and "refused a write (File too large)" in said, said
    assert "ERROR" not in said and "Traceback" not in said, said
