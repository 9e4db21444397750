"""The proposal contract: each host check, canonical order, the hash, and fuzzed arguments."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remem.daemon.consolidation.proposal import (
    Frozen,
    ProposalRejected,
    change_name,
    parse_arguments,
    plan_proposal,
)
from remem.daemon.memory.record import render_record
from remem.daemon.protocol.consolidation import EvidenceRange
from remem.daemon.protocol.memory import Record

SHOWN = [EvidenceRange(fromSeq=0, toSeq=9), EvidenceRange(fromSeq=10, toSeq=30)]
EV = [{"fromSeq": 0, "toSeq": 9}]
EXISTING = Record(name="old-fact", description="Old", type="project", content="Old.\n")
FROZEN = Frozen(global_raw=b"Be brief.\n", workspace_files={"old-fact.md": render_record(EXISTING).encode()})


def put(name: str, **record: Any) -> dict[str, Any]:
    fields = {"name": name, "description": "A fact", "type": "project", "content": "Body.\n", **record}
    return {"action": "put", "record": fields, "evidence": EV}


def plan(*changes: dict[str, Any], outcome: str = "changes") -> Any:
    arguments = json.dumps({"final": True, "outcome": outcome, "changes": list(changes)})
    return plan_proposal(parse_arguments(arguments), SHOWN, FROZEN)


def problems(*changes: dict[str, Any], outcome: str = "changes") -> list[str]:
    with pytest.raises(ProposalRejected) as rejected:
        plan(*changes, outcome=outcome)
    return rejected.value.problems


def test_a_valid_proposal_is_ordered_and_planned_for_both_scopes() -> None:
    result = plan(
        put("zeta"),
        {"action": "delete", "name": "old-fact", "evidence": EV},
        put("alpha"),
        {"action": "replace-global", "content": "Be terse.\n", "evidence": [{"fromSeq": 10, "toSeq": 30}]},
    )
    assert [(c.action, change_name(c)) for c in result.changes] == [
        ("replace-global", ""), ("delete", "old-fact"), ("put", "alpha"), ("put", "zeta")]  # fmt: skip
    assert result.changed and result.global_plan.changed and result.workspace_plan.changed
    assert sorted(r.name for r in result.workspace_plan.records) == ["alpha", "zeta"]
    glob = {"action": "replace-global", "content": "Be terse.\n", "evidence": [{"fromSeq": 10, "toSeq": 30}]}
    shuffled = plan(put("alpha"), put("zeta"), {"action": "delete", "name": "old-fact", "evidence": EV}, glob)
    assert shuffled.proposal_hash == result.proposal_hash, "the hash is of the canonical batch"


def test_a_proposal_that_changes_nothing_is_no_change() -> None:
    same = plan(put("old-fact", description="Old", content="Old.\n"))
    assert not same.changed
    assert not plan(outcome="no-change").changed


@pytest.mark.parametrize(
    ("changes", "outcome", "expected"),
    [
        ([put("a")], "no-change", "must come with an empty `changes`"),
        ([], "changes", "needs at least one change"),
        ([put("a"), put("A")], "changes", "`a` is changed more than once"),
        ([{"action": "replace-global", "content": "x\n", "evidence": EV}] * 2, "changes", "at most once"),
        ([{**put("a"), "evidence": [{"fromSeq": 0, "toSeq": 10}]}], "changes", "0-10 is not one of the turn"),
        ([{"action": "delete", "name": "ghost", "evidence": EV}], "changes", "delete `ghost`"),
        ([put("Bad Name")], "changes", "put `Bad Name`"),
        ([{"action": "replace-global", "content": "x" * 30_000, "evidence": EV}], "changes", "limit"),
    ],
)
def test_each_host_check(changes: list[dict[str, Any]], outcome: str, expected: str) -> None:
    found = problems(*changes, outcome=outcome)
    assert any(expected in p for p in found), found


@pytest.mark.parametrize(
    "arguments",
    [
        "{not json",
        '{"final": true, "outcome": "changes", "changes": [], "path": "/etc"}',
        '{"final": "yes", "outcome": "changes", "changes": []}',
        '{"final": true, "outcome": "changes", "changes": [{"action": "put", "record": {"name": "a"}}]}',
        '{"final": true, "outcome": "changes", "changes": [{"action": "rename", "name": "a"}]}',
        '{"final": true, "outcome": "maybe", "changes": []}',
        '{"final": true, "outcome": "changes", "changes": [{"action": "delete", "name": "a", "evidence": []}]}',  # noqa: E501
    ],
)
def test_arguments_outside_the_schema_are_rejected_with_their_field(arguments: str) -> None:
    with pytest.raises(ProposalRejected) as rejected:
        parse_arguments(arguments)
    assert rejected.value.problems and all(isinstance(p, str) and p for p in rejected.value.problems)


_TEXT = st.text(max_size=30)
_RANGE = st.fixed_dictionaries({"fromSeq": st.integers(-2, 40), "toSeq": st.integers(-2, 40)})
_RECORD = st.fixed_dictionaries(
    {"name": st.sampled_from(["a", "old-fact", "Bad", "x" * 80, ""]) | _TEXT, "description": _TEXT,
     "type": st.sampled_from(["feedback", "project", "reference", "other"]), "content": _TEXT}
)  # fmt: skip
_EVIDENCE = st.lists(_RANGE, max_size=2)
_CHANGE = st.one_of(
    st.fixed_dictionaries({"action": st.just("put"), "record": _RECORD, "evidence": _EVIDENCE}),
    st.fixed_dictionaries({"action": st.just("delete"), "name": _TEXT | st.just("old-fact"),
                           "evidence": _EVIDENCE}),
    st.fixed_dictionaries({"action": st.just("replace-global"), "content": _TEXT,
                           "evidence": _EVIDENCE}),
)  # fmt: skip
_PROPOSALS = st.fixed_dictionaries(
    {"final": st.booleans(), "outcome": st.sampled_from(["changes", "no-change"]),
     "changes": st.lists(_CHANGE, max_size=4)}
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(arguments=_PROPOSALS.map(json.dumps) | st.text(max_size=60))
def test_any_arguments_end_in_a_plan_or_a_list_of_problems(arguments: str) -> None:
    try:
        result = plan_proposal(parse_arguments(arguments), SHOWN, FROZEN)
    except ProposalRejected as exc:
        assert exc.problems and all(p.strip() for p in exc.problems)
        return
    shown = set(SHOWN)
    assert all(r in shown for c in result.changes for r in c.evidence)
    if result.workspace_plan is not None:  # the store's own plan: every record in it is valid
        assert {r.name for r in result.workspace_plan.records} >= {
            c.record.name
            for c in result.changes
            if c.action == "put"  # type: ignore[union-attr]
        }


@pytest.mark.parametrize(
    ("change", "kind"),
    [
        (put("db", content="The staging password: hunter2hunter2\n"), "secret"),
        (put("aws", description="Key AKIAIOSFODNN7EXAMPLE"), "aws-access-key-id"),
        (
            {
                "action": "replace-global",
                "content": "Use sk-abcdefghijklmnopqrstuvwxyz012345\n",
                "evidence": EV,
            },
            "api-key",
        ),
    ],
)
def test_a_change_holding_a_credential_is_refused_without_repeating_it(
    change: dict[str, Any], kind: str
) -> None:
    [problem] = problems(change)
    assert f"looks like a credential ({kind})" in problem and problem.startswith("change 0:")
    assert "hunter2" not in problem and "AKIA" not in problem and "sk-abc" not in problem


def test_naming_where_a_secret_lives_is_not_refused() -> None:
    assert plan(put("db", content="The staging password is in $STAGING_DB_PASSWORD (1Password).\n"))


@pytest.mark.parametrize(
    "change",
    [put("n" * 300), {"action": "delete", "name": "n" * 300, "evidence": EV}],
    ids=["put", "delete"],
)
def test_a_name_past_what_a_change_may_carry_is_sent_back_to_the_model(change: dict[str, Any]) -> None:
    # A name the store's change models refuse must be a problem for the model to fix, not a
    # ValidationError out of the plan that ends the attempt as remem's own failure.
    said = problems(change)
    assert len(said) == 1 and "name" in said[0] and "252" in said[0]
    assert "n" * 61 not in said[0], "the name is not quoted back"
