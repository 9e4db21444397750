"""Codex forks of a thread that a revert rotated to a new rollout, as the real Codex wrote
them (decision 0403).

`codex exec fork` copies none of its parent's lines: its `history_base` names the parent's
rollout (a rollout id) and the ordinal it inherits up to. A revert of the parent rotates it to
a new rollout whose ordinals start again where it cut: a fork made before the revert still
inherits the old rollout's lines, the turns the revert abandoned included; one made after it
names the new rollout. remem read the fork turn and the inherited turns in the parent's current
rollout by the thread's id: wrong for the first, nothing for the second.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.sessions.harness_transcript import NOT_AT_HAND

from .codex import Codex
from .fake_responses import FakeResponses, text
from .test_codex_reverted_forks import sessions

pytestmark = pytest.mark.slow


@dataclass
class Threads:
    """X: q1, q2, q3. BEFORE = `codex exec fork X` (b1). X reverted before q2, then q4.
    AFTER = `codex exec fork X` (a1)."""

    cx: Codex
    fake: FakeResponses
    home: Path
    ids: dict[str, str]


@pytest.fixture(scope="module")
def threads(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Threads]:
    base = tmp_path_factory.mktemp("codex-forks-of-reverted")
    with FakeResponses() as fake:
        cx = Codex(base, fake)

        def ask(prompt: str, *args: str) -> str:
            fake.reply(text(f"answer to {prompt}"))
            return cx.exec(*args, prompt).session_id

        x = ask("q1")
        ask("q2", "resume", x)
        ask("q3", "resume", x)
        before = ask("b1", "fork", x)
        cx.revert(x, cx.turn_ids(x)[1])
        ask("q4", "resume", x)
        after = ask("a1", "fork", x)
        yield Threads(cx, fake, base / "remem", {"X": x, "BEFORE": before, "AFTER": after})


def _transcript(home: Path, root: Path, session: str) -> list[str]:
    command = ["--home", str(home), "sessions", "show", session, "--root", str(root)]
    return CliRunner().invoke(cli, command).output.splitlines()


def _codex_context(threads: Threads, session: str) -> list[str]:
    """The prompts Codex itself sends the model when it resumes `session`, before the new one."""
    threads.fake.reply(text("resumed"))
    threads.cx.exec("resume", session, "next")
    sent = json.dumps(threads.fake.requests[-1]["input"])
    return [q for q in ("q1", "q2", "q3", "q4") if f"answer to {q}" in sent]


@pytest.mark.parametrize(("name", "inherits"), [("BEFORE", ["q1", "q2", "q3"]), ("AFTER", ["q1", "q4"])])
def test_a_fork_of_a_reverted_parent_inherits_what_codex_resumes_it_with(
    threads: Threads, name: str, inherits: list[str]
) -> None:
    cx, home, ids = threads.cx, threads.home, threads.ids
    session = ids[name]
    assert len(list(cx.sessions.glob(f"*/*/*/rollout-*-{ids['X']}_*.jsonl"))) == 1  # X rotated once
    nodes = {n["id"]: n for n in sessions(home, cx.sessions, "tree", "--cwd", str(cx.cwd))["nodes"]}
    assert (nodes[session]["parent"], nodes[session]["forkTurn"]) == (ids["X"], len(inherits))
    shown = _transcript(home, cx.sessions, session)
    inherited = [line[2:] for line in shown if line.startswith("> q")]
    assert inherited == inherits, shown
    assert f"## Inherited from `{ids['X']}`" in shown
    assert _codex_context(threads, session) == inherits  # what the harness itself resumes


@pytest.mark.parametrize(("name", "base"), [("BEFORE", "{X}.jsonl"), ("AFTER", "{X}_*.jsonl")])
def test_a_fork_whose_base_rollout_is_gone_names_its_parent_and_claims_no_turn(
    threads: Threads, tmp_path: Path, name: str, base: str
) -> None:
    """The parent is listed (one of its rollouts is there), the rollout the fork's base names is
    not: the transcript named that rollout's id as a session "not among the listed sessions"."""
    cx, ids = threads.cx, threads.ids
    root = tmp_path / "sessions"
    shutil.copytree(cx.sessions, root)
    (gone,) = root.glob(f"*/*/*/rollout-*-{base.format(X=ids['X'])}")
    gone.unlink()
    shown = _transcript(tmp_path / "remem", root, ids[name])
    assert f"## Inherited from `{ids['X']}`" in shown and NOT_AT_HAND in shown, shown
    assert not any(line.startswith("### Inherited turn") for line in shown)
    nodes = {n["id"]: n for n in sessions(tmp_path / "remem", root, "tree", "--cwd", str(cx.cwd))["nodes"]}
    assert nodes[ids[name]]["forkTurn"] is None, "no fork turn is claimed"
