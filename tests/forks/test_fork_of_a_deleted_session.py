"""A fork already made answers the same request with its child once its parent is deleted: the
operation's journal entry is consulted before the session is looked up (decision 0371)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.home import Home
from tests.sessions.factory import SessionSpec, build_session, write_session

CWD = "/home/dev/projects/demo"


def fork(home: Home, root: Path, *args: str) -> tuple[int, dict[str, Any]]:
    done = CliRunner().invoke(
        cli, ["--home", str(home.root), "sessions", "fork", *args, "--root", str(root), "--json"]
    )
    return done.exit_code, json.loads(done.stdout)


def test_a_dsh_fork_answers_its_child_once_its_parent_is_deleted(home: Home, tmp_path: Path) -> None:
    root = tmp_path / "root"
    draft = build_session(SessionSpec(seed=7, turns=3, cwd=CWD))
    log = write_session(root, draft)
    parent = draft.header.id
    code, made = fork(home, root, parent, "--op-id", "op", "--at", "0")
    assert code == 0 and made["created"], made

    shutil.rmtree(log.parent)
    code, again = fork(home, root, parent, "--op-id", "op", "--at", "0")
    assert code == 0, again
    assert again == {**made, "created": False}
    code, other = fork(home, root, parent, "--op-id", "op")
    assert code == 3 and other["error"]["code"] == "OP_CONFLICT", other
    code, fresh = fork(home, root, parent, "--op-id", "op-new", "--at", "0")
    assert code == 1 and fresh["error"]["code"] == "NOT_FOUND", fresh
