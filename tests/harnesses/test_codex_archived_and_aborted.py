"""remem forks of a Codex thread with an aborted turn, after `codex archive` moved it to
`archived_sessions/`, and of its `codex exec fork` child, continued by the real Codex.

The parent's second turn is stopped by Ctrl-C while the model answers (`turn_aborted`); then
`codex exec fork` branches it and `codex archive` moves its rollout to the flat
`archived_sessions/` folder. The child still inherits the archived rollout's history (its
`history_base` names it). Each remem fork, resumed by `codex exec resume` with a new prompt,
must send the model exactly what its parent sent with the turn after the cut (that turn's prompt
swapped for the child's), and the archived rollout's bytes never change.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli

from .codex import Codex, CodexRun
from .fake_responses import FakeResponses, hang, text
from .requests import comparable
from .toolchain import RUN_TIMEOUT, interrupt

pytestmark = pytest.mark.slow


@dataclass
class Thread:
    cx: Codex
    fake: FakeResponses
    parent: CodexRun
    child: CodexRun  # `codex exec fork` of the parent after its turns 1 to 3
    archived: Path
    sent: dict[str, list[Any]]  # what was sent the model with each prompt but the first


@pytest.fixture(scope="module")
def thread(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Thread]:
    with FakeResponses() as fake:
        cx = Codex(tmp_path_factory.mktemp("archived"), fake)
        sent: dict[str, list[Any]] = {}

        def ask(prompt: str, *args: str) -> CodexRun:
            fake.reply(text(prompt.replace("question", "answer")))
            run = cx.exec(*args, prompt)
            sent[prompt] = fake.requests[-1]["input"]
            return run

        parent = ask("first question")
        fake.reply(hang())
        interrupt(
            cx.command("resume", parent.session_id, "stopped question"), cx.cwd, cx.env(), lambda: fake.count
        )
        sent["stopped question"] = fake.requests[-1]["input"]
        fake.drop_script()
        ask("third question", "resume", parent.session_id)
        child = ask("fork question", "fork", parent.session_id)
        ask("child again question", "resume", child.session_id)
        ask("fourth question", "resume", parent.session_id)
        archive = [str(cx.executable), "archive", parent.session_id]
        subprocess.run(
            archive, cwd=cx.cwd, env=cx.env(), check=True, capture_output=True, timeout=RUN_TIMEOUT
        )
        (archived,) = (cx.codex_home / "archived_sessions").glob(f"rollout-*-{parent.session_id}.jsonl")
        yield Thread(cx, fake, parent, child, archived, sent)


def remem(home: Path, root: Path, *args: str) -> dict[str, Any]:
    done = CliRunner().invoke(cli, ["--home", str(home), "sessions", *args, "--root", str(root), "--json"])
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_an_archived_codex_thread_lists_with_its_aborted_turn_and_its_fork_child(
    thread: Thread, tmp_path: Path
) -> None:
    root = thread.cx.codex_home
    listed = {s["id"]: s for s in remem(tmp_path, root, "list")["sessions"]}
    assert (listed[thread.parent.session_id]["kind"], listed[thread.parent.session_id]["turns"]) == (
        "root",
        4,
    )
    assert listed[thread.child.session_id]["parent"] == thread.parent.session_id
    turns = remem(tmp_path, root, "turns", thread.parent.session_id)["turns"]
    assert [(t["user"], t["status"], t["forkable"]) for t in turns] == [
        ("first question", "completed", True),
        ("stopped question", "aborted", True),
        ("third question", "completed", True),
        ("fourth question", "completed", True),
    ]


@pytest.mark.parametrize(
    ("session", "after", "next_prompt"),
    [
        ("parent", 1, "stopped question"),
        ("parent", 2, "third question"),
        ("parent", 3, "fourth question"),
        ("child", 1, "child again question"),
    ],
)
def test_a_remem_fork_resumes_with_exactly_what_its_parent_sent_next(
    thread: Thread, tmp_path: Path, session: str, after: int, next_prompt: str
) -> None:
    root, parent = thread.cx.codex_home, getattr(thread, session).session_id
    archived_bytes = thread.archived.read_bytes()
    turns = remem(tmp_path, root, "turns", parent)["turns"]
    assert turns[after]["user"] == next_prompt
    made = remem(
        tmp_path,
        root,
        "fork",
        parent,
        "--op-id",
        f"op-{session}-{after}",
        "--at",
        str(turns[after - 1]["endSeq"]),
    )
    assert made["forkTurn"] == after
    thread.fake.reply(text("child answer"))
    resumed = thread.cx.exec("resume", made["child"], "child question")
    assert resumed.session_id == made["child"]
    sent = thread.fake.requests[-1]["input"]
    assert comparable(sent, "child question") == comparable(thread.sent[next_prompt], next_prompt)
    assert thread.archived.read_bytes() == archived_bytes
