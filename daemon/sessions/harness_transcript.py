"""The Markdown transcript of a Claude Code or Codex session, in the DSH transcript's shape.

Each turn of the conversation is a `## Turn N — status — time` section (what the editor's
"Branch after turn N" lenses look for), with why it failed or was stopped (when the file says),
the user's prompt, the tools called with what each was asked and how it ended (a failure with
the first line it returned: `tool_details`), and the last assistant text; a session that cannot
be branched (a Claude Code subagent's own file) says so under its header. A Claude Code
session's abandoned in-file branches follow under their own headings, their turns at a lower
level, since nothing can be branched after them, and so do its inline subagents (Claude Code 1.0
wrote them into the parent's file). A Codex fork that inherits lines by reference (its
`history_base`, kept by a fork that copied its parent's lines too) opens with the turns it
inherits, read from the file the base names and headed at a lower level too: they are branched
in that session. The lines the reader skipped or flagged are listed under the header, each with
its reason. Text from the file is quoted or put in code spans, as in `transcript`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import msgspec

from .formats.jsonl import end_of_line
from .formats.model import ToolCall, Turn
from .harness_sources import Inherited, SessionView, epoch_ms
from .sources import HARNESS_NAMES
from .tool_details import ToolDetails, tool_details
from .transcript import fenced_name, inline, quoted, tool_line

PROBLEMS_SHOWN = 50  # a file of broken lines lists this many, then how many more


class _Stamp(msgspec.Struct):
    timestamp: str | None = None


_STAMP = msgspec.json.Decoder(_Stamp)


def _stamp(line: bytes) -> str:
    """The `timestamp` of the line `line`, or "no time" when it has none."""
    try:
        found = _STAMP.decode(line.strip()).timestamp
    except (msgspec.DecodeError, msgspec.ValidationError):
        found = None
    return found if found and epoch_ms(found) is not None else "no time"  # a file may say anything


def _stamps(data: bytes, turns: Iterable[Turn]) -> dict[int, str]:
    """The `_stamp` of each turn's first line of `data`, by line number: the lines found in
    file order, each counted on from the last, so `data` is read once for any number of turns."""
    stamps: dict[int, str] = {}
    line = at = 0  # `at` is the offset just after line `line`
    for number in sorted({turn.start for turn in turns}):
        start = end_of_line(data, number - 1, line, at)
        line, at = number, end_of_line(data, number, number - 1, start)
        stamps[number] = _stamp(data[start:at])
    return stamps


def _status(turn: Turn) -> str:
    return turn.status if turn.forkable or turn.status == "rolled-back" else "not finished"


def _body(turn: Turn, details: ToolDetails) -> list[str]:
    lines = []
    ending = details.endings.get(turn.end) if turn.status in ("error", "aborted") else None
    answer = turn.answer
    if turn.status == "error" and ending is None:
        # No line of the file ends it (Codex's do): Claude Code wrote its API error in the
        # model's place, and that record is the turn's last text (decision 0385).
        ending, answer = answer, None
    if ending:  # as a DSH transcript says a turn's error
        lines += [f"Error: {inline(ending)}" if turn.status == "error" else f"_{inline(ending)}_", ""]
    lines += ["**User**", "", *quoted(turn.text or turn.prompt), ""]
    if turn.compacted:
        lines += ["_Earlier context was replaced by a compaction summary in this turn._", ""]
    if turn.tools:
        lines += ["**Tools**", "", *(_tool(call, details) for call in turn.tools), ""]
    if answer is not None:
        lines += ["**Assistant**", "", *quoted(answer), ""]
    return lines


def _tool(call: ToolCall, details: ToolDetails) -> str:
    outcome = {True: "ok", False: "error", None: "no result"}[call.ok]
    said = details.said.get(call.call_id, "") if call.ok is False else ""
    return tool_line(call.name, details.asked.get(call.call_id, ""), outcome, said)


def _problems(view: SessionView) -> list[str]:
    """The first problems of the file, each with its line and reason, then how many more: a
    reader keeps the first of each kind whole and counts the later ones (`Problem.count`)."""
    if not view.problems:
        return []
    shown = [f"- {inline(problem.reason)}" for problem in view.problems[:PROBLEMS_SHOWN]]
    total = sum(problem.count for problem in view.problems)
    more = total - len(shown)
    if more > 0:
        shown.append(f"- … and {more} more")
    return [f"**Problems** ({total}, skipped or flagged while reading)", "", *shown, ""]


NOT_AT_HAND = (
    "_The lines this session continues from are not at hand (that session is not listed, or the "
    "rollout holding them is gone), so its turns are not shown._"
)


def _inherited(part: Inherited) -> list[str]:
    lines = [f"## Inherited from {fenced_name(part.session)}", ""]
    if part.lines is None:
        return [*lines, NOT_AT_HAND, ""]
    lines += ["_Codex keeps these turns in that session's file; this one continues from them._", ""]
    stamps, details = _stamps(part.lines, part.turns), tool_details(part.lines)
    for turn in part.turns:
        lines += [_heading("### Inherited turn", turn, stamps), "", *_body(turn, details)]
    return lines


def _heading(name: str, turn: Turn, stamps: dict[int, str]) -> str:
    return f"{name} {turn.index} — {inline(_status(turn))} — {inline(stamps[turn.start])}"


def render_harness_transcript(
    view: SessionView, data: bytes, title: str | None = None, inherited: Sequence[Inherited] = ()
) -> str:
    """The transcript of the session `view` read from `data`, headed by `title` when given,
    after the `inherited` turns of a Codex fork's ancestors."""
    lines = [f"# {inline(title or view.title or view.id or 'untitled')}", ""]
    lines.append(f"- Session: {fenced_name(view.id or '')}")
    lines.append(f"- Harness: {HARNESS_NAMES[view.format]}")
    lines.append(f"- Working directory: {fenced_name(view.cwd) if view.cwd else 'none'}")
    lines.append(f"- Created: {view.created_at or 'unknown'}")
    if view.parent is not None:
        lines.append(f"- Parent: {fenced_name(view.parent)}{' (subagent)' if view.subagent else ''}")
    copied = view.fork_turn if view.parent is not None and not view.subagent else None
    if copied:  # as a DSH fork's transcript says it: its first turns are the parent's
        turns = "turn 1" if copied == 1 else f"turns 1–{copied}"
        lines.append(f"- Fork point: after turn {copied} ({turns} copied from the parent)")
    if not view.branchable:  # so no turn has a "Branch after turn N" lens
        harness = HARNESS_NAMES[view.format]
        lines.append(f"- Branching: none ({harness} resumes sessions, not subagents: branch its parent)")
    lines.append("")
    lines += _problems(view)
    for part in inherited:
        lines += _inherited(part)
    stamps, details = _stamps(data, view.turns), tool_details(data)
    for turn in view.turns:
        heading = _heading("## Turn", turn, stamps) + (
            " — inherited" if copied and turn.index <= copied else ""
        )
        lines += [heading, "", *_body(turn, details)]
    for branch in view.branches:
        point = f"after turn {branch.after_turn}" if branch.after_turn else "before the first turn"
        lines += [f"## Abandoned branch {point} (leaf {fenced_name(branch.leaf)})", ""]
        for turn in branch.turns:
            heading = f"### Abandoned turn {turn.index} — {inline(_status(turn))}"
            lines += [heading, "", *_body(turn, details)]
    for chain in view.sidechains:
        lines += [f"## Inline subagent {fenced_name(f'{view.id}@{chain.root}')}", ""]
        for turn in chain.turns:
            heading = f"### Subagent turn {turn.index} — {inline(_status(turn))}"
            lines += [heading, "", *_body(turn, details)]
    if not view.turns:
        lines += ["_No turns yet._", ""]
    return "\n".join(lines).rstrip("\n") + "\n"
