"""A Codex fork keeps its default title as a DSH or Claude Code fork does, also after its parent
is renamed. A rollout has no title record, so forking titles a Codex child in remem's metadata,
as a rename would (decision 0291): the title itself, not a match with the file's, tells."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.home import Home
from remem.daemon.sessions.lineage import LineageItem, build_tree

from .claude_lines import CWD
from .harness_roots import TID, build_roots


def item(
    session_id: str, parent: str | None, title: str | None, log_title: str | None, **extra: Any
) -> LineageItem:
    return LineageItem(
        id=session_id,
        title=title,
        parent=parent,
        origin=None,
        created_at=len(session_id),
        fork_turn=None if parent is None else 1,
        live=False,
        archived=False,
        log_title=log_title,
        **extra,
    )


def test_a_codex_fork_titled_by_forking_has_the_default_title_whatever_its_file_says() -> None:
    # A rollout's own title is its first prompt: the parent's, copied into the child.
    tree = build_tree(
        [
            item("parent", None, "Renamed since", "one", format="codex"),
            item("forked", "parent", "one (1)", "one", format="codex"),
            item("forked-again", "parent", "one (2)", "one", format="codex"),
            item("named-at-the-fork", "parent", "try a queue", "one", format="codex"),
            item("untitled", "parent", "one", "one", format="codex"),  # metadata unwritable at the fork
            item("dsh-renamed", "parent", "one (3)", "Fix it (1)"),  # a DSH rename is not its log's
        ]
    )
    defaults = {node.id: node.defaultTitle for node, _ in tree.walk() if node is not None}
    assert defaults == {
        "parent": False,
        "forked": True,
        "forked-again": True,
        "named-at-the-fork": False,
        "untitled": True,
        "dsh-renamed": False,
    }


def test_codex_branches_keep_their_default_title_when_their_parent_is_renamed(
    home: Home, tmp_path: Path
) -> None:
    roots = build_roots(tmp_path)

    def sessions(*args: str) -> str:
        extra = [f"--root={p}" for p in roots.values()]
        return CliRunner().invoke(cli, [f"--home={home.root}", "sessions", *args, *extra]).output

    def tree() -> dict[str, dict[str, Any]]:
        return {n["id"]: n for n in json.loads(sessions("tree", "--cwd", CWD, "--json"))["nodes"]}

    made = [json.loads(sessions("fork", TID, "--op-id", op, "--json"))["child"] for op in ("a", "b")]
    assert [(tree()[c]["title"], tree()[c]["defaultTitle"]) for c in made] == [("hi (1)", True)] * 2
    sessions("rename", TID, "Renamed 019c")
    after = tree()
    assert after[TID]["title"] == "Renamed 019c"
    assert [(after[c]["title"], after[c]["defaultTitle"]) for c in made] == [("hi (1)", True)] * 2
    sessions("rename", made[0], "my own name")
    assert [tree()[c]["defaultTitle"] for c in made] == [False, True]
