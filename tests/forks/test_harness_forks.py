"""Forks of Claude Code and Codex sessions: the child's shape, exactly once, refusals, crashes.

The parents are hand-made in the harnesses' shapes (tests/harnesses resumes real children
with the real CLIs). Every test also checks that the parent's bytes never change.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from remem.daemon.faults import EXIT_CODE, POINTS
from remem.daemon.forks.harness_service import HarnessForkRequest, HarnessForks, child_id
from remem.daemon.fsutil import is_temp_name
from remem.daemon.home import Home
from remem.daemon.sessions.errors import OperationError
from remem.daemon.sessions.formats.claude_code import read_transcript
from remem.daemon.sessions.formats.codex import read_rollout
from remem.daemon.sessions.reader import file_revision
from tests.forks.points import BEFORE_PUBLISH

from ..sessions.claude_lines import SID, jsonl, prompt, rec, result, say, use
from ..sessions.codex_lines import TID, call, event, message, meta, output, rollout, turn

REPO = Path(__file__).resolve().parents[2]


def claude_parent(tmp_path: Path) -> Path:
    path = tmp_path / "claude" / "projects" / "-home-u-proj" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(
        jsonl(
            {"type": "queue-operation", "operation": "enqueue", "sessionId": SID},
            prompt("u1", None, "first question"),
            use("t1", "u1", "c1"),
            use("t2", "t1", "c2"),
            rec("progress", "p1", "t2"),
            result("r1", "t1", "c1"),
            result("r2", "p1", "c2"),
            say("a1", "r2", "first answer"),
            {"type": "content-replacement", "sessionId": SID, "replacements": [{"kind": "x"}]},
            prompt("u2", "a1", "second question"),
            say("a2", "u2", "second answer"),
            prompt("u3", "a2", "third question"),
            use("t3", "u3", "c3"),  # the last turn is still open
        )
    )
    return path


def codex_parent(tmp_path: Path) -> Path:
    path = tmp_path / "codex" / "sessions" / "2026" / "05" / "01" / f"rollout-2026-05-01T00-00-00-{TID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(
        rollout(
            meta(model_provider="openai"),
            *turn("t1", "first question", "first answer", call("c1"), output("c1")),
            *turn("t2", "second question", "second answer"),
            event("task_started", turn_id="t3"),
            message("user", "third question"),
        )
    )
    return path


PARENTS = {"claude-code": claude_parent, "codex": codex_parent}


@pytest.fixture(params=sorted(PARENTS))
def parent(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Path]:
    return request.param, PARENTS[request.param](tmp_path)


def fork(home: Home, harness: str, path: Path, op: str = "op", **fields: object):
    return HarnessForks(home).fork(
        HarnessForkRequest(harness=harness, path=str(path), operationId=op, **fields)
    )


def read_child(harness: str, path: Path):
    data = path.read_bytes()
    return read_transcript(data, path.name) if harness == "claude-code" else read_rollout(data)


def test_a_claude_code_child_is_the_sdk_shape_in_the_parents_folder(home: Home, tmp_path: Path) -> None:
    parent = claude_parent(tmp_path)
    before = parent.read_bytes()
    done = fork(home, "claude-code", parent, afterTurn=2)
    child = Path(done.path)
    assert (child.parent, child.name, done.child) == (parent.parent, f"{done.child}.jsonl", child_id("op"))
    assert done.resume == ["claude", "--resume", done.child] and done.created
    records = [json.loads(line) for line in child.read_text().splitlines()]
    conversation = [r for r in records if r.get("forkedFrom")]
    assert {r["forkedFrom"]["sessionId"] for r in conversation} == {SID}
    assert [r["forkedFrom"]["messageUuid"] for r in conversation] == [
        "u1",
        "t1",
        "t2",
        "r1",
        "r2",
        "a1",
        "u2",
        "a2",
    ]
    assert {r["sessionId"] for r in records} == {done.child}
    assert not {r["uuid"] for r in conversation} & {"u1", "t1", "t2", "r1", "r2", "a1", "u2", "a2"}
    by_old = {r["forkedFrom"]["messageUuid"]: r for r in conversation}
    assert by_old["r2"]["parentUuid"] == by_old["t2"]["uuid"]  # the progress line is skipped
    assert [r["type"] for r in records[-2:]] == ["content-replacement", "custom-title"]
    assert records[-1]["customTitle"] == "first question (1)" and done.seedLength == 8
    read = read_transcript(child.read_bytes(), child.name)
    assert [(t.prompt, t.answer) for t in read.turns] == [
        ("first question", "first answer"),
        ("second question", "second answer"),
    ]
    assert read.title == "first question (1)" and read.problems == ()
    assert [(e.kind, e.parent) for e in read.lineage] == [("fork", SID)]
    assert parent.read_bytes() == before and (child.stat().st_mode & 0o777) == 0o600


def test_a_claude_code_child_renames_every_reference_to_an_inherited_record(
    home: Home, tmp_path: Path
) -> None:
    parent = tmp_path / "projects" / "-w" / f"{SID}.jsonl"
    parent.parent.mkdir(parents=True)
    preserved = {"preservedSegment": {"headUuid": "a1", "anchorUuid": "s1", "tailUuid": "a1"}}
    parent.write_bytes(
        jsonl(
            prompt("u1", None, "before"),
            say("a1", "u1", "kept verbatim"),
            rec(
                "system",
                "b1",
                None,
                subtype="compact_boundary",
                logicalParentUuid="a1",
                compactMetadata=preserved,
            ),
            prompt("s1", "b1", "summary", isCompactSummary=True),
            prompt("u2", "s1", "after"),
            say("a2", "u2", "answer"),
        )
    )
    done = fork(home, "claude-code", parent, afterTurn=2)
    records = {
        r["forkedFrom"]["messageUuid"]: r
        for r in map(json.loads, Path(done.path).read_text().splitlines())
        if "forkedFrom" in r
    }
    boundary = records["b1"]
    assert boundary["parentUuid"] is None and boundary["logicalParentUuid"] == records["a1"]["uuid"]
    assert boundary["compactMetadata"]["preservedSegment"] == {
        "headUuid": records["a1"]["uuid"],
        "anchorUuid": records["s1"]["uuid"],
        "tailUuid": records["a1"]["uuid"],
    }
    assert records["a1"]["message"]["content"] == [{"type": "text", "text": "kept verbatim"}]


def test_a_codex_child_is_a_new_meta_then_the_parents_bytes_through_the_turn(
    home: Home, tmp_path: Path
) -> None:
    parent = codex_parent(tmp_path)
    before = parent.read_bytes()
    done = fork(home, "codex", parent, afterTurn=2)
    child = Path(done.path)
    assert child.parents[3] == parent.parents[3] and child.name.endswith(f"-{done.child}.jsonl")
    # Codex's interactive resume, which waits for the next prompt (decision 0438).
    assert done.resume == ["codex", "resume", done.child]
    first, rest = child.read_bytes().split(b"\n", 1)
    meta_payload = json.loads(first)["payload"]
    assert (meta_payload["id"], meta_payload["forked_from_id"], meta_payload["cwd"]) == (
        done.child,
        TID,
        "/w",
    )
    assert meta_payload["model_provider"] == "openai"
    assert before.startswith(rest) and rest.endswith(b'"task_complete", "turn_id": "t2"}}\n')
    read = read_rollout(child.read_bytes())
    assert (read.session_id, [t.prompt for t in read.turns]) == (
        done.child,
        ["first question", "second question"],
    )
    assert [(e.kind, e.parent) for e in read.lineage] == [("fork", TID)]
    assert parent.read_bytes() == before


def test_the_same_operation_gives_the_same_child_and_a_different_request_conflicts(
    home: Home, parent: tuple[str, Path]
) -> None:
    harness, path = parent
    first = fork(home, harness, path, afterTurn=1)
    again = fork(home, harness, path, afterTurn=1)
    assert first.created and not again.created and (again.child, again.path) == (first.child, first.path)
    with pytest.raises(OperationError) as caught:
        fork(home, harness, path, afterTurn=2)
    assert caught.value.code == "OP_CONFLICT"
    assert f"already made the fork {first.child} of " in caught.value.message
    assert "after its turn 1" in caught.value.message


def test_an_operation_id_whose_codex_child_exists_elsewhere_is_refused(home: Home, tmp_path: Path) -> None:
    """Another remem home (or this one before its fork journal was lost) made a child of this id:
    a second rollout of one session id would leave Codex resuming either."""
    parent = codex_parent(tmp_path)
    first = fork(Home(tmp_path / "other-home"), "codex", parent, afterTurn=1)
    with pytest.raises(OperationError) as caught:
        fork(home, "codex", parent, afterTurn=2)
    assert caught.value.code == "OP_CONFLICT" and f"({first.path})" in str(caught.value)
    rollouts = sorted(parent.parents[3].rglob(f"rollout-*-{first.child}.jsonl"))
    assert rollouts == [Path(first.path)]
    assert fork(home, "codex", parent, op="another", afterTurn=2).created


def test_the_default_cut_is_the_last_forkable_turn(home: Home, parent: tuple[str, Path]) -> None:
    harness, path = parent
    done = fork(home, harness, path)
    assert done.forkTurn == 2 and len(read_child(harness, Path(done.path)).turns) == 2


@pytest.mark.parametrize(("turn_index", "code"), [(3, "OPEN_TURN"), (9, "INVALID_ANCHOR")])
def test_an_open_or_missing_turn_is_refused_and_nothing_is_written(
    home: Home, parent: tuple[str, Path], turn_index: int, code: str
) -> None:
    harness, path = parent
    files = sorted(path.parent.parent.rglob("*"))
    with pytest.raises(OperationError) as caught:
        fork(home, harness, path, afterTurn=turn_index)
    assert caught.value.code == code
    assert sorted(path.parent.parent.rglob("*")) == files


def test_a_stale_revision_and_a_symlinked_parent_are_refused(home: Home, parent: tuple[str, Path]) -> None:
    harness, path = parent
    with pytest.raises(OperationError) as stale:
        fork(home, harness, path, expectedRevision="0:0:0:0:0")
    assert stale.value.code == "STALE_SOURCE"
    assert fork(home, harness, path, op="fresh", expectedRevision=file_revision(path)).created
    link = path.with_name("link-" + path.name)
    link.symlink_to(path)
    with pytest.raises(OperationError) as linked:
        fork(home, harness, link, op="via-link")
    assert linked.value.code == "INVALID"


FORK_POINTS = sorted(p for p in POINTS if p.startswith("fork."))


def run_driver(
    home: Home, harness: str, path: Path, op: str, point: str = ""
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "REMEM_FAULTPOINT": point}
    command = [sys.executable, "-m", "tests.forks.harness_driver", str(home.root), harness, str(path), op]
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.slow
@pytest.mark.parametrize("point", FORK_POINTS)
def test_crash_at_every_point_then_retry_gives_one_complete_child(
    home: Home, parent: tuple[str, Path], point: str
) -> None:
    harness, path = parent
    before = path.read_bytes()
    crashed = run_driver(home, harness, path, "op-crash", point)
    assert crashed.returncode == EXIT_CODE, crashed.stderr
    retried = run_driver(home, harness, path, "op-crash")
    assert retried.returncode == 0, retried.stderr
    done = json.loads(retried.stdout)
    assert done["created"] is (point in BEFORE_PUBLISH)
    tree = path.parent.parent.parent.parent
    children = [p for p in tree.rglob("*.jsonl") if p != path]
    assert children == [Path(done["path"])]
    child = read_child(harness, children[0])
    assert child.problems == () and len(child.turns) == 2
    assert [p for p in tree.rglob("*") if is_temp_name(p.name)] == []
    assert path.read_bytes() == before
    assert json.loads(run_driver(home, harness, path, "op-crash").stdout)["created"] is False


def test_a_claude_child_path_that_holds_no_readable_session_is_a_conflict(home: Home, tmp_path: Path) -> None:
    """The child's place taken by what is no session file (a FIFO here) is refused at once,
    never waited on."""
    parent = claude_parent(tmp_path)
    first = fork(Home(tmp_path / "other-home"), "claude-code", parent, afterTurn=1)
    child = Path(first.path)
    child.unlink()
    os.mkfifo(child)
    with pytest.raises(OperationError) as caught:
        fork(home, "claude-code", parent, afterTurn=1)
    assert caught.value.code == "OP_CONFLICT" and str(child) in str(caught.value)


def test_a_line_with_bytes_not_utf8_in_a_field_skipped_is_forked_as_the_listing_reads_it(
    home: Home, tmp_path: Path
) -> None:
    """Bad bytes inside a line's `attachment` (a field the reader skips) once passed the reader,
    then failed the fork's copy of that line with a traceback, the journal left `prepared`. The
    line is read, and copied, with U+FFFD for its bad bytes, as Claude Code reads it (0415)."""
    path = tmp_path / "claude" / "projects" / "-home-u-proj" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True)
    side = json.dumps(rec("attachment", "x1", "t1", attachment={"type": "hook"})).encode()
    side = side.replace(b'"attachment": {', b'"attachment": {"k\xff": "\xfe", ')
    lines = [
        prompt("u1", None, "first question"),
        use("t1", "u1", "c1"),
        side,  # beside the turn's path, so a fork of turn 1 or 2 copies it
        result("r1", "t1", "c1"),
        say("a1", "r1", "first answer"),
        prompt("u2", "a1", "second question"),
        say("a2", "u2", "second answer"),
    ]
    path.write_bytes(b"".join(line + b"\n" if isinstance(line, bytes) else jsonl(line) for line in lines))
    before = path.read_bytes()
    listed = read_transcript(before, path.name)
    assert [(p.line, p.code) for p in listed.problems] == [(3, "replaced-utf8")] and len(listed.turns) == 2
    done = fork(home, "claude-code", path)
    child = read_child("claude-code", Path(done.path))
    assert done.forkTurn == 2 and [t.prompt for t in child.turns] == [t.prompt for t in listed.turns]
    assert b"\xff" not in Path(done.path).read_bytes() and child.problems == ()
    assert '"k\ufffd":"\ufffd"' in Path(done.path).read_text(encoding="utf-8")
    assert path.read_bytes() == before


def test_a_rollout_whose_session_meta_is_not_utf8_in_a_field_skipped_is_refused_before_anything_is_written(
    home: Home, tmp_path: Path
) -> None:
    path = codex_parent(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data.replace(b'"cwd"', b'"base_instructions": {"text": "\xff\xfe"}, "cwd"', 1))
    files = sorted(path.parent.parent.rglob("*"))
    for op in ("op", "op"):  # and the same again: nothing was left prepared
        with pytest.raises(OperationError) as refused:
            fork(home, "codex", path, op=op)
        assert refused.value.code == "INVALID"
        assert "no session_meta line opens the rollout (line 1 is not UTF-8 text" in str(refused.value)
    assert sorted(path.parent.parent.rglob("*")) == files
    assert not list((home.root / "state").rglob("forks/**/*.json"))  # no journal entry was prepared


@pytest.mark.slow
def test_a_retried_fork_carries_a_replacement_line_not_utf8_as_a_fresh_one_does(
    home: Home, tmp_path: Path
) -> None:
    """A fresh fork reads a `content-replacement` line whose bytes are not UTF-8 with U+FFFD and
    copies it; the retry of a prepared attempt read the same line strictly and dropped it, so one
    operation id could make two different children."""
    path = claude_parent(tmp_path)
    path.write_bytes(
        path.read_bytes()
        .replace(b'"kind": "x"', b'"kind": "x\xff"')
        .replace(b'"kind":"x"', b'"kind":"x\xff"')
    )
    assert b"\xff" in path.read_bytes()
    crashed = run_driver(home, "claude-code", path, "op-crash", "fork.after-prepare")
    assert crashed.returncode == EXIT_CODE, crashed.stderr
    retried = json.loads(run_driver(home, "claude-code", path, "op-crash").stdout)
    fresh = json.loads(run_driver(home, "claude-code", path, "op-fresh").stdout)

    def replacements(child: str) -> list[object]:
        lines = [json.loads(line) for line in Path(child).read_text().splitlines()]
        return [line["replacements"] for line in lines if line["type"] == "content-replacement"]

    assert replacements(retried["path"]) == replacements(fresh["path"]) == [[{"kind": "x\ufffd"}]]
