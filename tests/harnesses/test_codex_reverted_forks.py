"""Codex forks that were rewound, and Codex's ordinals in remem's forks, as the real Codex 0.163
wrote them (decision 0400).

A thread forked from another keeps its `forked_from_id` in every rollout a revert rotates it
to, so remem must join such a rollout with the history it continues as it joins any other. And
Codex numbers the lines it writes (each record's ``ordinal``) and counts those numbers in a
`history_base`, not lines: a remem fork keeps its parent's `session_meta` after its own, which
Codex numbers as the parent did, or not at all.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.sessions.formats.codex import ordinal_cut, turns_begun_before

from .codex import Codex
from .fake_responses import FakeResponses, text
from .requests import comparable

pytestmark = pytest.mark.slow


@dataclass
class Forks:
    """X: q1. Y = `codex exec fork X` (y1), y2, reverted before y2. G1 = remem's fork of X, g2;
    E = `codex exec fork G1` (e1). R1 = remem's fork of X, r2, r3, reverted before r3."""

    cx: Codex
    fake: FakeResponses
    home: Path
    ids: dict[str, str]
    sent: dict[str, list[Any]]  # the model's input for each prompt


def sessions(home: Path, root: Path, *args: str) -> Any:
    done = CliRunner().invoke(cli, ["--home", str(home), "sessions", *args, "--root", str(root), "--json"])
    return json.loads(done.output)


@pytest.fixture(scope="module")
def forks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Forks]:
    base = tmp_path_factory.mktemp("codex-reverted-forks")
    with FakeResponses() as fake:
        cx = Codex(base, fake)
        found = Forks(cx, fake, base / "remem", {}, {})

        def ask(prompt: str, *args: str) -> str:
            fake.reply(text(f"answer to {prompt}"))
            run = cx.exec(*args, prompt)
            found.sent[prompt] = fake.requests[-1]["input"]
            return run.session_id

        def fork(parent: str, op: str) -> str:
            return str(sessions(found.home, cx.sessions, "fork", parent, "--op-id", op)["child"])

        x = ask("q1")
        y = ask("y1", "fork", x)
        ask("y2", "resume", y)
        cx.revert(y, cx.turn_ids(y)[-1])
        g1 = fork(x, "op-g1")
        ask("g2", "resume", g1)
        e = ask("e1", "fork", g1)
        r1 = fork(x, "op-r1")  # reverted within its second, often: its name's time ties
        ask("r2", "resume", r1)
        ask("r3", "resume", r1)
        cx.revert(r1, cx.turn_ids(r1)[-1])
        found.ids = {"X": x, "Y": y, "G1": g1, "E": e, "R1": r1}
        yield found


def first_line(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text().splitlines()[0])["payload"])


@pytest.mark.parametrize(
    ("name", "parent", "turns", "next_prompt"),
    [("Y", "X", ["y1"], "y2"), ("R1", "X", ["q1", "r2"], "r3")],
)
def test_a_rewound_codex_fork_is_read_with_its_history_and_forks_as_codex_resumes_it(
    forks: Forks, name: str, parent: str, turns: list[str], next_prompt: str
) -> None:
    """`codex exec fork`'s child (Y) and remem's own fork (R1), each reverted: Codex copies the
    line-1 `forked_from_id` into the rollout it rotates the thread to, and that rollout still
    continues the thread's own history."""
    cx, home, ids = forks.cx, forks.home, forks.ids
    session = ids[name]
    assert len(list(cx.sessions.glob(f"*/*/*/rollout-*-{session}_*.jsonl"))) == 1  # rotated once
    listing = sessions(home, cx.sessions, "list")
    assert listing["errors"] == []
    (listed,) = [s for s in listing["sessions"] if s["id"] == session]
    assert (listed["turns"], listed["parent"], listed["problems"]) == (len(turns), ids[parent], 0)
    listed_turns = sessions(home, cx.sessions, "turns", session)["turns"]
    assert [(t["user"], t["status"], t["forkable"]) for t in listed_turns] == [
        (prompt, "completed", True) for prompt in turns
    ]
    done = sessions(home, cx.sessions, "fork", session, "--op-id", f"op-fork-{name}")
    assert done["forkTurn"] == len(turns)
    forks.fake.reply(text("child answer"))
    cx.exec("resume", done["child"], "child question")
    sent = forks.fake.requests[-1]["input"]
    assert comparable(sent, "child question") == comparable(forks.sent[next_prompt], next_prompt)


