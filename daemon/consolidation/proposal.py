"""The worker's proposal: a closed schema, checked by the host and planned with the store's preview.

Nothing the model sends is trusted: names, order, evidence and content are all re-checked, and
the plan is computed by the very functions a commit uses, against the revisions frozen before
the model ran. Problems come back as short sentences the worker can act on (it never sees a
path, a key or a revision, so no problem names one).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails

from .. import credentials
from ..memory.batch import (
    GlobalPlan,
    InvalidChanges,
    WorkspacePlan,
    erasing_global,
    plan_global,
    plan_workspace,
)
from ..protocol.consolidation import EvidenceRange
from ..protocol.memory import DeleteChange, PutChange, Record, RecordName

TOOL_NAME = "memory_review_propose"


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class ProposedRecord(_Closed):
    name: RecordName  # what the store's changes carry: a longer one is the model's to fix
    description: str
    type: Literal["feedback", "project", "reference"]
    content: str


class ReplaceGlobal(_Closed):
    action: Literal["replace-global"]
    content: str
    evidence: list[EvidenceRange] = Field(min_length=1)


class Put(_Closed):
    action: Literal["put"]
    record: ProposedRecord
    evidence: list[EvidenceRange] = Field(min_length=1)


class Delete(_Closed):
    action: Literal["delete"]
    name: RecordName
    evidence: list[EvidenceRange] = Field(min_length=1)


ProposedChange = Annotated[ReplaceGlobal | Put | Delete, Field(discriminator="action")]


class Proposal(_Closed):
    """The arguments of `memory_review_propose`."""

    final: bool
    outcome: Literal["no-change", "changes"]
    changes: list[ProposedChange]


@dataclass(frozen=True)
class Frozen:
    """What the worker's proposal is planned against: Global and the workspace as first read."""

    global_raw: bytes
    workspace_files: dict[str, bytes]


@dataclass(frozen=True)
class Plan:
    """A valid proposal, canonically ordered, with the store's plan for each scope it changes."""

    changes: list[ProposedChange]
    global_plan: GlobalPlan | None
    workspace_plan: WorkspacePlan | None
    proposal_hash: str

    @property
    def changed(self) -> bool:
        return any(p is not None and p.changed for p in (self.global_plan, self.workspace_plan))


class ProposalRejected(Exception):
    """The proposal cannot be used; `problems` tell the worker what to fix."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def parse_arguments(arguments: str) -> Proposal:
    """The tool call's JSON arguments as a proposal; raises ProposalRejected with every problem."""
    try:
        return Proposal.model_validate_json(arguments)
    except ValidationError as exc:
        raise ProposalRejected([_field_problem(e) for e in exc.errors()]) from None


def plan_proposal(proposal: Proposal, ranges: list[EvidenceRange], frozen: Frozen) -> Plan:
    """Check `proposal` against the evidence shown and the frozen memory, and plan it. A range a
    change cites twice is kept once: its receipt lists each change's evidence, and so stays
    within what is shown (a model citing one turn 40 000 times wrote a receipt too large to
    read back)."""
    proposal = cited_once(proposal)
    problems = _shape_problems(proposal, set(ranges))
    if problems:
        raise ProposalRejected(problems)
    changes = canonical_order(proposal.changes)
    global_plan = workspace_plan = None
    try:
        replace = [c for c in changes if isinstance(c, ReplaceGlobal)]
        if replace:
            global_plan = plan_global(frozen.global_raw, replace[0].content)
        batch = [batch_change(c) for c in changes if not isinstance(c, ReplaceGlobal)]
        if batch:
            workspace_plan = plan_workspace(frozen.workspace_files, batch)
    except InvalidChanges as exc:
        raise ProposalRejected([_store_problem(p.message, p.change, changes) for p in exc.problems]) from None
    if global_plan is not None and global_plan.erases:
        # A review never erases all of Global (0447): its reason would be in no record, only a receipt.
        raise ProposalRejected([f"replace-global: {erasing_global('a review')}"])
    return Plan(changes, global_plan, workspace_plan, proposal_hash(changes))


