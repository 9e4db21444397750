"""The session a workspace's "Consolidate" takes: the newest finished one of its own, never an
in-file branch (a path inside its session's file) or a subagent (reviewed with its parent)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.home import Home
from remem.daemon.protocol.sessions import FlatNode
from remem.lsp.consolidate import newest_finished
from tests.sessions.claude_lines import CWD, SID, jsonl
from tests.sessions.harness_roots import claude_project, conversation, write


def test_a_rewound_sessions_branch_is_not_the_workspaces_latest_session(home: Home, tmp_path: Path) -> None:
    root = tmp_path / "projects"
    write(claude_project(root) / f"{SID}.jsonl", jsonl(*conversation()))  # two turns, then a rewind
    command = ["--home", str(home.root), "--no-daemon", "sessions", "tree", "--cwd", CWD, "--root", str(root)]
    nodes = [
        FlatNode.model_validate(n)
        for n in json.loads(CliRunner().invoke(cli, [*command, "--json"]).stdout)["nodes"]
    ]
    branch = next(n for n in nodes if n.kind == "branch")
    assert branch.createdAt == next(n for n in nodes if n.id == SID).createdAt  # a tie the id broke
    latest = newest_finished(nodes)
    assert latest is not None and latest.id == SID