def test_a_codex_fork_of_a_remem_fork_inherits_up_to_the_ordinal_codex_numbered(forks: Forks) -> None:
    """G1 has its own `session_meta`, then X's (numbered 0), then X's lines and its own: E's
    `history_base` counts Codex's numbers, and its byte offset is where that count ends."""
    cx, ids = forks.cx, forks.ids
    parent = cx.rollout(ids["G1"]).read_bytes()
    base = first_line(cx.rollout(ids["E"]))["history_base"]
    assert parent.count(b'"type":"session_meta"') == 2
    assert base["end_ordinal_exclusive"] < parent.count(b"\n")  # not a count of lines
    assert ordinal_cut(parent, base["end_ordinal_exclusive"])[0] is None  # E inherits all of G1
    assert base["end_byte_offset"] == len(parent)
    assert turns_begun_before(parent, base["end_ordinal_exclusive"]) == 2
    numbered = [json.loads(line).get("ordinal") for line in parent.splitlines()]
    started = [n for n, line in zip(numbered, parent.splitlines(), strict=True) if b'"task_started"' in line]
    for index, ordinal in enumerate(started):  # turn `index + 1` begins at Codex's `ordinal`
        assert turns_begun_before(parent, ordinal) == index
        assert turns_begun_before(parent, ordinal + 1) == index + 1
    tree = sessions(forks.home, cx.sessions, "tree", "--cwd", str(cx.cwd))
    nodes = {n["id"]: n for n in tree["nodes"]}
    assert (nodes[ids["E"]]["parent"], nodes[ids["E"]]["forkTurn"]) == (ids["G1"], 2)


def test_a_remem_fork_of_a_codex_fork_child_names_no_ordinal_of_another_parent(forks: Forks) -> None:
    """E's line 1 says where in G1 Codex forked it (`forked_from_ordinal_exclusive`); a remem
    fork of E names E as its parent and copies E's lines, so it keeps no such ordinal."""
    cx, ids = forks.cx, forks.ids
    own = first_line(cx.rollout(ids["E"]))
    upto = own["history_base"]["end_ordinal_exclusive"]
    assert (own["forked_from_id"], own["forked_from_ordinal_exclusive"]) == (ids["G1"], upto)
    done = sessions(forks.home, cx.sessions, "fork", ids["E"], "--op-id", "op-fork-E")
    child = first_line(cx.rollout(done["child"]))
    assert child["forked_from_id"] == ids["E"]
    assert "forked_from_ordinal_exclusive" not in child
    assert child["history_base"] == own["history_base"]  # still inherits G1's lines (decision 0079)
    forks.fake.reply(text("child answer"))
    cx.exec("resume", done["child"], "child question")
    sent = forks.fake.requests[-1]["input"]
    assert '"e1"' in json.dumps(sent) and '"g2"' in json.dumps(sent) and '"q1"' in json.dumps(sent)


def test_a_codex_fork_of_a_remem_fork_shows_the_turns_it_inherits_as_they_ended(forks: Forks) -> None:
    """E's transcript cut G1 after as many lines as Codex's ordinal: short of G1's second turn's
    end, which it showed "not finished"."""
    args = ["--home", str(forks.home), "sessions", "show", forks.ids["E"], "--root", str(forks.cx.sessions)]
    shown = CliRunner().invoke(cli, args).output
    inherited = [line for line in shown.splitlines() if line.startswith("### Inherited turn")]
    assert len(inherited) == 2 and not any("not finished" in line for line in inherited), shown
