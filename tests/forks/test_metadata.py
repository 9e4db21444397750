"""Rename, archive and restore: remem-owned metadata with generation CAS, never a log rewrite."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.home import Home
from tests.sessions.factory import build_family, write_session

CWD = "/home/dev/projects/demo"


def run(home: Home, root: Path, *args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    result = CliRunner().invoke(
        cli, ["--home", str(home.root), "sessions", *args, "--root", str(root), "--json"]
    )
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, json.loads(result.stdout)


def tree(home: Home, root: Path) -> dict[str, dict]:  # type: ignore[type-arg]
    _, data = run(home, root, "tree", "--cwd", CWD)
    return {node["id"]: node for node in data["nodes"]}


@pytest.fixture
def family(home: Home, tmp_path: Path) -> tuple[Path, list[str]]:
    root = tmp_path / "root"
    drafts = build_family(13, cwd=CWD).drafts
    for draft in drafts:
        write_session(root, draft)
    return root, [d.header.id for d in drafts]


def digests(root: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in root.rglob("*") if p.is_file()}


def test_rename_archive_restore_with_generations(home: Home, family: tuple[Path, list[str]]) -> None:
    root, (main, fork, _) = family
    before = digests(root)
    code, renamed = run(home, root, "rename", fork, "  Try the\tother   approach ")
    assert code == 0 and renamed == {
        "id": fork,
        "title": "Try the other approach",
        "displayTitle": "Try the other approach",
        "archived": None,
        "generation": 1,
    }
    assert tree(home, root)[fork]["title"] == "Try the other approach"
    code, stale = run(home, root, "archive", fork, "--expected-generation", "0")
    assert code == 3 and stale["error"]["code"] == "STALE_GENERATION"
    code, archived = run(home, root, "archive", fork, "--expected-generation", "1")
    assert code == 0 and archived["archived"] is True and tree(home, root)[fork]["archived"] is True
    code, restored = run(home, root, "restore", fork)
    assert code == 0 and restored["generation"] == 3 and tree(home, root)[fork]["archived"] is False
    assert digests(root) == before, "no log is ever rewritten"
    _, listing = run(home, root, "list")
    assert {s["id"]: s["title"] for s in listing["sessions"]}[fork] == "Try the other approach"


def test_dsh_archive_list_is_honoured_and_overridable(
    home: Home, family: tuple[Path, list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, (main, _, child) = family
    dsh_home = tmp_path / "dsh"
    (dsh_home / "storages").mkdir(parents=True)
    registry = {"unit": {"name": "workspace", "version": 2}, "global": {"archivedSessionIds": [child]}}
    (dsh_home / "storages" / "workspace.json").write_text(json.dumps(registry))
    monkeypatch.setenv("DSH_HOME", str(dsh_home))
    assert tree(home, root)[child]["archived"] is True
    run(home, root, "restore", child)
    assert tree(home, root)[child]["archived"] is False
    assert json.loads((dsh_home / "storages" / "workspace.json").read_text()) == registry


@pytest.mark.parametrize(
    "registry",
    [
        {"global": {"archivedSessionIds": None}},
        {"global": {"archivedSessionIds": 3}},
        {"global": ["not", "an", "object"]},
        ["not", "an", "object"],
    ],
)
def test_a_dsh_archive_list_of_another_shape_archives_nothing(
    home: Home,
    family: tuple[Path, list[str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    registry: object,
) -> None:
    # DSH's file, read only: whatever it holds, the sessions still list, none archived by it.
    root, sessions = family
    dsh_home = tmp_path / "dsh"
    (dsh_home / "storages").mkdir(parents=True)
    (dsh_home / "storages" / "workspace.json").write_text(json.dumps(registry))
    monkeypatch.setenv("DSH_HOME", str(dsh_home))
    listed = tree(home, root)
    assert {i: listed[i]["archived"] for i in sessions} == dict.fromkeys(sessions, False)


def test_unknown_session_and_empty_title_are_refused(home: Home, family: tuple[Path, list[str]]) -> None:
    root, (main, _, _) = family
    code, data = run(home, root, "archive", "session-nope")
    assert code == 1 and data["error"]["code"] == "NOT_FOUND"
    code, data = run(home, root, "rename", main, "\x01 \t")
    assert code == 2 and data["error"]["code"] == "INVALID"


def test_fork_cli_shape_and_errors(home: Home, family: tuple[Path, list[str]]) -> None:
    root, (main, _, _) = family
    code, made = run(home, root, "fork", main, "--op-id", "cli-1", "--at", "0", "--title", "Branch A")
    assert code == 0 and set(made) == {"child", "seedLength", "forkTurn", "created"} and made["created"]
    assert tree(home, root)[made["child"]]["title"] == "Branch A"
    code, again = run(home, root, "fork", main, "--op-id", "cli-1", "--at", "0", "--title", "Branch A")
    assert code == 0 and again == {**made, "created": False}
    code, conflict = run(home, root, "fork", main, "--op-id", "cli-1", "--title", "Other")
    assert code == 3 and conflict["error"]["code"] == "OP_CONFLICT"
