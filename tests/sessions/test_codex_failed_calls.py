"""A Codex call that failed says so wherever the rollout tells it: a finished item's status (a
subagent's or an MCP tool's call, which carry no exit code) and the output Codex answers a call
it could not run with. Consolidation evidence then shows `error`, never `ok`, for them; and a
turn that ended in an error is marked as one (decision 0385)."""

from __future__ import annotations

from typing import Any

import pytest

from remem.daemon.consolidation.evidence import FAILED, FAILED_LABEL
from remem.daemon.consolidation.harness_evidence import project_harness

from .codex_lines import call, event, listed_as_read, meta, output, rollout, turn

# As Codex 0.16x writes a subagent's spawn that hit the thread limit.
SPAWN_FAILED = {"type": "CollabAgentToolCall", "id": "c1", "tool": "spawn_agent", "status": "failed"}


def _said(call_id: str, text: str) -> dict[str, Any]:
    answered = output(call_id)
    answered["payload"]["output"] = text
    return answered


def _outcomes(data: bytes) -> list[tuple[str, bool | None]]:
    (only,) = listed_as_read(data).turns
    return [(tool.name, tool.ok) for tool in only.tools]


@pytest.mark.parametrize(
    ("status", "ok"), [("failed", False), ("declined", False), ("completed", True), ("inProgress", True)]
)
def test_a_finished_items_status_is_its_calls_outcome(status: str, ok: bool) -> None:
    item = {**SPAWN_FAILED, "status": status}
    middle = (call("c1", "spawn_agent"), event("item_completed", item=item), _said("c1", "{}"))
    data = rollout(meta(), *turn("t1", "spawn one", "done", *middle))
    # An unknown status tells nothing: the answered call counts as done, as before.
    assert _outcomes(data) == [("spawn_agent", ok)]


@pytest.mark.parametrize(
    "said",
    [
        "unsupported call: no_such_tool",
        "unsupported custom tool call: apply_patch",
        "failed to parse function arguments: missing field `cmd` at line 1 column 12",
    ],
)
def test_a_call_codex_could_not_run_is_an_error(said: str) -> None:
    data = rollout(meta(), *turn("t1", "try", "sorry", call("c1", "no_such_tool"), _said("c1", said)))
    assert _outcomes(data) == [("no_such_tool", False)]


def test_an_output_that_only_mentions_the_words_is_no_failure() -> None:
    said = "grep found: unsupported call: x"
    data = rollout(meta(), *turn("t1", "grep", "found", call("c1"), _said("c1", said)))
    assert _outcomes(data) == [("exec_command", True)]


def test_an_exit_code_outweighs_the_items_status() -> None:
    item = {"type": "CommandExecution", "id": "c1", "status": "failed", "exit_code": 0}
    data = rollout(
        meta(), *turn("t1", "run", "ran", call("c1"), event("item_completed", item=item), output("c1"))
    )
    assert _outcomes(data) == [("exec_command", True)]


def test_the_evidence_marks_failed_calls_and_a_failed_turn() -> None:
    middle = (call("c1", "spawn_agent"), event("item_completed", item=SPAWN_FAILED), _said("c1", "{}"))
    data = rollout(
        meta(),
        *turn("t1", "spawn one", "could not spawn", *middle),
        event("task_started", turn_id="t2"),
        *turn("t2", "and now?", "API error: 400")[1:-1],
        event("task_complete", turn_id="t2", error={"message": "400 Bad Request"}),
    )
    evidence = project_harness("codex", "rollout.jsonl", data)
    assert [[(tool.name, tool.ok) for tool in t.tools] for t in evidence.turns] == [
        [("spawn_agent", False)],
        [],
    ]
    assert [(t.failed, t.stopped) for t in evidence.turns] == [(False, False), (True, False)]
    first, second = (t.render() for t in evidence.turns)
    assert "spawn_agent error" in first and FAILED not in first
    assert FAILED in second and f"{FAILED_LABEL}\n> API error: 400" in second
