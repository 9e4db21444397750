"""The roots a user names (`--root`, `sessions.roots`): one level too deep is an error of that root
saying what the folder looks like and which to name; a relative `--root` is the command's own
folder's; a relative `sessions.roots` entry is refused (decision 0362)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.home import Home
from tests.sessions.factory import SessionSpec, build_session, write_session
from tests.sessions.harness_roots import SID, TID, build_roots, claude_project

CWD = "/home/dev/projects/demo"


def listed(home: Home, *args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    result = CliRunner().invoke(cli, ["--home", str(home.root), "sessions", "list", *args, "--json"])
    return result.exit_code, json.loads(result.stdout)


def test_a_folder_inside_a_root_is_an_error_naming_the_root_to_name(home: Home, tmp_path: Path) -> None:
    roots = build_roots(tmp_path)
    dsh = write_session(tmp_path / "dsh-root", build_session(SessionSpec(seed=5, turns=1, cwd=CWD)))
    project = claude_project(roots["claude-code"])
    year = roots["codex"] / "2026"
    expected = {
        project: "a Claude Code project folder (its *.jsonl are one workspace's sessions), not a session "
        f"root; name {roots['claude-code']}",
        year: f"a Codex year folder (sessions/YYYY), not a session root; name {roots['codex']}",
        year / "05": f"a Codex month folder (sessions/YYYY/MM), not a session root; name {roots['codex']}",
        dsh.parent.parent: f"a DSH project folder (it holds session folders), not a session root; "
        f"name {tmp_path / 'dsh-root'}",
        dsh.parent: f"one DSH session's folder, not a session root; name {tmp_path / 'dsh-root'}",
    }
    for folder, says in expected.items():
        code, answer = listed(home, "--root", str(folder))
        assert (code, answer["sessions"]) == (0, []), folder
        assert answer["errors"] == [
            {"path": str(folder), "message": f"looks like {says} as the root instead", "kind": "sessions"}
        ], folder
    # A root of settings.yml that names its format is told the same; the folders it names instead list.
    home.ensure_layout()
    home.settings_file.write_text(f"sessions:\n  roots: [{{path: '{project}', format: claude-code}}]\n")
    code, answer = listed(home)
    assert [e["path"] for e in answer["errors"]] == [str(project)] and answer["sessions"] == []
    home.settings_file.unlink()
    code, answer = listed(home, "--root", str(roots["claude-code"]), "--root", str(roots["codex"]))
    assert answer["errors"] == [] and {SID, TID} <= {s["id"] for s in answer["sessions"]}


def test_an_empty_or_foreign_folder_is_still_a_root(home: Home, tmp_path: Path) -> None:
    """Nothing there says it is inside another root: an empty folder is where remem writes DSH."""
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "readme.txt").write_text("hi")
    for folder in ("empty", "notes"):
        assert listed(home, "--root", str(tmp_path / folder)) == (0, {"sessions": [], "errors": []})


def test_a_relative_root_is_the_commands_own_folder(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    draft = build_session(SessionSpec(seed=6, turns=1, cwd=CWD))
    write_session(tmp_path / "mine", draft)
    monkeypatch.chdir(tmp_path)
    code, answer = listed(home, "--root", "mine")
    assert code == 0 and [s["id"] for s in answer["sessions"]] == [draft.header.id]


def test_a_relative_root_in_the_settings_is_refused(home: Home, tmp_path: Path) -> None:
    home.ensure_layout()
    home.settings_file.write_text("sessions:\n  roots: [dshroot]\n")
    result = CliRunner().invoke(cli, ["--home", str(home.root), "sessions", "list"])
    assert result.exit_code == 2
    assert result.stderr == (
        f"remem: INVALID: settings.yml is invalid: {home.settings_file}:2: sessions.roots.0: 'dshroot' is a "
        "relative path, which the daemon would look for from its own working folder, not this file's; "
        "write the absolute path (/…/dshroot) or one starting with ~\n"
    )


@pytest.mark.parametrize("named_in", ["--root", "settings"])
def test_a_root_named_through_a_link_to_dshs_folder_is_looked_in_once(
    home: Home, tmp_path: Path, named_in: str
) -> None:
    """The listing read DSH's folder once (the catalog's `unique_roots`), but "it looked in:"
    named it twice, by its path and by the link's."""
    dsh_sessions = tmp_path / "dsh" / "sessions"
    dsh_sessions.mkdir(parents=True)
    link = tmp_path / "dshlink"
    link.symlink_to(dsh_sessions)
    extra = ["--root", str(link)] if named_in == "--root" else []
    if named_in == "settings":
        home.ensure_layout()
        home.settings_file.write_text(f"sessions:\n  roots: ['{link}']\n")
    done = subprocess.run(
        [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "sessions", "list", *extra],
        capture_output=True,
        text=True,
        env={**os.environ, "DSH_HOME": str(tmp_path / "dsh"), "HOME": str(tmp_path)},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    looked = [line.strip() for line in done.stderr.splitlines() if line.startswith("  ")]
    first = str(dsh_sessions) + " (DSH's folder)" if named_in == "--root" else str(link)
    assert looked[:2] == [str(home.sessions), first], done.stderr
    assert [line for line in looked if line.startswith((str(dsh_sessions), str(link)))] == [first]
