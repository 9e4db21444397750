"""A scripted consolidation model for `remem eval`'s tests: it answers each case from its key.

It reads what a real model reads (the review input of the request), recognises the case by
its prompts, finds each scripted turn's evidence range in the headings, and proposes one of:

- ``good``: the case's ideal proposal, citing the justifying turns;
- ``bad``: first a final proposal citing a range never shown (rejected), then one that keeps
  the noise and the credentials the host cannot recognise (it refuses the others), cites a
  fact with the wrong turn, skips every delete and update of a stale record, drops the other
  facts and deletes a record that is still true;
- ``partial``: every other change of the ideal proposal, correctly cited.
"""

from __future__ import annotations

from typing import Any, Literal

from remem.daemon import credentials
from remem.daemon.consolidation.evidence import shown_turns
from remem.daemon.evaluation.cases import CASES
from remem.daemon.evaluation.labels import Case, IdealChange
from tests.fake_openai import FakeOpenAI, Reply, tool_call

Variant = Literal["good", "bad", "partial"]
_NEVER_SHOWN = {"fromSeq": 999_999, "toSeq": 999_999}


def _blocks(context: str) -> list[tuple[dict[str, int], str]]:
    """Each shown turn's range and its text."""
    return [(shown.model_dump(), text) for shown, text in shown_turns(context)]


def _scripted_ranges(
    case: Case, blocks: list[tuple[dict[str, int], str]]
) -> dict[int, dict[str, int]] | None:
    found = {}
    for number, turn in enumerate(case.turns, start=1):
        quote = "\n> " + turn.user.splitlines()[0][:30]
        match = next((r for r, text in blocks if quote in text), None)
        if match is None:
            return None
        found[number] = match
    return found


def recognise(context: str) -> tuple[Case, dict[int, dict[str, int]], list[dict[str, int]]]:
    """The case under review, the range of each of its scripted turns, and every range shown."""
    blocks = _blocks(context)
    for case in sorted(CASES, key=lambda c: -len(c.turns)):
        ranges = _scripted_ranges(case, blocks) if case.expects_change or case.noise else None
        if ranges is not None:
            return case, ranges, [r for r, _ in blocks]
    raise AssertionError("the scripted model does not know this review")


def _change(ideal: IdealChange, evidence: list[dict[str, int]]) -> dict[str, Any]:
    if ideal.action == "put":
        assert ideal.record is not None
        return {"action": "put", "record": ideal.record.model_dump(), "evidence": evidence}
    if ideal.action == "delete":
        return {"action": "delete", "name": ideal.name, "evidence": evidence}
    return {"action": "replace-global", "content": ideal.text, "evidence": evidence}


def _proposal(changes: list[dict[str, Any]]) -> dict[str, Any]:
    return {"final": True, "outcome": "changes" if changes else "no-change", "changes": changes}


def good(case: Case, ranges: dict[int, dict[str, int]]) -> list[dict[str, Any]]:
    return [_change(c, [ranges[t] for t in c.turns]) for c in case.ideal]


def partial(case: Case, ranges: dict[int, dict[str, int]]) -> list[dict[str, Any]]:
    return good(case, ranges)[::2]


def bad(case: Case, ranges: dict[int, dict[str, int]], shown: list[dict[str, int]]) -> list[dict[str, Any]]:
    anywhere = [shown[0]]
    changes = [_note(f"note-{n.id}", " ".join(n.terms), anywhere) for n in case.noise]
    unrecognised = [s for s in case.secrets if not credentials.find(s)]
    if unrecognised:
        changes.append(_note("credentials", "Keys seen: " + ", ".join(unrecognised), anywhere))
    stale = {s.record for s in case.stale}
    kept = [
        c for c in case.ideal if c.action != "delete" and (c.record is None or c.record.name not in stale)
    ]
    if kept:
        allowed = [ranges[t] for f in case.facts for t in f.turns]
        wrong = [r for r in shown if r not in allowed]
        if wrong:
            changes.append(_change(kept[0], wrong[:1]))
    valid = [r for r in case.records if r.name not in stale]
    if valid:
        changes.append({"action": "delete", "name": valid[0].name, "evidence": anywhere})
    return changes


def _note(name: str, text: str, evidence: list[dict[str, int]]) -> dict[str, Any]:
    record = {"name": name, "description": f"Noted: {name}", "type": "project", "content": text + "\n"}
    return {"action": "put", "record": record, "evidence": evidence}


def answer(variant: Variant, body: dict[str, Any]) -> Reply:
    """The scripted model's reply to one request of a review."""
    messages = body["messages"]
    case, ranges, shown = recognise(messages[1]["content"])
    if variant == "good":
        return tool_call(_proposal(good(case, ranges)))
    if variant == "partial":
        return tool_call(_proposal(partial(case, ranges)))
    changes = bad(case, ranges, shown)
    if not any(m["role"] == "tool" for m in messages):
        broken = [dict(c, evidence=[_NEVER_SHOWN]) for c in changes] or [_note("x", "x", [_NEVER_SHOWN])]
        return tool_call(_proposal(broken))
    return tool_call(_proposal(changes))


def serve(fake: FakeOpenAI, variant: Variant) -> None:
    fake.reply_always(lambda body: answer(variant, body))
