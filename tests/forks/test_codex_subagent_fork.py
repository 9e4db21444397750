"""A fork of a Codex subagent is a branch of it, never another subagent: its `session_meta`
drops what marks the subagent Codex spawned (a fork Codex makes takes the source of the process
that forks, never its parent's), and a reader tells such a fork from a subagent even when an
older child kept the marker."""

from __future__ import annotations

import json
from pathlib import Path

from remem.daemon.forks.harness_service import HarnessForkRequest, HarnessForks
from remem.daemon.home import Home
from remem.daemon.sessions.formats.codex import read_rollout
from remem.daemon.sessions.harness_sources import codex_view

from ..sessions.codex_lines import meta, rollout, turn

BOSS = "019c0000-0000-7000-8000-0000000000b0"
SUB = "019c0000-0000-7000-8000-0000000000e2"
SPAWN = {"subagent": {"thread_spawn": {"parent_thread_id": BOSS, "depth": 1, "agent_nickname": "Ada"}}}


def subagent_meta(**extra: object) -> dict[str, object]:
    return meta(
        SUB,
        source=SPAWN,
        agent_nickname="Ada",
        agent_role="explorer",
        model_provider="openai",
        base_instructions={"text": "be brief"},
        **extra,
    )


def fork_of(home: Home, folder: Path, first: dict[str, object]) -> dict[str, object]:
    """The `session_meta` payload of a fork after turn 1 of a rollout whose line 1 is `first`."""
    parent = folder / "sessions" / "2026" / "05" / "02" / f"rollout-2026-05-02T00-00-00-{SUB}.jsonl"
    parent.parent.mkdir(parents=True)
    parent.write_bytes(rollout(first, *turn("t1", "sub task", "done")))
    done = HarnessForks(home).fork(
        HarnessForkRequest(harness="codex", path=str(parent), operationId=str(folder), afterTurn=1)
    )
    child = Path(done.path).read_bytes()
    assert read_rollout(child).session_id == done.child
    return json.loads(child.split(b"\n", 1)[0])["payload"]


def test_a_fork_of_a_codex_subagent_says_it_was_forked_not_spawned(home: Home, tmp_path: Path) -> None:
    payload = fork_of(home, tmp_path / "spawned", subagent_meta(parent_thread_id=BOSS))
    assert payload["forked_from_id"] == SUB
    assert payload["source"] == "exec"  # what `codex exec` writes for a fork it makes
    assert not {"agent_nickname", "agent_role", "parent_thread_id"} & payload.keys()
    # What `codex exec resume` needs of its parent is kept.
    assert (payload["cwd"], payload["model_provider"], payload["base_instructions"]) == (
        "/w",
        "openai",
        {"text": "be brief"},
    )
    child = codex_view(json.dumps({"type": "session_meta", "payload": payload}).encode() + b"\n")
    assert (child.parent, child.subagent) == (SUB, False)
    # Only a subagent's marker goes: a rollout Codex's TUI or editor wrote keeps saying so.
    other = fork_of(home, tmp_path / "typed", meta(SUB, source="vscode", model_provider="openai"))
    assert (other["source"], other["forked_from_id"], other["model_provider"]) == ("vscode", SUB, "openai")


def test_a_rollout_is_a_subagent_only_when_forked_from_none_but_its_spawner() -> None:
    cases = {
        "spawned": None,
        "spawned with its parent's context": BOSS,  # forked from the one that spawned it
        "a fork of the subagent that kept its marker": SUB,  # made before remem dropped it
    }
    found = {}
    for case, forked_from in cases.items():
        fields = {} if forked_from is None else {"forked_from_id": forked_from}
        view = codex_view(rollout(meta("019c-x", source=SPAWN, **fields), *turn("t1", "q", "a")))
        found[case] = (view.subagent, view.parent)
    assert found == {
        "spawned": (True, BOSS),
        "spawned with its parent's context": (True, BOSS),
        "a fork of the subagent that kept its marker": (False, SUB),
    }