def cited_once(proposal: Proposal) -> Proposal:
    """`proposal` with each range a change cites kept once, in the order first cited: the form
    it is planned, hashed and replayed in (`plan_proposal`, `replayed`)."""
    return proposal.model_copy(update={"changes": [_cited_once(c) for c in proposal.changes]})


def _cited_once(change: ProposedChange) -> ProposedChange:
    once = list(dict.fromkeys(change.evidence))
    return change if len(once) == len(change.evidence) else change.model_copy(update={"evidence": once})


def replayed(arguments: str, recorded_hash: str | None) -> list[ProposedChange] | None:
    """The changes of the final proposal `arguments`, as `plan_proposal` planned them, when
    `recorded_hash` (a receipt's proposalHash) is theirs; else None. A receipt written before
    ranges were kept once holds the hash of the changes as sent: it is accepted too, and the
    changes commit the same memory (evidence is only listed, never written)."""
    try:
        sent = parse_arguments(arguments)
    except ProposalRejected:
        return None
    changes = canonical_order(cited_once(sent).changes)
    if recorded_hash in (proposal_hash(changes), proposal_hash(canonical_order(sent.changes))):
        return changes
    return None


def canonical_order(changes: list[ProposedChange]) -> list[ProposedChange]:
    """replace-global first, then deletes by name, then puts by name."""
    rank = {"replace-global": 0, "delete": 1, "put": 2}
    return sorted(changes, key=lambda c: (rank[c.action], change_name(c)))


def change_name(change: ProposedChange) -> str:
    if isinstance(change, Put):
        return change.record.name
    return change.name if isinstance(change, Delete) else ""


def content_hash(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def proposal_hash(changes: list[ProposedChange]) -> str:
    """Binds both scopes' planned content to a receipt that never stores the content itself."""
    canonical = json.dumps([c.model_dump(mode="json") for c in changes], sort_keys=True, ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _shape_problems(proposal: Proposal, shown: set[EvidenceRange]) -> list[str]:
    problems = []
    if proposal.outcome == "no-change" and proposal.changes:
        problems.append("outcome `no-change` must come with an empty `changes` list")
    if proposal.outcome == "changes" and not proposal.changes:
        problems.append("outcome `changes` needs at least one change; use `no-change` otherwise")
    if sum(isinstance(c, ReplaceGlobal) for c in proposal.changes) > 1:
        problems.append("replace Global at most once, with its whole new text")
    repeated = [
        n for n, k in Counter(change_name(c).casefold() for c in proposal.changes).items() if n and k > 1
    ]
    problems += [f"record `{name}` is changed more than once; updates are a single put" for name in repeated]
    for number, change in enumerate(proposal.changes):
        for bad in (r for r in change.evidence if r not in shown):
            problems.append(
                f"change {number}: evidence {bad.fromSeq}-{bad.toSeq} is not one of the turn ranges shown"
            )
        kinds = sorted({found.kind for text in _texts(change) for found in credentials.find(text)})
        if kinds:
            problems.append(
                f"change {number}: it holds what looks like a credential ({', '.join(kinds)}); memory "
                "never keeps secrets: say where the secret lives (an environment variable, a vault)"
            )
    return problems


def _texts(change: ProposedChange) -> tuple[str, ...]:
    """What a change would write into memory."""
    if isinstance(change, Put):
        return change.record.name, change.record.description, change.record.content
    return (change.content,) if isinstance(change, ReplaceGlobal) else ()


def batch_change(change: ProposedChange) -> PutChange | DeleteChange:
    if isinstance(change, Put):
        return PutChange(action="put", record=Record(**change.record.model_dump()))
    assert isinstance(change, Delete)
    return DeleteChange(action="delete", name=change.name)


def _store_problem(message: str, batch_index: int | None, changes: list[ProposedChange]) -> str:
    # The store numbers changes within its batch (no replace-global); name the record instead.
    batch = [c for c in changes if not isinstance(c, ReplaceGlobal)]
    if batch_index is not None and batch_index < len(batch):
        return f"{batch[batch_index].action} `{change_name(batch[batch_index])}`: {message}"
    return message


def _field_problem(error: ErrorDetails) -> str:
    location = ".".join(str(part) for part in error["loc"])
    return f"{location or 'arguments'}: {error['msg']}"
