"""Evidence of Claude Code transcripts and Codex rollouts: the projection DSH logs get, per turn.

What enters is what `evidence.py` keeps of a DSH log, read from the format readers' turns:
the user's prompts (never the context the harness injects: Codex's ``<environment_context>``,
AGENTS.md, permissions, skills, subagent notifications and the IDE extension's context, Claude
Code's ``isMeta`` lines, command and hook wrappers, system reminders, editor context, tool
results, a shell command's output), compaction summaries marked as such, the turn's last
assistant text, and each tool that returned, by name, ok or error. Abandoned paths (Claude
Code's in-file branches, Codex's rolled-back turns) and turns a later compaction replaced are
not on the model's surface and stay out. Every text is elided and redacted like DSH evidence.

A turn's range is its address in the file: ``fromSeq`` and ``toSeq`` are the line numbers of
its first and last record (1-based). A turn a compaction cut or stands in is addressed by what
is shown of it: from the compaction on (Claude Code's summary, Codex's ``compacted`` line), its
tools those called after it (decision 0355). Both harnesses only append, and the review is
bound to the file's content digest, so those lines name the same records for as long as the
review holds; a proposal may cite exactly the ranges shown.
"""

from __future__ import annotations

from ..credentials import redact
from ..protocol.consolidation import EvidenceRange
from ..sessions.formats import claude_code, codex
from ..sessions.formats.model import Harness, TurnText
from .evidence import Evidence, ToolUse, TurnEvidence, clean


def _turns(harness: Harness, name: str, data: bytes) -> tuple[TurnText, ...]:
    """The turns a harness file's model still sees; `name` is the file's name (Claude Code
    takes the session id from it)."""
    if harness == "claude-code":
        return claude_code.evidence_turns(data, name)
    return codex.evidence_turns(data)


def project_harness(harness: Harness, name: str, data: bytes, fork_turn: int = 0) -> Evidence:
    """The evidence of a harness file; turns with nothing to show are left out, and so are a
    fork's first `fork_turn` turns (the reader's `fork_turn`), copied from its parent and
    reviewed with it (decision 0380)."""
    texts = [text for text in _turns(harness, name, data) if text.turn.index > fork_turn]
    turns = [turn for text in texts if not (turn := _evidence(text)).is_empty()]
    # A harness's "events" are its complete lines (a torn last one is still being written).
    return Evidence(turns=turns, sourceEvents=data.count(b"\n"), forkedAfter=fork_turn)


def _evidence(text: TurnText) -> TurnEvidence:
    turn = text.turn
    answer = clean(text.answer) if text.answer else ""
    return TurnEvidence(
        turn=turn.index,
        range=EvidenceRange(fromSeq=turn.start, toSeq=turn.end),
        user=[kept for prompt in text.prompts if (kept := clean(prompt))],
        summaries=[kept for summary in text.summaries if (kept := clean(summary))],
        assistant=answer or None,
        # A call that never returned (an interrupted turn) has no outcome to learn from.
        tools=[ToolUse(name=redact(tool.name), ok=tool.ok) for tool in turn.tools if tool.ok is not None],
        # An open turn in a file that is no longer written: its harness quit (a kill, a crash, a
        # closed terminal) before the turn ended, with or without a call left unanswered; or one
        # the harness stopped itself (`--max-turns`), whose note ends it (decision 0535).
        stopped=turn.cut_short or turn.status in ("aborted", "open"),
        failed=turn.status == "error",
    )
