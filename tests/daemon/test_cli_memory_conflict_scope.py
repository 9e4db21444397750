"""A memory command's conflict names the scope whose revision it found, and says when the
revision given is the other scope's: `remem memory show` prints Global's first, and copied into
`memory apply` it conflicted though nothing changed, again on every retry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId

pytestmark = pytest.mark.slow
EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
RECORD = {"name": "prefer-uv", "description": "Use uv", "type": "feedback", "content": "Faster.\n"}


def run(home: Home, *args: str, daemon: bool, stdin: str | None = None) -> tuple[int, str, str]:
    flags = [] if daemon else ["--no-daemon"]
    result = CliRunner().invoke(cli, ["--home", str(home.root), *flags, *args], input=stdin)
    assert not result.exception or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def show(home: Home, cwd: Path, daemon: bool) -> dict:  # type: ignore[type-arg]
    code, out, _ = run(home, "memory", "show", "--cwd", str(cwd), "--json", daemon=daemon)
    assert code == 0
    return json.loads(out)


@pytest.mark.parametrize("daemon", [True, False], ids=["daemon", "no-daemon"])
def test_a_conflict_names_its_scope_and_a_revision_of_the_other_scope(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, daemon: bool
) -> None:
    monkeypatch.delenv(NO_DAEMON_ENV)
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)  # replace-global compares with the workspace it runs in
    key = WorkspaceId.from_cwd(project).key
    text = tmp_path / "global.md"
    text.write_text("Answer briefly.\n")
    assert run(home, "memory", "replace-global", "--expected-revision", EMPTY, "--file", str(text),
               daemon=daemon)[0] == 0  # fmt: skip
    changes = json.dumps([{"action": "put", "record": RECORD}])
    apply = ["memory", "apply", "--cwd", str(project), "--changes", "-", "--expected-revision"]
    global_revision = show(home, project, daemon)["global"]["revision"]

    assert run(home, *apply, global_revision, daemon=daemon, stdin=changes) == (
        3,
        "",
        f"conflict: the memory of {project} ({key}) is at {EMPTY}, not {global_revision}; "
        f"{global_revision} is Global memory's revision; `memory apply` takes the workspace's "
        f"(see `remem memory show --cwd {project}`)\n",
    )
    assert run(home, *apply, EMPTY, daemon=daemon, stdin=changes)[0] == 0
    workspace_revision = show(home, project, daemon)["workspace"]["revision"]
    assert run(home, *apply, EMPTY, daemon=daemon, stdin=changes)[2] == (
        f"conflict: the memory of {project} ({key}) is at {workspace_revision}, not {EMPTY}; "
        f"re-read it (`remem memory show --cwd {project}`) and retry\n"
    )
    code, out, _ = run(home, *apply, EMPTY, "--json", daemon=daemon, stdin=changes)
    assert (code, json.loads(out)) == (
        3,
        {"status": "conflict", "revision": workspace_revision, "history": None},
    )

    replace = ["memory", "replace-global", "--file", str(text), "--expected-revision"]
    assert run(home, *replace, workspace_revision, daemon=daemon) == (
        3,
        "",
        f"conflict: Global memory is at {global_revision}, not {workspace_revision}; {workspace_revision} "
        f"is the revision of this workspace's memory ({key}); `memory replace-global` takes Global "
        "memory's (see `remem memory show`)\n",
    )
    assert run(home, *replace, EMPTY, daemon=daemon)[2] == (
        f"conflict: Global memory is at {global_revision}, not {EMPTY}; "
        "re-read it (`remem memory show`) and retry\n"
    )

    _, out, _ = run(home, "memory", "log", "--cwd", str(project), "--json", "--no-stat", daemon=daemon)
    [entry] = json.loads(out)["entries"]
    assert run(home, "memory", "revert", entry["id"], "--expected-revision", EMPTY, daemon=daemon) == (
        3,
        "",
        f"conflict: the memory of workspace {key} is at {workspace_revision}, not {EMPTY}; "
        "re-read it (`remem memory show`) and retry\n",
    )


@pytest.mark.parametrize("daemon", [True, False], ids=["daemon", "no-daemon"])
def test_a_race_lost_from_the_empty_revision_is_no_revision_of_the_other_scope(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, daemon: bool
) -> None:
    # In a fresh home both scopes hold nothing, so both are at the empty revision: a second
    # commit from it lost an ordinary race and was told it had copied the other scope's.
    monkeypatch.delenv(NO_DAEMON_ENV)
    monkeypatch.chdir(tmp_path)
    key = WorkspaceId.from_cwd(tmp_path).key
    changes = json.dumps([{"action": "put", "record": RECORD}])
    apply = ["memory", "apply", "--changes", "-", "--expected-revision", EMPTY]
    assert run(home, *apply, daemon=daemon, stdin=changes)[0] == 0
    now = show(home, tmp_path, daemon)["workspace"]["revision"]
    assert run(home, *apply, daemon=daemon, stdin=changes)[2] == (
        f"conflict: this workspace's memory ({key}) is at {now}, not {EMPTY}; "
        "re-read it (`remem memory show`) and retry\n"
    )

    other = tmp_path / "other"
    other.mkdir()
    monkeypatch.chdir(other)  # a workspace still empty, as Global is before its first replace
    text = tmp_path / "global.md"
    text.write_text("Answer briefly.\n")
    replace = ["memory", "replace-global", "--file", str(text), "--expected-revision", EMPTY]
    assert run(home, *replace, daemon=daemon)[0] == 0
    now = show(home, other, daemon)["global"]["revision"]
    assert run(home, *replace, daemon=daemon)[2] == (
        f"conflict: Global memory is at {now}, not {EMPTY}; re-read it (`remem memory show`) and retry\n"
    )


def test_a_conflict_in_a_folder_given_by_cwd_names_it_in_the_command_to_re_read(
    home: Home, tmp_path: Path
) -> None:
    # A bare `remem memory show` reads the shell's folder, another workspace than --cwd's.
    project = tmp_path / "my project"
    project.mkdir()
    key = WorkspaceId.from_cwd(project).key
    changes = json.dumps([{"action": "put", "record": RECORD}])
    apply = ["memory", "apply", "--cwd", str(project), "--changes", "-", "--expected-revision", EMPTY]
    assert run(home, *apply, daemon=False, stdin=changes)[0] == 0
    now = show(home, project, False)["workspace"]["revision"]
    assert run(home, *apply, daemon=False, stdin=changes)[2] == (
        f"conflict: the memory of {project} ({key}) is at {now}, not {EMPTY}; "
        f"re-read it (`remem memory show --cwd '{project}'`) and retry\n"
    )
