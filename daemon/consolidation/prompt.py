"""What the worker model is told: the fixed rules, its one tool, and the runtime context.

The rules are static (system role); everything about this review — evidence, Global text,
existing records — travels in one user-role message, so the worker session records exactly
what the model saw. The model never sees a path, a cwd, a workspace key or a revision.
"""

from __future__ import annotations

from typing import Any

from ..memory.record import Record, render_record
from .evidence import Evidence
from .proposal import TOOL_NAME

SYSTEM_RULES = """\
You review one finished coding-agent session and decide what, if anything, is worth keeping \
in the agent's long-term memory. You can only call the tool `memory_review_propose`.

Memory has two scopes:
- Global memory: one Markdown text about the user, true in every project (how they like to \
work, tools they always use). Change it only with `replace-global` and its whole new text.
- Workspace records: facts about this one project. Each record has a kebab-case `name`, a \
one-line `description`, a `type` (`feedback`: how the user wants work done; `project`: facts \
about this codebase; `reference`: pointers to docs, commands, places) and a Markdown `content`. \
Add or update a record with `put` (updates replace the whole record); remove one that the \
evidence shows is wrong or obsolete with `delete`.

Keep only what will still matter in a future session: stable preferences, decisions and their \
reasons, non-obvious facts about the project, corrections the user made. Do not keep \
one-off task details, things obvious from the code, or guesses. Never store passwords, \
tokens, keys or other credentials, even if they appear in the evidence. Prefer `no-change` \
when the evidence is weak. Every change cites at least one evidence range exactly as shown \
(`fromSeq`, `toSeq` of a turn).

Work briefly: no restating of the evidence, no long plans. You may send a draft with \
`final: false` to have it checked; fix what the result reports. Send `final: true` when the \
proposal is complete. Use `outcome: "no-change"` with an empty `changes` list when nothing \
should change.
"""

_RANGE = {
    "type": "object",
    "properties": {"fromSeq": {"type": "integer"}, "toSeq": {"type": "integer"}},
    "required": ["fromSeq", "toSeq"],
    "additionalProperties": False,
}
_EVIDENCE = {"type": "array", "items": _RANGE, "minItems": 1}
_RECORD = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "description": {"type": "string"},
        "type": {"type": "string", "enum": ["feedback", "project", "reference"]},
        "content": {"type": "string"},
    },
    "required": ["name", "description", "type", "content"],
    "additionalProperties": False,
}


def _change(action: str, **fields: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"action": {"const": action}, **fields, "evidence": _EVIDENCE},
        "required": ["action", *fields, "evidence"],
        "additionalProperties": False,
    }


TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": TOOL_NAME,
        "description": "Propose the memory changes this session justifies (or no change). "
        "final=false checks a draft; final=true submits it.",
        "parameters": {
            "type": "object",
            "properties": {
                "final": {"type": "boolean"},
                "outcome": {"type": "string", "enum": ["no-change", "changes"]},
                "changes": {
                    "type": "array",
                    "items": {
                        "anyOf": [
                            _change("replace-global", content={"type": "string"}),
                            _change("put", record=_RECORD),
                            _change("delete", name={"type": "string"}),
                        ]
                    },
                },
            },
            "required": ["final", "outcome", "changes"],
            "additionalProperties": False,
        },
    },
}


def runtime_context(review: str, evidence: Evidence, global_text: str, records: list[Record]) -> str:
    """The one user-role message of a review; its size is what `max_input_bytes` limits."""
    rendered = "\n".join(render_record(r) for r in records) or "(no records yet)\n"
    return (
        f"Review {review}.\n\n"
        f"# Evidence: the session, turn by turn\n\n{evidence.render()}\n\n"
        f"# Global memory now\n\n{global_text or '(empty)'}\n\n"
        f"# Workspace records now\n\n{rendered}\n"
        f"# Task\n\nPropose the changes this session justifies with `{TOOL_NAME}`, or no change.\n"
    )
