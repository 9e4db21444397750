"""A fork's review reads only the turns it added: the ones it copied from its parent are the
parent's, reviewed with it (decision 0380), in every format. The forks are remem's own, made by
`remem sessions fork` from hand-built parents, then continued as each harness appends."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.consolidation.evidence import project_evidence
from remem.daemon.consolidation.harness_source import observe
from remem.daemon.home import Home
from remem.daemon.sessions.reader import read_session
from tests.sessions.claude_lines import CWD, SID, jsonl, prompt, say
from tests.sessions.codex_lines import TID, meta, rollout, turn
from tests.sessions.factory import SessionSpec, build_session, fork_session, write_session
from tests.sessions.harness_roots import claude_project, write

NOTE = "This session is a branch of another session after that session's turn {n}"


def fork(home: Home, root: Path, session: str, after: int) -> tuple[str, Path]:
    """`remem sessions fork` after turn `after`: the child's id and its file."""
    command = ["--home", str(home.root), "--no-daemon", "sessions", "fork", session, "--op-id", "op"]
    done = CliRunner().invoke(cli, [*command, "--turn", str(after), "--root", str(root), "--json"])
    assert done.exit_code == 0, done.output
    child = json.loads(done.stdout)["child"]
    [path] = root.rglob(f"*{child}.jsonl")
    return child, path


def test_a_dsh_forks_evidence_is_its_own_turns(tmp_path: Path) -> None:
    parent = build_session(SessionSpec(seed=4, turns=3, cwd=CWD))
    child = fork_session(parent, SessionSpec(seed=5, turns=2, cwd=CWD), after_turn=2)
    evidence = project_evidence(read_session(write_session(tmp_path, child)))
    seed = read_session(write_session(tmp_path / "again", child)).header.seedLength
    assert seed and all(turn.range.fromSeq >= seed for turn in evidence.turns)
    assert [turn.turn for turn in evidence.turns] == [3, 4] and evidence.forkedAfter == 2
    assert evidence.render().startswith(NOTE.format(n=2))


def test_a_claude_code_forks_evidence_is_its_own_turns(home: Home, tmp_path: Path) -> None:
    root = tmp_path / "projects"
    parent = [prompt("u1", None, "first"), say("a1", "u1", "one"), prompt("u2", "a1", "second")]
    write(claude_project(root) / f"{SID}.jsonl", jsonl(*parent, say("a2", "u2", "two")))
    made, child = fork(home, root, SID, 2)
    assert observe("claude-code", child, 0).evidence().turns == []  # all of it is the parent's
    records = [json.loads(line) for line in child.read_bytes().splitlines()]
    last = [r["uuid"] for r in records if r["type"] == "assistant"][-1]  # a title line follows it
    own = [prompt("u9", last, "the fork's own"), say("a9", "u9", "its answer")]
    child.write_bytes(child.read_bytes() + jsonl(*({**r, "sessionId": made} for r in own)))
    evidence = observe("claude-code", child, 0).evidence()
    assert [(turn.turn, turn.user) for turn in evidence.turns] == [(3, ["the fork's own"])]
    assert evidence.forkedAfter == 2 and evidence.render().startswith(NOTE.format(n=2))


def test_a_codex_forks_evidence_is_its_own_turns(home: Home, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    parent = rollout(meta(cwd=CWD), *turn("t1", "first", "one"), *turn("t2", "second", "two"))
    write(root / "2026" / "05" / "01" / f"rollout-2026-05-01T00-00-00-{TID}.jsonl", parent)
    _, child = fork(home, root, TID, 1)
    assert observe("codex", child, 0).evidence().turns == []
    later = [{**record, "timestamp": "2099-01-01T00:00:00Z"} for record in turn("t9", "the fork's own", "ok")]
    child.write_bytes(child.read_bytes() + rollout(*later))
    evidence = observe("codex", child, 0).evidence()
    assert [(turn.turn, turn.user) for turn in evidence.turns] == [(2, ["the fork's own"])]
    assert evidence.forkedAfter == 1 and evidence.render().startswith(NOTE.format(n=1))
