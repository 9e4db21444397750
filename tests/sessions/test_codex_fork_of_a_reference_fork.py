"""Branching from a Codex fork that inherits its parent's lines by reference (`history_base`).

remem's child copies that fork's lines and keeps its `history_base` (decision 0079), so it
inherits the same lines of the same grandparent: its transcript opens with them, read from
the session the base names, not from the parent it copied."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.home import Home
from remem.daemon.sessions import harness_sources

from .claude_lines import CWD
from .codex_lines import first_rollouts, meta, rollout, turn
from .harness_roots import build_roots, write

D1, D2 = "019c0000-0000-7000-8000-0000000000d1", "019c0000-0000-7000-8000-0000000000d2"
TWO = [meta(D1, cwd=CWD), *turn("t1", "one", "1"), *turn("t2", "two", "2")]
BASE = {"thread_id": D1, "end_ordinal_exclusive": len(TWO)}
D1_LINES = rollout(*TWO, *turn("t3", "later in d1", "3"))
D2_LINES = rollout(
    meta(D2, cwd=CWD, forked_from_id=D1, history_base=BASE),
    *turn("t9", "mine", "9"),
    *turn("t10", "mine again", "10"),
)


def test_a_copy_that_kept_a_history_base_inherits_from_the_session_it_names() -> None:
    copy = harness_sources.codex_view(
        rollout(meta("019c-copy", cwd=CWD, forked_from_id=D2, history_base=BASE), *turn("t9", "mine", "9"))
    )
    assert (copy.parent, copy.fork_turn, copy.fork_at, copy.inherits_from) == (D2, None, len(TWO), D1)
    parts = harness_sources.inherited_history(copy, first_rollouts({D1: D1_LINES, D2: D2_LINES}))
    assert [(p.session, [t.prompt for t in p.turns]) for p in parts] == [(D1, ["one", "two"])]


def test_a_branch_of_a_reference_fork_shows_the_turns_it_inherits(home: Home, tmp_path: Path) -> None:
    roots = build_roots(tmp_path)
    day = roots["codex"] / "2026" / "05" / "03"
    write(day / f"rollout-2026-05-03T00-00-00-{D1}.jsonl", D1_LINES)
    write(day / f"rollout-2026-05-03T00-10-00-{D2}.jsonl", D2_LINES)

    def sessions(*args: str) -> str:
        extra = [f"--root={p}" for p in roots.values()]
        return CliRunner().invoke(cli, [f"--home={home.root}", "sessions", *args, *extra]).output

    made = json.loads(sessions("fork", D2, "--op-id", "branch", "--at", "2", "--json"))  # after D2's turn 1
    child = made["child"]
    headings = [line for line in sessions("show", child).splitlines() if line.startswith("#")]
    assert headings[1:] == [
        f"## Inherited from `{D1}`",
        "### Inherited turn 1 — completed — 2026-05-01T00:00:00Z",
        "### Inherited turn 2 — completed — 2026-05-01T00:00:00Z",
        "## Turn 1 — completed — 2026-05-01T00:00:00Z — inherited",  # copied from D2
    ]
    # What its parent shows of the same lines, as its own, and its turn 2 the child left out.
    parent = [line for line in sessions("show", D2).splitlines() if line.startswith("#")]
    assert parent[1:] == [
        *headings[1:4],
        "## Turn 1 — completed — 2026-05-01T00:00:00Z",
        "## Turn 2 — completed — 2026-05-01T00:00:00Z",
    ]
    nodes = {n["id"]: n for n in json.loads(sessions("tree", "--cwd", CWD, "--json"))["nodes"]}
    assert (nodes[D2]["parent"], nodes[D2]["forkTurn"]) == (D1, 2)
    # Numbered as D2's own turns are, by which its lenses and `sessions fork --at` branch it (0283).
    assert (nodes[child]["parent"], nodes[child]["kind"], nodes[child]["forkTurn"]) == (D2, "fork", 1)
