"""Reading one Claude Code transcript (``<project>/<session>.jsonl``, or a subagent's file).

A transcript is a graph, not a list: conversational records (``user``, ``assistant``,
``system``, ``attachment``, ``progress``) carry ``uuid`` and ``parentUuid``. The rules, checked
against Claude Code itself and claude-agent-sdk's reader:

- the **active conversation** is the latest main-chain leaf (the nearest user/assistant record
  above a record nobody points to; not a sidechain, team or meta record) walked back to its
  root; a ``compact_boundary`` root continues at its ``logicalParentUuid``, joining segments;
- a **branch** is a real prompt under a node that already has a conversational descendant
  (rewind, edit, ``--resume-session-at``), past any meta, compaction-summary or command-output
  lines; parallel tool results and progress or hook lines also fork the graph but are not
  branches;
- the **workspace** is the records' ``cwd``, never the folder name (long names are truncated
  with a runtime-dependent hash);
- the **title** is the latest ``custom-title``, else ``ai-title``, else a ``summary`` whose
  leaf is in this file, else the first prompt that is no slash command or harness-written
  start (else the first), of the active conversation or, when it has none, of the branches;
  summaries of other files' leaves are returned for the catalog, which gives each to the
  session whose conversation (or a branch of it) ends at that leaf: older Claude Code wrote a
  session's summary into the next session's file, naming the summarised conversation's last
  user/assistant record (the conversation's `leaf` here);
- an **inline subagent** (Claude Code 1.0 wrote Task runs into the parent's file) is the
  ``isSidechain`` records under one root: its own conversation, never a turn or a branch of
  the parent's;
- a **turn** runs from a real prompt (not a tool result, not ``isMeta``, not a compaction
  summary, not a slash command's output, not a line the harness wrote such as a background
  task's notification) to the last assistant text before the next prompt; it is forkable when
  it has ended (answered, failed, interrupted, or followed by the next prompt) and every
  ``tool_use`` in it has its result;
- a turn's records **beside the path** are what claude-agent-sdk's reader (and ``claude
  --resume``) puts back after each response on it: that response's other records (one per
  content block, of one ``message.id``) and the tool results hanging off them, which a rewind
  or the parallel results' fan-out left off the path; not what followed them on an abandoned
  path (decision 0384). A call is answered by a result on the path or among them only;
- an assistant record Claude Code wrote itself (``"model": "<synthetic>"``, no API error: "No
  response requested.") is no answer.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Container, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from operator import attrgetter
from typing import Any, NamedTuple, cast

import msgspec

from ..lineage import shortened
from .jsonl import REPLACED_UTF8, Fields, Line, end_of_line, records, replaced_utf8
from .model import (
    Edge,
    NotAForkPoint,
    Problem,
    ProblemSink,
    ToolCall,
    Turn,
    TurnStatus,
    TurnText,
    refused_lines,
)

GRAPH_TYPES = frozenset({"user", "assistant", "progress", "system", "attachment"})
# A slash command is written as tagged user lines: the invocation (`<command-name>`) is the
# user's prompt; the output of a local command and its caveat are not, nor is the user line the
# harness writes when a background task (an async subagent) finishes.
_LOCAL_OUTPUT = ("<local-command-stdout>", "<local-command-stderr>", "<local-command-caveat>")
# Bash mode (`! cmd`) is written the same way: the command as a user line
# `<bash-input>cmd</bash-input>`, then the shell's output as the next one
# (`<bash-stdout>…</bash-stdout><bash-stderr>…</bash-stderr>`). The command is the user's, a
# prompt that no model answers, as a local slash command's invocation is (shown `! cmd`, as
# Claude Code shows and titles it); its output is the shell's, like a local command's: never a
# prompt, a turn's start or anything said (decision 0355).
_SHELL_OUTPUT = ("<bash-stdout>", "<bash-stderr>")
_UNSAID = (*_LOCAL_OUTPUT, *_SHELL_OUTPUT)
NOT_PROMPTS = (*_UNSAID, "<task-notification>")
_SHELL_INPUT = "<bash-input>"
_SHELL = re.compile(r"<bash-input>(.*?)</bash-input>", re.DOTALL)
_COMMAND = re.compile(r"<command-name>\s*(.*?)\s*</command-name>", re.DOTALL)
_COMMAND_ARGS = re.compile(r"<command-args>\s*(.*?)\s*</command-args>", re.DOTALL)
# Blocks Claude Code puts into a user line's text that the user did not write: the editor's
# context (the file the user opened, the lines they selected), which its IDE integrations put
# before the user's words, a system reminder, and what a UserPromptSubmit hook added to the
# prompt. They are cut out wherever they stand; the user's words around them stay.
_INJECTED = re.compile(
    r"<(ide_opened_file|ide_selection|system-reminder|user-prompt-submit-hook)>.*?</\1>", re.DOTALL
)
# Prompts the harness writes to start a turn (a hook's output, a loop's tick, a goal), which
# Claude Code's own listing never titles a session by.
_UNTITLED = ("<session-start-hook>", "<tick>", "<goal>")
# Who wrote a user line (its `origin.kind`) when it was not the user. Interactive Claude Code
# marks what the user typed "human" (`claude -p` and older versions write no origin) and what it
# submits for them "auto-continuation" (an accepted plan, a command's next input): prompts.
# These kinds are the harness's own: a background task's notification, a coordinator's, a peer
# agent's, a plugin's, a channel's or a voice call's message, an observer's report.
HARNESS_ORIGINS = frozenset(
    {"task-notification", "coordinator", "peer", "plugin", "channel", "voice-call", "observer-activity"}
)
# What Claude Code writes as a user line when the user stops a turn (Esc): a marker, not a prompt.
INTERRUPTED = "[Request interrupted by user"
# The first characters of every text a user line's rules look for; a prompt that starts with
# none of them (most do) is asked about none.
_MARKED = frozenset(prefix[0] for prefix in (*NOT_PROMPTS, INTERRUPTED, "<command-", _SHELL_INPUT))
PROMPT_CHARS = 200
_NO_CONVERSATION = "no conversation records (user/assistant lines with a uuid)"
_SUBAGENT = (
    "a subagent's transcript: Claude Code resumes sessions, not subagents; "
    "branch the session that ran it instead"
)


class _ForkedFrom(msgspec.Struct, rename="camel"):
    session_id: str | None = None
    message_uuid: str | None = None


class _Origin(msgspec.Struct):
    kind: str | None = None


class _Block(Fields):
    """A content block; a tool result's own content (often large) is not decoded."""

    type: Any = None
    text: Any = None
    id: Any = None
    name: Any = None
    tool_use_id: Any = None
    is_error: Any = None


class _Queued(msgspec.Struct, rename="camel"):
    """A `queued_command` attachment: what was typed while the agent worked, which the model got
    inside the running turn. Interactive Claude Code writes no user line for it."""

    type: Any = None
    prompt: Any = None  # the text, or content blocks
    command_mode: Any = None  # "prompt" for the user's words ("bash", "task-notification", …)
    is_meta: Any = None
    origin: _Origin | None = None


class _QueuedLine(msgspec.Struct):
    attachment: _Queued | None = None


# Decoded only for the attachment lines of a reviewed conversation: a listing never reads them.
_QUEUED = msgspec.json.Decoder(_QueuedLine)


class _Attachment(msgspec.Struct):
    """An attachment record's attachment: only its kind is read."""

    type: Any = None


class _Message(msgspec.Struct):
    role: str | None = None
    content: str | list[_Block] | None = None
    # An assistant record's response (`id`: Claude Code writes one record per content block, all
    # of one id) and who wrote it (`model`: "<synthetic>" for what the harness wrote itself).
    id: Any = None
    model: Any = None


class _Node(msgspec.Struct, rename="camel"):
    """What the graph, turns and titles read of a line; everything else in it is skipped by the
    decoder."""

    type: str = ""
    subtype: str | None = None
    uuid: str | None = None
    parent_uuid: str | None = None
    logical_parent_uuid: str | None = None
    session_id: str | None = None
    is_sidechain: bool | None = None
    is_meta: bool | None = None
    is_compact_summary: bool | None = None
    is_api_error_message: bool | None = None
    team_name: str | None = None
    message: _Message | None = None
    custom_title: str | None = None
    ai_title: str | None = None
    summary: str | None = None
    leaf_uuid: str | None = None
    origin: _Origin | None = None  # who wrote a user line: the user, or the harness (`HARNESS_ORIGINS`)
    # Any JSON value: an odd attachment must not make its line unreadable, as it was not unread.
    attachment: _Attachment | str | int | float | bool | list[Any] | None = None


class _Record(_Node, rename="camel"):
    """A line as the transcript summary reads it; a content-replacement record's entries,
    which only a fork copies, are skipped."""

    agent_id: str | None = None
    cwd: str | None = None
    timestamp: str | None = None
    version: str | None = None
    forked_from: _ForkedFrom | None = None


class _Link(_Record, rename="camel"):
    """A line as a fork reads it: what a listing reads, so that a fork refuses every line the
    listing refuses (a `timestamp` that is a number, say), and a content-replacement's entries."""

    replacements: list[Any] | None = None  # of a content-replacement record


LISTED_LINE: type[msgspec.Struct] = _Record  # what a listing decodes each line into (the benchmarks' floor)


@dataclass(frozen=True)
class Branch:
    """An abandoned path of the file: it leaves the conversation after node `after` (a uuid;
    "" for a path cut off from the conversation, which joins it nowhere)."""

    after: str
    after_turn: int  # turns of the conversation before the branch point (0: before the first)
    leaf: str
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Sidechain:
    """A subagent written inline in its parent's file: the sidechain records under `root`."""

    root: str  # uuid of its first record
    agent_id: str | None
    created_at: str | None
    turns: tuple[Turn, ...]  # of its own conversation (its latest leaf walked back)


@dataclass(frozen=True)
class Transcript:
    """What one Claude Code file says; `error` is set when it holds no conversation at all."""

    session_id: str
    cwd: str | None
    title: str | None
    title_source: str | None  # "custom-title" | "ai-title" | "summary" | "prompt"
    created_at: str | None
    updated_at: str | None
    version: str | None
    subagent: bool  # a sidechain file (an agent run by a parent session)
    agent_id: str | None
    parent_session: str | None  # the session a subagent belongs to (its records' sessionId)
    lineage: tuple[Edge, ...]
    fork_turn: int | None  # a fork's turns copied from its parent (None: not a fork, or none copied)
    turns: tuple[Turn, ...]  # of the active conversation; () when only counted
    turn_count: int
    branches: tuple[Branch, ...]
    segments: int  # compaction segments joined into the active conversation
    root: str | None  # uuid of the conversation's first record (copies by --fork-session share it)
    foreign_summaries: tuple[tuple[str, str], ...]  # (leafUuid, summary) for leaves not in this file
    problems: tuple[Problem, ...]
    error: str | None = None
    sidechains: tuple[Sidechain, ...] = ()  # inline subagents of a main file
    newlines: int = 0  # the file's newline characters: its lines, less an unended last one
    leaf: str | None = None  # uuid of the active conversation's last record (a summary's `leafUuid`)


def read_transcript(data: bytes, name: str, *, turns: bool = True, stopped: bool = False) -> Transcript:
    """Read the transcript `data` of the file named `name` (its stem is the session id).
    Without `turns` (a listing), the active conversation's turns are counted and the first
    prompt taken, none built (the turns stay empty; branches and inline subagents keep theirs).
    `stopped`: no harness writes the file any more, so its last turn has ended (`_turn`)."""
    return _parse(data, name, turns=turns, stopped=stopped).transcript


MAX_GROWN_PROBLEMS = 1000  # a transcript with more problem lines is read whole at each change


@dataclass
class Grown:
    """A listing's read of a transcript's whole lines, kept to take an append on (decision 0351).

    `grow` takes on an append that only extends the active conversation: new records whose
    parents are on it or new, none a repeated uuid, a sidechain record, a parent the file
    missed or a new root, and a conversation that goes on from its latest node. Anything
    else (a rewind, an edit, a subagent written inline, a torn last line) is read whole."""

    stem: str
    size: int  # the bytes read: whole lines
    newlines: int
    graph: _Graph
    held: _Held
    path: list[Line[_Node]]
    on_path: set[str | None]
    starts: list[int]  # the lines of the conversation's prompts: where its turns start
    asked: int | None  # the first of them that titles the session (`_first_prompt`), if any
    talk: _Conversation
    read_problems: list[Problem]
    graph_problems: list[Problem]
    missing: set[str]  # parents named but not in the file


def listed_transcript(data: bytes, name: str) -> tuple[Transcript, Grown | None]:
    """`read_transcript(data, name, turns=False)`, and the state to take an append on from,
    when the transcript allows it (whole lines, one main conversation, no cycle)."""
    parsed = _parse(data, name, turns=False)
    graph, path, talk = parsed.graph, parsed.path, parsed.talk
    problems = list(parsed.transcript.problems)
    keep = (
        data.endswith(b"\n")
        and path
        and _main_chain(path[-1].record)
        # A conversation through a sidechain record (Claude Code writes none): a node appended
        # below that record would change the inline subagents, which `grow` keeps as they are.
        and not (graph.sidechains and any(line.record.is_sidechain for line in path))
        and not graph.broken
        and not graph.bridged
        and not talk.subagent
        and len(problems) <= MAX_GROWN_PROBLEMS
    )
    if not keep:
        return parsed.transcript, None
    grown = Grown(
        stem=_stem(name),
        size=len(data),
        newlines=parsed.transcript.newlines,
        graph=graph,
        held=parsed.held,
        path=path,
        on_path=parsed.on_path,
        starts=parsed.starts,
        asked=_asked(parsed.starts, graph),
        talk=talk,
        read_problems=problems[: parsed.read_problems],
        graph_problems=problems[parsed.read_problems :],
        missing=graph.missing,
    )
    return parsed.transcript, grown


def grow(grown: Grown, data: bytes) -> Transcript | None:
    """The listing's transcript once `data`, the bytes appended after `grown.size`, are taken
    on (`grown` is changed, and must not be used again if this fails); None when the file must
    be read whole."""
    if not data.endswith(b"\n"):
        return None if data else _grown_transcript(grown)
    problems: list[Problem] = []
    read = records(data, _Record, problems, grown.newlines + 1, replace_bad_utf8=True)
    graph = grown.graph
    new = [line for line in read.lines if line.record.type in GRAPH_TYPES and line.record.uuid]
    if _answers_kept_turns(grown, new) or not _adds_nodes(grown, new):
        return None
    leaves = graph.leaves_above(new)  # the leaves the appended nodes end at
    chosen = _chosen(grown, leaves, {line.record.uuid for line in new})
    if chosen is None or not _extend(grown, chosen):
        return None
    grown.talk.branches = _new_branches(grown, leaves) + grown.talk.branches
    forked = grown.held.forked
    grown.held.add([line.record for line in read.lines])
    if grown.held.forked != forked or not (grown.held.latest.exact and grown.held.fork_latest.exact):
        return None  # a file that turns out to be a fork is dated and counted by all its copies
    grown.read_problems += problems
    grown.size += len(data)
    grown.newlines += read.newlines
    if len(grown.read_problems) + len(grown.graph_problems) > MAX_GROWN_PROBLEMS:
        return None
    return _grown_transcript(grown)


def _answers_kept_turns(grown: Grown, new: list[Line[_Record]]) -> bool:
    """Whether an appended tool result answers a call of a kept branch or inline subagent: a
    result off a turn's path that answers a call of it still unanswered is put back beside it
    (`_Graph._strays`), so that turn may read otherwise now."""
    kept: list[Branch | Sidechain] = [*grown.talk.branches, *grown.talk.sidechains]
    if not kept:
        return False
    answered = {
        str(block.tool_use_id)
        for line in new
        if line.record.type == "user"
        for block in _blocks(line.record)
        if block.type == "tool_result"
    }
    # Most appends answer nothing (an assistant's text, a prompt): the kept turns go unread.
    return bool(answered) and any(
        tool.call_id in answered for part in kept for turn in part.turns for tool in turn.tools
    )


def _grown_transcript(grown: Grown) -> Transcript:
    talk, graph = grown.talk, grown.graph
    talk.turns = len(grown.starts)
    talk.first_prompt = _prompt_title(grown.asked, grown.starts, graph)
    problems = grown.read_problems + grown.graph_problems
    leaf = grown.path[-1].record.uuid
    return _transcript(grown.stem, grown.held, graph, talk, (), problems, grown.newlines, leaf)


def _adds_nodes(grown: Grown, new: list[Line[_Record]]) -> bool:
    """Add the appended nodes to the graph, when each is new, no sidechain record and no parent
    the file missed, and hangs from the conversation, from another new node above it, or from
    a trailing line below the conversation (`_trailing`): False otherwise (the graph is then
    half changed, and the file is read whole)."""
    graph, nodes = grown.graph, grown.graph.nodes
    added: set[str | None] = set()
    for line in new:
        record = line.record
        uuid = record.uuid or ""
        if uuid in nodes or record.is_sidechain or uuid in grown.missing:
            return False
        up = record.parent_uuid or _logical_parent(record)
        above = nodes.get(up or "")
        if above is None or above.record.is_sidechain:
            return False
        if up not in grown.on_path and up not in added and not _trailing(grown, above, added):
            return False
        nodes[uuid] = line
        added.add(uuid)
        if record.parent_uuid:
            graph.children.setdefault(record.parent_uuid, []).append(uuid)
        if record.type == "user":
            graph._user(line)
    graph.changed()
    return True


def _trailing(grown: Grown, line: Line[_Node], added: set[str | None]) -> bool:
    """Whether `line` is a progress or hook line (no user or assistant record) that had nothing
    below it, under the conversation through such lines only: no branch holds it, and a line
    hung from it ends at the conversation."""
    graph = grown.graph
    if any(child not in added for child in graph.children.get(line.record.uuid or "", ())):
        return False
    seen: set[str] = set()
    current: Line[_Node] | None = line
    while current is not None and current.record.uuid not in grown.on_path:
        if current.record.type in ("user", "assistant"):
            return False
        seen.add(current.record.uuid or "")
        current = graph.parent(current, seen)
    return current is not None


def _chosen(grown: Grown, leaves: dict[str | None, Line[_Node]], new: set[str | None]) -> Line[_Node] | None:
    """The active conversation's leaf after the append, when it is one `_Graph.active_path`
    would choose knowing only this much: a new main-chain leaf (later than every old one), or
    else the latest node, still a leaf. None when that cannot be told here."""
    fresh = [leaf for uuid, leaf in leaves.items() if uuid in new and _main_chain(leaf.record)]
    if fresh:
        return max(fresh, key=attrgetter("number"))
    tip = grown.path[-1]
    if any(leaf.number > tip.number for leaf in leaves.values() if _main_chain(leaf.record)):
        return None
    return tip if _still_leaf(grown.graph, tip) else None


def _still_leaf(graph: _Graph, tip: Line[_Node]) -> bool:
    """Whether some node nobody points to has `tip` as its nearest user/assistant node above."""
    stack = [tip.record.uuid or ""]
    while stack:
        uuid = stack.pop()
        below = graph.children.get(uuid)
        if not below:
            return True
        stack.extend(child for child in below if graph.nodes[child].record.type not in ("user", "assistant"))
    return False


def _extend(grown: Grown, chosen: Line[_Node]) -> bool:
    """Lengthen the conversation up to `chosen`; False when it does not go on from its end."""
    graph, path = grown.graph, grown.path
    added: list[Line[_Node]] = []
    seen: set[str] = set()
    current: Line[_Node] | None = chosen
    while current is not None and current.record.uuid not in grown.on_path:
        seen.add(current.record.uuid or "")
        added.append(current)
        current = graph.parent(current, seen)
    if current is not path[-1]:
        return False
    talk = grown.talk
    for line in reversed(added):
        path.append(line)
        grown.on_path.add(line.record.uuid)
        talk.segments += _joins_segment(line.record)
        if line.number in graph.prompts:
            grown.starts.append(line.number)
            talk.copied_prompts += bool(_FORKED_FROM(line.record))
            if grown.asked is None:
                grown.asked = _asked([line.number], graph)
    return True


def _new_branches(grown: Grown, leaves: dict[str | None, Line[_Node]]) -> tuple[Branch, ...]:
    """The branches the appended nodes begin: they hang from the conversation or from one
    another, never from an earlier branch (`_adds_nodes`), so those stay as they were."""
    latest_first = sorted(leaves.values(), key=attrgetter("number"), reverse=True)
    return _branches_from(grown.graph, latest_first, grown.on_path, grown.path)


def _asked(starts: list[int], graph: _Graph) -> int | None:
    """The first of `starts` that `_first_prompt` titles a session by, if any."""
    prompts = graph.prompts
    return next((n for n in starts if n not in graph.commands and not prompts[n].startswith(_UNTITLED)), None)


@dataclass(frozen=True)
class _Parsed:
    lines: list[Line[_Record]]
    graph: _Graph
    path: list[Line[_Node]]
    on_path: set[str | None]  # the uuids of `path`
    transcript: Transcript
    held: _Held
    talk: _Conversation
    starts: list[int]  # the lines of the active conversation's prompts
    read_problems: int  # the first problems, found decoding lines; the graph's come after


def _parse(data: bytes, name: str, *, turns: bool = True, stopped: bool = False) -> _Parsed:
    problems: list[Problem] = []
    read = records(data, _Record, problems, replace_bad_utf8=True)
    lines = read.lines
    read_problems = len(problems)
    graph = _Graph(lines, problems)
    stem = _stem(name)
    path = graph.active_path()
    if turns:
        built = _turns(path, graph, stopped=stopped)
        starts = [turn.start for turn in built]
    else:
        built, starts = (), [group[0].number for group in _groups(path, graph.prompts)]
    held = _Held()
    held.add([line.record for line in lines])
    on_path = {line.record.uuid for line in path}
    talk = _conversation(graph, path, on_path, starts, bool(held.forked))
    leaf = path[-1].record.uuid if path else None
    transcript = _transcript(stem, held, graph, talk, built, problems, read.newlines, leaf)
    return _Parsed(lines, graph, path, on_path, transcript, held, talk, starts, read_problems)


def turn_ends(data: bytes, name: str) -> tuple[str | None, ...]:
    """The uuid of each active-conversation turn's last record, in order. A `--fork-session`
    copy keeps its original's records whole, and each record names the one above it, so two
    files whose Nth ends agree hold the same first N turns, record for record."""
    parsed = _parse(data, name, turns=False)
    return tuple(group[-1].record.uuid for group in _groups(parsed.path, parsed.graph.prompts))


@dataclass(frozen=True)
class Selection:
    """The records a fork after a turn of the active conversation inherits.

    `lines` are the line numbers to copy (a repeated uuid's last copy), in the order their
    records first appear in the file; `parents` maps each selected uuid (in the same
    order) to its nearest selected ancestor (progress lines are links for the UI only and are left out, as
    claude-agent-sdk's fork does); `replacements` are the session's ``content-replacement``
    entries, which the child must carry under its own id."""

    session_id: str
    title: str | None
    turn: Turn
    lines: tuple[int, ...]
    parents: dict[str, str | None]
    replacements: tuple[Any, ...]


def fork_selection(data: bytes, name: str, turn_index: int, *, stopped: bool = False) -> Selection:
    """What a fork after turn `turn_index` (1-based) of the active conversation keeps; `stopped`
    as `read_transcript` takes it.

    Only what the fork needs is derived (the graph, the active path cut into turns, the chosen
    turn and the title), not the whole transcript: a fork of a large file must stay close to
    the cost of re-stamping its records. Raises `NotAForkPoint` when the file has no
    conversation, is a subagent's (`claude --resume` finds no conversation in a child made
    of one), has no such turn, or the turn is open."""
    problems: list[Problem] = []
    lines = records(data, _Link, problems, replace_bad_utf8=True).lines
    graph = _Graph(lines, problems)
    if not graph.nodes:
        raise NotAForkPoint("no-conversation", _no_conversation(problems))
    if graph.is_subagent():
        # Its records carry the session that ran it (as `read_transcript`'s `parent_session`).
        owner = next((line.record.session_id for line in lines if line.record.session_id), None)
        ran = f", {owner} (`remem sessions turns {owner}`)" if owner and owner != _stem(name) else ""
        raise NotAForkPoint("no-conversation", _SUBAGENT + ran)
    path = graph.active_path()
    groups = _groups(path, graph.prompts)
    if not 1 <= turn_index <= len(groups):
        raise NotAForkPoint(
            "no-such-turn", f"turn {turn_index} does not exist: the conversation has {len(groups)}"
        )
    on_path = {line.record.uuid for line in path}
    group = groups[turn_index - 1]
    followed = turn_index < len(groups)
    side = graph.side_nodes(group, on_path)
    turn = _turn(turn_index, group, side, graph, followed=followed, stopped=stopped)
    if not turn.forkable:
        raise NotAForkPoint(
            "open-turn",
            f"turn {turn_index} is {turn.status}: a tool call has no result or there is no answer",
        )
    # The turn ends on the path, or at a record put back after one of it (`_turn`).
    last = next(
        (
            anchor
            for anchor, found in side.placed.items()
            if any(line.record.uuid == turn.key for line in found)
        ),
        turn.key,
    )
    at = next((at for at, line in enumerate(path) if line.record.uuid == last), None)
    if at is None:
        # Or at the `--max-turns` note below the path's end, on no path (`_Graph.stop_note_below`),
        # the path copied whole to keep it; an end anywhere else is a bug's, never such a copy.
        note = None if followed else graph.stop_note_below(path[-1])
        if note is None or note.record.uuid != last:
            raise LookupError(f"turn {turn_index} ends at {last}, neither on the path nor below its end")
        at = len(path) - 1
    through = path[: at + 1]
    kept = {line.record.uuid for line in through}
    # What is put back beside the path through the turn, and the lines nobody says hanging
    # beside it up to the turn's end (not the hook lines after its answer).
    beside = graph.side_nodes(through, on_path)
    kept.update(line.record.uuid for found in beside.placed.values() for line in found)
    kept.update(line.record.uuid for line in beside.beside if line.number <= turn.end)
    selected = sorted(
        (line for uuid in kept if uuid and (line := graph.nodes[uuid]).record.type != "progress"),
        key=attrgetter("number"),
    )
    chosen = {line.record.uuid for line in selected}
    copies = graph.copies
    session = _stem(name)
    titles = _Titles()
    titles.add([line.record for line in lines])
    return Selection(
        session_id=session,
        title=titles.of(graph, _short(graph.prompts[groups[0][0].number]) if groups else None)[0],
        turn=turn,
        lines=tuple(copies.get(line.record.uuid or "", line.number) for line in selected),
        parents={line.record.uuid or "": _kept_ancestor(graph, line, chosen) for line in selected},
        replacements=tuple(
            item
            for line in lines
            if line.record.type == "content-replacement" and line.record.session_id == session
            for item in line.record.replacements or ()
        ),
    )


def _no_conversation(problems: Sequence[Problem]) -> str:
    """Why a file with no conversational record is an error: with the lines refused, when
    some were (a file of another encoding, records of another shape), how many and why; not
    the lines read with U+FFFD for bytes that are not UTF-8, which were not refused."""
    refused = [problem for problem in problems if problem.code != REPLACED_UTF8]
    return f"{_NO_CONVERSATION}; {refused_lines(refused)}" if refused else _NO_CONVERSATION


def _stem(name: str) -> str:
    return name.rsplit("/", 1)[-1].removesuffix(".jsonl")


def _first_prompt(starts: list[int], graph: _Graph) -> str | None:
    """The prompt a session is titled by, as Claude Code's own listing chooses it: the first
    that is neither a slash command (`/clear`, `/model` say nothing of the work) nor a line the
    harness starts a turn with (`_asked`), else the first."""
    return _prompt_title(_asked(starts, graph), starts, graph)


def _prompt_title(asked: int | None, starts: list[int], graph: _Graph) -> str | None:
    first = asked if asked is not None else (starts[0] if starts else None)
    return None if first is None else _short(graph.prompts[first])


def _branch_prompt(branches: Iterable[Branch], graph: _Graph) -> str | None:
    """The prompt of the branches that titles a session whose conversation has none (a line
    lost in the middle cut its prompts off, decision 0302): chosen among all the branches'
    prompts in file order as `_first_prompt` chooses, so a whole read and `grow` agree."""
    starts = sorted(turn.start for branch in branches for turn in branch.turns)
    return _first_prompt(starts, graph) if starts else None


def _short(prompt: str | None) -> str:
    return shortened(prompt.splitlines()[0], PROMPT_CHARS) if prompt else ""


def _kept_ancestor(graph: _Graph, line: Line[_Node], chosen: set[str | None]) -> str | None:
    """The nearest selected record above `line`; None for a root (a compaction boundary too:
    it joins its segment by `logicalParentUuid`, which the child keeps)."""
    if not line.record.parent_uuid:
        return None
    if line.record.parent_uuid in chosen and line.record.uuid not in graph.broken:
        return line.record.parent_uuid  # the usual case: the parent itself is kept
    seen: set[str] = {line.record.uuid or ""}
    above = graph.parent(line, seen)
    while above is not None and above.record.uuid not in chosen:
        seen.add(above.record.uuid or "")
        above = graph.parent(above, seen)
    return above.record.uuid if above is not None else None


@dataclass
class _Conversation:
    """What a listing reads off the graph and its active conversation."""

    root: str | None
    turns: int
    first_prompt: str | None
    copied_prompts: int  # prompts that carry `forkedFrom`: a fork copied their turns
    segments: int
    branches: tuple[Branch, ...]
    subagent: bool
    sidechains: tuple[Sidechain, ...]


def _conversation(
    graph: _Graph, path: list[Line[_Node]], on_path: set[str | None], starts: list[int], forked: bool
) -> _Conversation:
    """The facts of the conversation `path` (whose uuids are `on_path`), whose turns start at the
    lines `starts`."""
    subagent = graph.is_subagent()
    prompts = graph.prompts
    return _Conversation(
        root=path[0].record.uuid if path else None,
        turns=len(starts),
        first_prompt=_first_prompt(starts, graph),
        # Counted for a fork only (`grow` reads whole once a file turns out to be one).
        copied_prompts=sum(1 for line in path if line.number in prompts and _FORKED_FROM(line.record))
        if forked
        else 0,
        segments=sum(1 for line in path[1:] if _joins_segment(line.record)) if graph.joins else 0,
        branches=_branches(graph, path, on_path),
        subagent=subagent,
        sidechains=() if subagent else _sidechains(graph),
    )


def _transcript(
    stem: str,
    held: _Held,
    graph: _Graph,
    talk: _Conversation,
    turns: tuple[Turn, ...],
    problems: Sequence[Problem],
    newlines: int,
    leaf: str | None,
) -> Transcript:
    first_prompt = (
        talk.first_prompt if talk.first_prompt is not None else _branch_prompt(talk.branches, graph)
    )
    title, title_source = held.titles.of(graph, first_prompt)
    forked = held.forked if held.forked != stem else None
    owner = held.first.session_id if held.first else None
    return Transcript(
        session_id=stem,
        cwd=held.cwd,
        title=title,
        title_source=title_source,
        created_at=_created(held, bool(forked)),
        updated_at=held.latest.value,
        version=held.version,
        subagent=talk.subagent,
        agent_id=held.agent_id,
        parent_session=owner if talk.subagent and owner != stem else None,
        lineage=(Edge("fork", forked),) if forked else (),
        fork_turn=(talk.copied_prompts or None) if forked else None,
        turns=turns,
        turn_count=talk.turns,
        branches=talk.branches,
        segments=talk.segments,
        root=talk.root,
        foreign_summaries=held.titles.foreign(graph),
        problems=tuple(problems),
        error=None if graph.nodes else _no_conversation(problems),
        sidechains=talk.sidechains,
        newlines=newlines,
        leaf=leaf,
    )


def _joins_segment(record: _Node) -> bool:
    """Whether `record` begins a compaction segment joined to the conversation above it."""
    return not record.parent_uuid and bool(_logical_parent(record))


@dataclass
class _Latest:
    """The latest of the stamps added, as `_latest` of them all says. Claude Code writes one
    fixed-width UTC form, whose latest is a max that takes more stamps on; once stamps of
    another form come after the first ones, `exact` is False: the latest of them all is then
    not known from this one."""

    value: str | None = None
    width: int = 0  # of every stamp so far, all of the fixed-width UTC form (else 0)
    exact: bool = True

    def add(self, stamps: list[str]) -> None:
        if not stamps:
            return
        width = _utc_width(stamps)
        if self.value is None:
            self.value, self.width = _latest(stamps), width
        elif self.width and width == self.width:
            self.value = max(self.value, max(stamps))
        else:
            self.exact = False


@dataclass
class _Titles:
    """What titles a transcript, gathered from its records in file order: the latest
    `custom-title` and `ai-title`, and every summary (of a leaf here or in another file)."""

    custom: str | None = None
    ai: str | None = None
    summaries: list[tuple[str | None, str]] = field(default_factory=list)  # (leafUuid, summary)

    def add(self, held: Sequence[_Node]) -> None:
        self.custom = _first(_CUSTOM_TITLE, reversed(held)) or self.custom
        self.ai = _first(_AI_TITLE, reversed(held)) or self.ai
        self.summaries += [(r.leaf_uuid, r.summary) for r in held if r.type == "summary" and r.summary]

    def of(self, graph: _Graph, first_prompt: str | None) -> tuple[str | None, str | None]:
        """The title and where it comes from: "custom-title", "ai-title", "summary" or "prompt"."""
        if self.custom:
            return self.custom, "custom-title"
        if self.ai:
            return self.ai, "ai-title"
        own = next((text for leaf, text in reversed(self.summaries) if leaf in graph.nodes), None)
        if own:
            return own, "summary"
        return (first_prompt, "prompt") if first_prompt is not None else (None, None)

    def foreign(self, graph: _Graph) -> tuple[tuple[str, str], ...]:
        """(leafUuid, summary) of the summaries of leaves in other files."""
        return tuple((leaf, text) for leaf, text in self.summaries if leaf and leaf not in graph.nodes)


@dataclass
class _Held:
    """What a transcript's records say besides its graph, gathered in file order; a transcript
    that only grew takes its appended records on (`grow`)."""

    first: _Record | None = None  # the first with a session id or a cwd
    cwd: str | None = None
    agent_id: str | None = None
    version: str | None = None  # the latest
    titles: _Titles = field(default_factory=_Titles)
    forked: str | None = None  # the first `forkedFrom.sessionId`
    first_time: str | None = None  # the first stamp that is a time
    latest: _Latest = field(default_factory=_Latest)  # of every stamp
    fork_latest: _Latest = field(default_factory=_Latest)  # of the stamps of copied records

    def add(self, held: Sequence[_Record]) -> None:
        # Fields most lines lack or repeat are gathered in C (filter, map), not by a loop per line.
        if self.first is None:
            self.first = next((record for record in held if record.session_id or record.cwd), None)
        self.cwd = self.cwd or _first(_CWD, held)
        self.agent_id = self.agent_id or _first(_AGENT_ID, held)
        self.version = _first(_VERSION, reversed(held)) or self.version
        self.titles.add(held)
        if self.forked is None:
            forks = filter(None, map(_FORKED_FROM, held))
            self.forked = next((f.session_id for f in forks if f.session_id), None)
        stamps = list(filter(None, map(_TIMESTAMP, held)))
        if self.first_time is None:
            self.first_time = _first_time(stamps)
        self.latest.add(stamps)
        if self.forked:  # only a fork is dated by its copies (`grow` reads whole once one is)
            self.fork_latest.add([r.timestamp for r in held if r.forked_from and r.timestamp])


def _sidechains(graph: _Graph) -> tuple[Sidechain, ...]:
    """The inline subagents of a main file, in file order: each sidechain leaf's path (its
    sidechain records, walked back) is one subagent's conversation, named by its first
    record; the latest leaf of each wins, as for the main conversation."""
    if not graph.sidechains:
        return ()
    found: dict[str, list[Line[_Node]]] = {}
    for leaf in graph.leaves():
        if leaf.record.is_sidechain:
            path = [line for line in graph.walk_up(leaf) if line.record.is_sidechain]
            found.setdefault(path[0].record.uuid or "", path)
    chains = []
    for root, path in sorted(found.items(), key=lambda item: item[1][0].number):
        held = [cast(_Record, line.record) for line in path]  # the graph holds the file's records
        stamps = [record.timestamp for record in held if record.timestamp]
        agent = next((record.agent_id for record in held if record.agent_id), None)
        chains.append(Sidechain(root, agent, _first_time(stamps), _turns(path, graph)))
    return tuple(chains)


class _Graph:
    """The uuid graph of a file: nodes, and what the rules ask of them more than once, derived
    in the one pass that builds it: which nodes are real prompts (and their text), the tool
    results, how many are sidechain records.

    A repeated uuid's last copy wins, as in the SDK, but stands where the uuid first appeared:
    a node's line number is its place in the conversation, which a copy appended later does not
    move (else a turn could start after it ends, and a fork cut by line keep the wrong records).
    `copies` says which line a fork must copy for such a node."""

    def __init__(self, lines: Sequence[Line[_Node]], problems: list[Problem]) -> None:
        self.problems = sink = ProblemSink(problems)
        self.copies: dict[str, int] = {}  # a repeated uuid -> the line of its last copy
        # Comprehensions, not a loop with lookups: this runs on every line of every listed file.
        graphed = [line for line in lines if line.record.uuid and line.record.type in GRAPH_TYPES]
        nodes: dict[str, Line[_Node]] = {line.record.uuid: line for line in graphed}  # type: ignore[misc]
        if len(nodes) != len(graphed):
            nodes = self._first_places(graphed)
        self.nodes = nodes
        self.children: dict[str, list[str]] = {}
        self.prompts: dict[int, str] = {}  # line number -> the prompt's text, for real prompts
        self.interrupts: set[int] = set()  # user lines that mark a turn stopped by the user
        self.commands: set[int] = set()  # user lines that are a slash command's invocation
        self.shell: set[int] = set()  # user lines that are a bash-mode command (`! cmd`)
        self.missing: set[str] = set()  # parents named but not in the file
        self.joins = 0  # compaction boundaries joined to a node above by `logicalParentUuid` only
        self.sidechains = sidechains = 0
        earlier = True  # every parent on an earlier line: then no chain can loop
        children, above_of, user = self.children, nodes.get, self._user
        for uuid, line in nodes.items():
            record = line.record
            if record.is_sidechain:
                sidechains += 1
            if parent := record.parent_uuid:
                siblings = children.get(parent)
                if siblings is None:
                    children[parent] = [uuid]
                else:
                    siblings.append(uuid)
                above = above_of(parent)
                if above is None:
                    self.missing.add(parent)
                    sink.add(
                        line.number,
                        "missing-parent",
                        f"line {line.number}: parent {parent} is not in the file",
                    )
                elif above.number >= line.number:
                    earlier = False
            elif _logical_parent(record):
                self.joins += 1
            if record.type == "user":
                user(line)
        self.sidechains = sidechains
        # Parent links all point up the file: a walk along them alone cannot loop.
        self.ordered = earlier
        self.broken: set[str] = set()
        self.bridged = 0  # cycles Claude Code's timestamp fallback goes on from (`_bridge`)
        self._timed: tuple[list[int], list[Line[_Node]]] | None = None  # `_bridge`'s
        if not earlier:
            self._cut_cycles()
        sink.close()
        self._leaves: list[Line[_Node]] | None = None
        self._responses: dict[str, list[Line[_Node]]] | None = None  # `responses`
        self._calls: _Calls | None = None  # `calls`

    def changed(self) -> None:
        """Forget what was derived from the nodes, once nodes were added (`grow`)."""
        self._leaves = self._responses = self._calls = None

    def _first_places(self, graphed: list[Line[_Node]]) -> dict[str, Line[_Node]]:
        """The nodes of a file that repeats a uuid: each uuid's last copy, at its first line."""
        nodes: dict[str, Line[_Node]] = {}
        for line in graphed:
            uuid = cast(str, line.record.uuid)
            if (first := nodes.get(uuid)) is not None:
                self.problems.add(line.number, "duplicate-uuid", f"line {line.number} repeats uuid {uuid}")
                self.copies[uuid] = line.number
                line = Line(first.number, line.record)
            nodes[uuid] = line
        return nodes

    def is_subagent(self) -> bool:
        """Whether this is a subagent's own file: every record of it is a sidechain record."""
        return bool(self.nodes) and self.sidechains == len(self.nodes)

    def _user(self, line: Line[_Node]) -> None:
        """What the rules ask of a user line, its text taken once."""
        content = line.record.message.content if line.record.message else None
        if isinstance(content, list):
            answered = texts = False
            for block in content:
                if block.type == "tool_result":
                    answered = True
                elif block.type == "text":
                    texts = True
            if answered and not texts:  # tool results alone: no prompt, marker or command
                return
        text = _text(line.record)
        if text[:1] in _MARKED:
            if text.startswith(INTERRUPTED):
                self.interrupts.add(line.number)
            elif text.startswith("<command-"):
                self.commands.add(line.number)
            elif text.startswith(_SHELL_INPUT):
                self.shell.add(line.number)
        if (prompt := _prompt_text(line.record, text)) is not None:
            self.prompts[line.number] = prompt

    def _cut_cycles(self) -> None:
        """Cut every parentUuid cycle at its earliest line (`_break_cycles`), whose node goes on
        from where Claude Code's walk goes on (`_bridge`), or else is a root; reported."""
        nodes, children = self.nodes, self.children
        cut = self._break_cycles()
        for uuid in cut:  # no longer its parent's child
            parent = nodes[uuid].record.parent_uuid or ""
            children[parent].remove(uuid)
            if not children[parent]:
                del children[parent]
        for uuid in sorted(cut, key=lambda uuid: nodes[uuid].number):
            line = nodes[uuid]
            above = self._bridge(line)
            if above is None:
                self.broken.add(uuid)
                said = "cut there"
            else:
                line.record.parent_uuid = above.record.uuid
                children.setdefault(above.record.uuid or "", []).append(uuid)
                self.bridged += 1
                said = (
                    f"read on from line {above.number}, the latest record written up to "
                    f"{_BRIDGE_MS // 1000} s before it, as Claude Code resumes it"
                )
            self.problems.add(
                line.number, "cycle", f"line {line.number}: parentUuid chain loops back to it; {said}"
            )

    def _bridge(self, line: Line[_Node]) -> Line[_Node] | None:
        """Where Claude Code's walk back from the leaf goes on from `line`, whose parent it has
        seen already (a loop): the latest record of its side (main chain or sidechain), stamped
        no later than `line` and at most `_BRIDGE_MS` before it, that is not below it (so
        not one the walk came up through), and not a file snapshot; of records stamped alike,
        the first in the file. None when there is none, when `line` has no time, or past the
        first `_BRIDGES_MAX` loops of a file (a damaged file's, each then a root)."""
        when = _instant(getattr(line.record, "timestamp", None) or "")
        if when is None or self.bridged >= _BRIDGES_MAX:
            return None
        if self._timed is None:  # once per file with a loop: every node's time, in time order
            timed = [
                (_millis(stamp), -other.number, other)
                for other in self.nodes.values()
                if (stamp := _instant(getattr(other.record, "timestamp", None) or "")) is not None
            ]
            timed.sort(key=lambda item: item[:2])
            self._timed = ([item[0] for item in timed], [item[2] for item in timed])
        times, timed_lines = self._timed
        below: set[str] = set()
        stack = [line.record.uuid or ""]
        while stack:
            uuid = stack.pop()
            if uuid not in below:
                below.add(uuid)
                stack.extend(self.children.get(uuid, ()))
        side, until = line.record.is_sidechain, _millis(when)
        # From the latest stamped no later than `line` (of those stamped alike, the first in
        # the file: sorted last among them) back to `_BRIDGE_MS` before it.
        at = bisect_right(times, until) - 1
        while at >= 0 and until - times[at] <= _BRIDGE_MS:
            other = timed_lines[at]
            record = other.record
            at -= 1
            if record.uuid in below or record.is_sidechain != side:
                continue
            if record.type == "system" and record.subtype == "file_snapshot":
                continue
            return other
        return None

    def _break_cycles(self) -> set[str]:
        """Find every parentUuid cycle (each node has one parent, so a walk finds it in linear
        time overall): the node of its earliest line, where each is cut."""
        state: dict[str, int] = {}  # 1: on the current walk, 2: done
        broken: set[str] = set()
        for start in self.nodes:
            walk: list[str] = []
            current: str | None = start
            while current in self.nodes and current not in state:
                state[current] = 1
                walk.append(current)
                current = self.nodes[current].record.parent_uuid
            if current is not None and state.get(current) == 1:
                loop = walk[walk.index(current) :]
                broken.add(min(loop, key=lambda uuid: self.nodes[uuid].number))
            for uuid in walk:
                state[uuid] = 2
        return broken

    def parent(self, line: Line[_Node], seen: set[str]) -> Line[_Node] | None:
        """The node above `line` (across a compaction boundary), None at a root or a defect."""
        record = line.record
        if record.uuid in self.broken:
            return None
        target = record.parent_uuid or _logical_parent(record)
        if not target:
            return None
        above = self.nodes.get(target)
        if above is None or target in seen:  # both reported once, file-wide, by __init__
            return None
        return above

    def walk_up(self, start: Line[_Node]) -> list[Line[_Node]]:
        """`start` and its ancestors, root first; stops at a cut cycle or a missing parent."""
        path: list[Line[_Node]] = []
        current: Line[_Node] | None = start
        if self.ordered:  # no loop along parent links: no need to remember what was seen
            above_of = self.nodes.get
            while current is not None and (target := current.record.parent_uuid):
                path.append(current)
                current = above_of(target)
            if current is None or not _logical_parent(current.record):
                if current is not None:
                    path.append(current)
                path.reverse()
                return path
        return self._walk_up(current, path)

    def _walk_up(self, current: Line[_Node] | None, path: list[Line[_Node]]) -> list[Line[_Node]]:
        """`walk_up` on from `current`, below which `path` was walked, remembering each node
        seen: a compaction's logical parent may point anywhere, a cycle too."""
        seen = {line.record.uuid or "" for line in path}
        nodes, broken = self.nodes, self.broken
        while current is not None:
            uuid = current.record.uuid or ""
            seen.add(uuid)
            path.append(current)
            # `parent`, inlined: this walks the whole conversation
            target = current.record.parent_uuid or _logical_parent(current.record)
            if not target or target in seen or uuid in broken:
                break
            current = nodes.get(target)
        path.reverse()
        return path

    def leaves(self) -> list[Line[_Node]]:
        """The nearest user/assistant node above each terminal node, latest in the file first."""
        if self._leaves is None:
            self._leaves = self._find_leaves()
        return self._leaves

    def _find_leaves(self) -> list[Line[_Node]]:
        found = self.leaves_above(self.nodes.values())
        return sorted(found.values(), key=lambda line: line.number, reverse=True)

    def leaves_above(self, lines: Iterable[Line[_Node]]) -> dict[str | None, Line[_Node]]:
        """The nearest user/assistant node above each of `lines` nobody points to, by uuid."""
        found: dict[str | None, Line[_Node]] = {}
        for line in lines:
            if line.record.uuid in self.children:
                continue
            seen: set[str] = set()
            current: Line[_Node] | None = line
            while current is not None and current.record.type not in ("user", "assistant"):
                seen.add(current.record.uuid or "")
                current = self.parent(current, seen)
            if current is not None:
                found[current.record.uuid] = current
        return found

    def stop_note_below(self, line: Line[_Node]) -> Line[_Node] | None:
        """Claude Code's note that `--max-turns` stopped the turn, among the lines nobody says
        hanging below `line`: written after the path's last record, it is on no path until a
        resume's prompt hangs off it. The walk stops at user and assistant records, so it
        stays below `line`."""
        stack = list(self.children.get(line.record.uuid or "", ()))
        while stack:
            below = self.nodes[stack.pop()]
            if below.record.type in ("user", "assistant"):
                continue
            if _max_turns(below.record):
                return below
            stack.extend(self.children.get(below.record.uuid or "", ()))
        return None

    def responses(self) -> dict[str, list[Line[_Node]]]:
        """The assistant records of each response (`message.id`), in file order."""
        if self._responses is None:
            found: dict[str, list[Line[_Node]]] = {}
            for line in self.nodes.values():
                if (response := _message_id(line.record)) is not None:
                    found.setdefault(response, []).append(line)
            self._responses = found
        return self._responses

    def calls(self) -> _Calls:
        """Who made each tool call and which records answer it, file-wide."""
        if self._calls is None:
            owners: dict[str, str | None] = {}
            answers: dict[str, list[Line[_Node]]] = {}
            for line in self.nodes.values():
                record = line.record
                if record.type == "assistant":
                    made = _response(record)
                    for call in _made(record):
                        owner = owners.get(call, record.uuid)
                        # A call two responses claim is owned by neither: it places no result.
                        same = owner is not None and _response(self.nodes[owner].record) == made
                        owners[call] = record.uuid if same else None
                elif record.type == "user" and record.parent_uuid:
                    for call in _answered(record):
                        answers.setdefault(call, []).append(line)
            self._calls = _Calls(owners, answers)
        return self._calls

    def _all_on(self, on_path: set[str | None]) -> bool:
        """Whether every node is on the path whose nodes are `on_path` (a plain conversation's
        path): then nothing lies beside it. Only a path as long as the file is compared whole."""
        return len(on_path) >= len(self.nodes) and self.nodes.keys() <= on_path

    def side_nodes(self, lines: Sequence[Line[_Node]], on_path: set[str | None]) -> _Side:
        """What belongs beside `lines`, a stretch of the path whose nodes are `on_path`: what
        claude-agent-sdk's reader (and `claude --resume`) puts back
        after each response of theirs (`_recovered`), and the lines nobody says (progress,
        attachments, hook lines) that hang beside them or those records. Not an abandoned
        continuation: a later response, its calls, its prompt."""
        if self._all_on(on_path):
            return _NOTHING_BESIDE
        placed = self._recovered(lines, on_path)
        taken = {line.record.uuid for found in placed.values() for line in found}
        children = self.children
        stack = [
            child
            for line in (*lines, *(line for found in placed.values() for line in found))
            if line.record.uuid in children
            for child in children[line.record.uuid or ""]
            if child not in on_path
        ]
        beside: list[Line[_Node]] = []
        while stack:
            uuid = stack.pop()
            line = self.nodes[uuid]
            if uuid in on_path or uuid in taken or line.record.type in ("user", "assistant"):
                continue
            beside.append(line)
            stack.extend(children.get(uuid, ()))
        beside.sort(key=attrgetter("number"))
        return _Side(placed, beside)

    def _recovered(
        self, lines: Sequence[Line[_Node]], on_path: set[str | None]
    ) -> dict[str | None, list[Line[_Node]]]:
        """By the uuid of its anchor (a response's last record among `lines`), the records of
        that response off the path that claude-agent-sdk's reader puts back after it, in file
        order: the response's other records (Claude Code writes one per content block, chained,
        and a parallel call's result hangs off its own call's record, so the path goes through
        one result only), the tool results hanging off any of them, and a result hanging
        elsewhere that answers a call of theirs still unanswered. An assistant record with no
        `message.id` is a response alone."""
        anchors: dict[str, Line[_Node]] = {}
        among: dict[str, set[str | None]] = {}  # each response's records among `lines`
        for line in lines:
            if line.record.type == "assistant":
                anchors[key := _response(line.record)] = line
                among.setdefault(key, set()).add(line.record.uuid)
        placed: dict[str | None, list[Line[_Node]]] = {}
        if not anchors:
            return placed
        children, nodes, responses = self.children, self.nodes, self.responses()
        taken: set[str | None] = set()
        said: set[str] | None = None  # the calls `lines` answer, when a stray is looked for
        for key, anchor in anchors.items():
            records = responses[key] if _message_id(anchor.record) else [anchor]
            on_stretch = among[key]
            if (
                len(records) == len(on_stretch)
                and all(child in on_path for uuid in on_stretch for child in children.get(uuid or "", ()))
                and not self._answered_off(records, on_path)
            ):
                continue  # nothing of it off the path: most responses
            members = self._members(records, on_stretch, on_path)
            ids = {member.record.uuid for member in members}
            found = [member for member in members if member.record.uuid not in on_path]
            for member in members:
                for child in children.get(member.record.uuid or "", ()):
                    below = nodes[child]
                    if child not in on_path and below.record.type == "user" and _answered(below.record):
                        found.append(below)
            made = [call for member in members for call in _made(member.record)]
            if made:
                if said is None:
                    said = {
                        call
                        for line in lines
                        if line.record.type == "user"
                        for call in _answered(line.record)
                    }
                returned = {
                    call for line in found if line.record.type == "user" for call in _answered(line.record)
                }
                if any(call not in said and call not in returned for call in made):
                    found += self._strays(
                        made, said | returned, ids, on_path, taken.union(line.record.uuid for line in found)
                    )
            found = [line for line in found if line.record.uuid not in taken]
            if found:
                placed[anchor.record.uuid] = sorted(found, key=attrgetter("number"))
                taken.update(line.record.uuid for line in found)
        return placed

    def _members(
        self, records: list[Line[_Node]], among: set[str | None], on_path: set[str | None]
    ) -> list[Line[_Node]]:
        """Of a response's `records`, those that belong with its records `among` a stretch of
        the path: those, and those off the path chained below them, in file order. Not one on
        the path past the stretch (a fork's cut), nor one of another response that reuses the
        id (a test server's, say)."""
        if len(records) == len(among):  # all of them on the stretch: the usual case
            return records
        ids = {line.record.uuid for line in records}
        joined = set(among)
        stack = list(joined)
        while stack:
            for child in self.children.get(stack.pop() or "", ()):
                if child in ids and child not in joined and child not in on_path:
                    joined.add(child)
                    stack.append(child)
        return [line for line in records if line.record.uuid in joined]

    def _strays(
        self,
        made: list[str],
        answered: set[str],
        members: set[str | None],
        on_path: set[str | None],
        taken: set[str | None],
    ) -> list[Line[_Node]]:
        """Results off the path, hanging off none of a response's records `members`, that answer
        a call of theirs (`made`) not yet `answered` (which they are added to), in file order:
        written by the same agent, and each answering a call still open when it comes."""
        owners, answers = self.calls()
        sidechain = any(self.nodes[member or ""].record.is_sidechain for member in members)
        candidates = sorted(
            {
                line.number: line
                for call in made
                if call not in answered and owners.get(call) in members
                for line in answers.get(call, ())
                if line.record.uuid not in on_path
                and line.record.uuid not in taken
                and line.record.parent_uuid not in members
                and bool(line.record.is_sidechain) == sidechain
            }.items()
        )
        strays = []
        for _, line in candidates:
            calls = _answered(line.record)
            if any(call not in answered and owners.get(call) in members for call in calls):
                answered.update(calls)
                strays.append(line)
        return strays

    def sides(self, groups: list[list[Line[_Node]]], on_path: set[str | None]) -> list[_Side]:
        """`side_nodes` of every group of a path, looked for only in the groups something off
        the path hangs from or belongs to (in a plain conversation nothing is off it). Found
        from the groups' own children: a branch's path is short, and looking through all that
        is off it, for each of a file's thousands of branches, cost their square."""
        if self._all_on(on_path):
            return [_NOTHING_BESIDE for _ in groups]
        children, broken = self.children, self.broken
        return [
            self.side_nodes(group, on_path)
            if any(
                child not in on_path and child not in broken
                for line in group
                for child in children.get(line.record.uuid or "", ())
            )
            or self._reaches_off(group, on_path)
            else _NOTHING_BESIDE
            for group in groups
        ]

    def _answered_off(self, records: list[Line[_Node]], on_path: set[str | None]) -> bool:
        """Whether a call of a response's `records` has a result off the path (one hanging
        elsewhere than from it, that claude-agent-sdk may put back after it)."""
        calls = self.calls()
        return any(
            result.record.uuid not in on_path
            for line in records
            for call in _made(line.record)
            if calls.owners.get(call) is not None
            for result in calls.answers.get(call, ())
        )

    def _reaches_off(self, group: list[Line[_Node]], on_path: set[str | None]) -> bool:
        """Whether a response of `group` has a record off the path, or a call of it a result
        off the path hanging elsewhere than from `group` (under a line off the path, say)."""
        for line in group:
            record = line.record
            if record.type != "assistant":
                continue
            key = _message_id(record)
            if key is not None and any(member.record.uuid not in on_path for member in self.responses()[key]):
                return True
            if self._answered_off([line], on_path):
                return True
        return False

    def climb_to(
        self, start: Line[_Node], known: Container[str | None]
    ) -> tuple[str | None, list[Line[_Node]]]:
        """From `start` up to the first node in `known`: that node's uuid (None if none) and the
        nodes below it, top first."""
        path: list[Line[_Node]] = []
        seen: set[str] = set()
        current: Line[_Node] | None = start
        while current is not None and current.record.uuid not in known:
            seen.add(current.record.uuid or "")
            path.append(current)
            current = self.parent(current, seen)
        path.reverse()
        return (current.record.uuid if current else None), path

    def active_path(self) -> list[Line[_Node]]:
        leaves = self.leaves()
        main = [leaf for leaf in leaves if _main_chain(leaf.record)]
        chosen = (main or leaves)[:1]
        return self.walk_up(chosen[0]) if chosen else []


class _Calls(NamedTuple):
    owners: dict[str, str | None]  # call id -> the assistant record that made it (None: ambiguous)
    answers: dict[str, list[Line[_Node]]]  # call id -> the tool-result records answering it


@dataclass(frozen=True)
class _Side:
    """What belongs beside a stretch of the path (`_Graph.side_nodes`)."""

    # By the uuid of a response's last record on the stretch, the records of that response
    # claude-agent-sdk's reader puts back after it, in file order.
    placed: dict[str | None, list[Line[_Node]]]
    beside: list[Line[_Node]]  # lines nobody says (progress, attachments, hooks), in file order

    def lines(self) -> list[Line[_Node]]:
        """Every one of them, in file order."""
        return sorted(
            (*self.beside, *(line for found in self.placed.values() for line in found)),
            key=attrgetter("number"),
        )


_NOTHING_BESIDE = _Side({}, [])


_SYNTHETIC = "<synthetic>"  # the `model` of an assistant record Claude Code wrote itself
# How far back in time Claude Code's walk from a leaf looks for the record to go on from, at a
# parent it has seen already or that is not in the file (its `tengu_chain_timestamp_fallback`).
_BRIDGE_MS = 5000
_BRIDGES_MAX = 50  # loops of a file read on so; past them, each is cut (bounds a hostile file's cost)


def _message_id(record: _Node) -> str | None:
    """The response an assistant record is a content block of (its API `message.id`)."""
    if record.type != "assistant" or record.message is None:
        return None
    key = record.message.id
    return key if isinstance(key, str) and key else None


def _response(record: _Node) -> str:
    """The response of an assistant record: its `message.id`, else the record alone."""
    return _message_id(record) or f"record {record.uuid}"


def _made(record: _Node) -> list[str]:
    """The ids of an assistant record's tool calls."""
    return [str(block.id) for block in _blocks(record) if block.type == "tool_use"]


def _answered(record: _Node) -> list[str]:
    """The ids of the calls a user record's tool results answer."""
    return [str(block.tool_use_id) for block in _blocks(record) if block.type == "tool_result"]


def _unsaid(record: _Node) -> bool:
    """Whether an assistant record is one Claude Code wrote, not the model, and not an API
    error: the "No response requested." it puts after a turn the user stopped, say."""
    message = record.message
    return message is not None and message.model == _SYNTHETIC and not record.is_api_error_message


def _max_turns(record: _Node) -> bool:
    """Whether a record is Claude Code's note that `--max-turns` stopped the turn."""
    attachment = record.attachment
    return isinstance(attachment, _Attachment) and attachment.type == "max_turns_reached"


def _logical_parent(record: _Node) -> str | None:
    """Where a compaction boundary continues: the last node before the compaction."""
    if record.type == "system" and record.subtype == "compact_boundary":
        return record.logical_parent_uuid
    return None


def _main_chain(record: _Node) -> bool:
    return not record.is_sidechain and not record.team_name and not record.is_meta


def _blocks(record: _Node) -> Sequence[_Block]:
    content = record.message.content if record.message else None
    if isinstance(content, str):
        return (_Block(type="text", text=content),)
    return content or ()


def _prompt_text(record: _Node, text: str) -> str | None:
    """The user's own text if `record`, whose text is `text`, is a real prompt, else None."""
    if record.type != "user" or record.is_meta or record.is_compact_summary:
        return None
    if record.origin is not None and record.origin.kind in HARNESS_ORIGINS:
        return None
    content = record.message.content if record.message else None
    # A string is one text block: no tool result, no image (most prompts, asked no more).
    blocks = () if isinstance(content, str) else content or ()
    if not isinstance(content, str) and (not blocks or any(block.type == "tool_result" for block in blocks)):
        return None
    if text[:1] in _MARKED:
        if text.startswith(NOT_PROMPTS) or text.startswith(INTERRUPTED):
            return None
        command = _COMMAND.search(text) if text.startswith("<command-") else None
        if command:
            args = _COMMAND_ARGS.search(text)
            return " ".join(
                part for part in ("/" + command.group(1).lstrip("/"), args and args.group(1)) if part
            )
        shell = _SHELL.match(text) if text.startswith(_SHELL_INPUT) else None
        if shell:
            return f"! {shell.group(1).strip()}".rstrip()
    if not text and any(block.type == "image" for block in blocks):
        return "[image]"
    return text or None


def _text(record: _Node) -> str:
    """The text blocks of a record's message, joined and stripped, without the blocks the
    harness wrote into them (`_INJECTED`: what the user has open or selected in an editor, a
    system reminder, a hook's addition); a text block that was wholly such blocks is left out."""
    content = record.message.content if record.message else None
    if isinstance(content, str):
        return _uninjected(content).strip()
    texts = ["" if block.text is None else str(block.text) for block in content or () if block.type == "text"]
    kept = [text for raw in texts if (text := _uninjected(raw)) is raw or text.strip()]
    return "\n".join(kept).strip()


def _uninjected(text: str) -> str:
    """`text` without its injected blocks: `text` itself when it holds none."""
    if "</" not in text:  # most texts: no closing tag, nothing to cut
        return text
    cut, count = _INJECTED.subn("", text)
    return cut if count else text


def _groups(path: list[Line[_Node]], prompts: dict[int, str]) -> list[list[Line[_Node]]]:
    """The nodes of each turn of a path, in order; records before the first prompt belong to none."""
    groups: list[list[Line[_Node]]] = []
    for line in path:
        if line.number in prompts:
            groups.append([line])
        elif groups:
            groups[-1].append(line)
    return groups


def _turns(
    path: list[Line[_Node]], graph: _Graph, first_index: int = 1, *, stopped: bool = False
) -> tuple[Turn, ...]:
    """The turns of a path of nodes, in order; each but the last is followed by the next prompt,
    and the last has ended when the file is `stopped`.
    A compaction between two turns (its summary after all the first one said) is the next one's,
    the first to run on the summary, as in a Codex rollout."""
    groups = _groups(path, graph.prompts)
    sides = graph.sides(groups, {line.record.uuid for line in path})
    last = len(groups) - 1
    turns: list[Turn] = []
    carried = False
    for n, (group, side) in enumerate(zip(groups, sides, strict=True)):
        turn = _turn(first_index + n, group, side, graph, followed=n < last, carried=carried, stopped=stopped)
        turns.append(turn)
        said = _last_said(group, graph)
        carried = any(line.record.is_compact_summary and line.number > said for line in group)
    return tuple(turns)


def _last_said(group: list[Line[_Node]], graph: _Graph) -> int:
    """The line of the last user or assistant record said in the turn of `group` (`_talk`)."""
    return max((line.number for line in group if _talk(line, graph)), default=0)


def _talk(line: Line[_Node], graph: _Graph) -> bool:
    """Whether `line` is a user or assistant record a turn is made of: not an isMeta line (the
    caveat Claude Code writes before a local slash command, a hook's context), a compaction
    summary, a local or shell command's output, or a line whose text was wholly injected (a
    system reminder), which no turn starts at and nobody said."""
    record = line.record
    if record.type == "assistant" or line.number in graph.prompts:
        return True
    if record.type != "user" or record.is_meta or record.is_compact_summary:
        return False
    text = _text(record)
    if text:
        return not text.startswith(_UNSAID)
    # No text: tool results (said), or text blocks that were all the harness's.
    blocks = _blocks(record)
    return not blocks or any(block.type != "text" for block in blocks)


# Claude Code's summary ends with where its own transcript lies ("… read the full transcript at:
# /home/…/projects/…/<id>.jsonl"): a local path, of no use to a model that cannot read it.
_TRANSCRIPT_POINTER = re.compile(r"^[^\n]*\bfull transcript at: [^\n]*\n?", re.MULTILINE)


def evidence_turns(data: bytes, name: str) -> tuple[TurnText, ...]:
    """The turns of the active conversation as its model still sees them, with their whole text.

    A compaction replaces what came before it by its summary: what precedes the latest
    ``compact_boundary`` is left out (it reaches the reader only through that summary, never
    twice). A turn the boundary falls in keeps what follows it, the summary included: its
    `start` and `end` are moved to the lines kept (from the first of them said or summarised to
    its end, or, when its answer came before the boundary, to the last of them), and its tools
    are those called after the boundary, so its range names only lines whose text is shown."""
    parsed = _parse(data, name, stopped=True)  # a review only takes sessions no longer live
    path, turns, graph = parsed.path, parsed.transcript.turns, parsed.graph
    prompts = graph.prompts
    place = {line.number: at for at, line in enumerate(path)}
    boundary = max(
        (at for at, line in enumerate(path) if _logical_parent(line.record) is not None), default=-1
    )
    queued = _queued_prompts(data, path)
    texts = []
    for turn, group in zip(turns, _groups(path, prompts), strict=True):
        kept = [line for line in group if place[line.number] > boundary]
        if not kept:
            continue
        summaries = tuple(
            text
            for line in kept
            if line.record.is_compact_summary and (text := _TRANSCRIPT_POINTER.sub("", _text(line.record)))
        )
        mid_turn = tuple(queued[line.number] for line in kept if line.number in queued)
        if kept[0] is group[0]:
            prompt = prompts[group[0].number]
            shown = _through_results(turn, kept)
            texts.append(TurnText(shown, ((prompt,) if prompt else ()) + mid_turn, summaries, turn.answer))
            continue
        ends_after = place[turn.end] > boundary
        answer = turn.answer if ends_after else None
        cut = _through_results(_after_boundary(turn, kept, path, graph, ends_after), kept)
        texts.append(TurnText(cut, mid_turn, summaries, answer))
    return tuple(texts)


def _through_results(turn: Turn, kept: list[Line[_Node]]) -> Turn:
    """`turn` with its range taken on to the last tool result among its lines `kept`: evidence
    shows each returned tool's outcome, so the range a proposal cites must hold the line that
    says it (the last turn, its calls returned after its answer, ends at that answer while it
    may still go on). Only the evidence's range: the turn's own end is where a fork cuts."""
    results = [line.number for line in kept if line.number > turn.end and _returns(line.record)]
    return msgspec.structs.replace(turn, end=results[-1]) if results else turn


def _returns(record: _Node) -> bool:
    return record.type == "user" and any(block.type == "tool_result" for block in _blocks(record))


def _queued_prompts(data: bytes, path: list[Line[_Node]]) -> dict[int, str]:
    """By line, what the user typed while the agent worked, on the attachment lines of `path`,
    as Claude Code itself tells the user's from the harness's: a
    `queued_command` in prompt mode, not meta, from no harness origin. A line that does not
    decode as one is not one."""
    found: dict[int, str] = {}
    line_no, at = 0, 0
    for line in sorted((line for line in path if line.record.type == "attachment"), key=attrgetter("number")):
        start = end_of_line(data, line.number - 1, line_no, at)
        line_no, at = line.number, end_of_line(data, line.number, line.number - 1, start)
        raw = data[start:at]
        if b"queued_command" not in raw:
            continue
        try:
            queued = _QUEUED.decode(replaced_utf8(raw)).attachment  # as the reader reads it (0415)
        except msgspec.DecodeError:
            continue
        if queued is not None and (text := _queued_text(queued)):
            found[line.number] = text
    return found


def _queued_text(queued: _Queued) -> str | None:
    if queued.type != "queued_command" or queued.command_mode != "prompt" or queued.is_meta:
        return None
    if queued.origin is not None and queued.origin.kind in HARNESS_ORIGINS:
        return None
    prompt = queued.prompt
    blocks = prompt if isinstance(prompt, list) else [{"type": "text", "text": prompt}]
    said = [
        b["text"]
        for b in blocks
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    ]
    return "\n".join(_uninjected(text) for text in said).strip() or None


def _after_boundary(
    turn: Turn, kept: list[Line[_Node]], path: list[Line[_Node]], graph: _Graph, ends_after: bool
) -> Turn:
    """`turn`, which a compaction boundary cut, as what follows the boundary (`kept`, its lines
    after it): its range from the first of them said or summarised (else the first) to its own
    end when that is among them (`ends_after`), else to the last of them said or summarised;
    its tools those called on them or beside them."""
    shown = [line for line in kept if line.record.is_compact_summary or _talk(line, graph)] or kept
    on_path = {line.record.uuid for line in path}
    calls = {
        str(block.id)
        for line in (*kept, *graph.side_nodes(kept, on_path).lines())
        if line.record.type == "assistant"
        for block in _blocks(line.record)
        if block.type == "tool_use"
    }
    return msgspec.structs.replace(
        turn,
        start=shown[0].number,
        end=turn.end if ends_after else shown[-1].number,
        tools=tuple(tool for tool in turn.tools if tool.call_id in calls),
    )


@dataclass(frozen=True)
class CutOff:
    """Damage that cut the active conversation off from what came before it."""

    line: int  # of the conversation's first record
    reason: str  # why its chain stops there: its parent is not in the file, or it loops back
    turns: int  # turns of the paths left joining nothing (branches before the first turn)


def cut_off(data: bytes, name: str) -> CutOff | None:
    """Whether damage cut the active conversation off from turns above it (decisions 0302,
    0368): its first record's parent is not in the file, or a parentUuid loop was cut there
    (the file's `missing-parent` or `cycle` problem at that line), and turns stand only in
    branches before the first turn. None when the conversation begins at a root of the file,
    or nothing with turns was left above the cut."""
    parsed = _parse(data, name)
    if not parsed.path:
        return None
    graph, top = parsed.graph, parsed.path[0]
    parent = top.record.parent_uuid
    if top.record.uuid in graph.broken:
        reason = "its parentUuid chain loops back to it"
    elif parent and parent not in graph.nodes:
        reason = f"its parent {parent} is not in the file"
    else:
        return None
    stranded = sum(len(branch.turns) for branch in parsed.transcript.branches if not branch.after)
    return CutOff(top.number, reason, stranded) if stranded else None


def _turn(
    index: int,
    group: list[Line[_Node]],
    side: _Side,
    graph: _Graph,
    *,
    followed: bool,
    carried: bool = False,
    stopped: bool = False,
) -> Turn:
    """The turn of the nodes `group` (its prompt first) and `side` (beside them); `followed`: the
    next prompt of the path comes after it, so it has ended though nothing answered it;
    `carried`: a compaction made between the turn before it and this one; `stopped`: no harness
    writes the file any more, so the turn has ended where it stands (decision 0535)."""
    calls: dict[str, str] = {}
    results: dict[str, bool] = {}
    interrupted = False
    answer: Line[_Node] | None = None
    answer_text: str | None = None
    for line in group:
        record = line.record
        if record.type == "user":
            interrupted = interrupted or line.number in graph.interrupts
            _results(record, results)
        elif record.type == "assistant":
            unsaid = _unsaid(record)  # written by Claude Code, not the model: no answer
            for block in _blocks(record):
                kind = block.type
                if kind == "tool_use":
                    calls[str(block.id)] = str(block.name)
                elif kind == "text" and not unsaid and block.text is not None and str(block.text).strip():
                    answer, answer_text = line, str(block.text)
    # What claude-agent-sdk's reader puts back beside the path: a parallel call's record and
    # the results hanging off the call's own record. A call is answered by a result there or
    # on the path, never by one elsewhere in the file (an abandoned continuation's).
    for found in side.placed.values():
        for line in found:
            record = line.record
            if record.type == "assistant":
                for block in _blocks(record):
                    if block.type == "tool_use":
                        calls.setdefault(str(block.id), str(block.name))
            else:
                _results(record, results)
    dangling = any(call not in results for call in calls)
    # A local slash command or a bash-mode command: nothing answers it but its output.
    command = group[0].number in graph.commands or group[0].number in graph.shell
    errored = answer is not None and bool(answer.record.is_api_error_message)
    unanswered = answer is None and not command  # a local slash command has no model answer
    # A turn the next prompt follows has ended, answered or not (its calls' results, say, were
    # the last of it): it ends at the last line said in it, its tool result or its prompt, not
    # at the hook or meta lines that lead on to the next prompt (decision 0353).
    # So has one that ends with a record Claude Code wrote in the model's place.
    talked = next(line for line in reversed(group) if _talk(line, graph))  # its prompt at least
    closed = talked.record.type == "assistant" and _unsaid(talked.record)
    # So has one Claude Code noted it stopped (`--max-turns`): the turn ends at that note, which
    # its resume reads as a turn that ended, not as one cut short to close with "No response
    # requested." (decision 0535). The last turn's note hangs below the path's end until a
    # resume's prompt hangs off it.
    noted = next((line for line in reversed(group) if _max_turns(line.record)), None)
    if noted is None and not followed:
        noted = graph.stop_note_below(group[-1])
    if noted is not None and noted.number > talked.number:
        talked, closed = noted, True
    # A turn that has ended (followed, closed, interrupted) ends there, answered or not: the
    # calls made after its text and their results (a stop while a tool ran, `--max-turns`) are
    # what the model saw next, so a fork keeps them, and an interrupted one ends at its marker,
    # not at the meta lines after it (decision 0535). So has the last turn of a file no harness
    # writes any more (a kill after a tool ran). One still going on ends at its answer, a local
    # command's at its last line.
    ended = (followed or closed or interrupted or stopped) and (answer is not None or unanswered)
    last = talked if ended else answer or group[-1]
    # Ending at a response whose other records and results are put back after it (a rewind to
    # one of its calls left them off the path): the turn ends at the last of them.
    last = max((last, *side.placed.get(last.record.uuid, ())), key=attrgetter("number"))
    waiting = unanswered and not followed and not closed
    # Killed past its answer: ended, and the last said in it a tool's result after its text,
    # which the model never answered. Its text is no final answer, as under a noted stop, whether
    # the file ends there or a resume followed (Claude Code first closes it with "No response
    # requested."). A model's last message without text (thinking only) did answer the result.
    killed = (
        (stopped or followed or closed)
        and not interrupted
        and answer is not None
        and _ends_at_a_result(group, graph)
    )
    status: TurnStatus = "aborted" if interrupted else "open" if dangling or waiting else "completed"
    if errored and status == "completed":
        status = "error"
    # A compaction within the turn: its summary before something said in it, or anywhere in a
    # turn still going on. One after all an ended turn said is the next turn's (`_turns`).
    said = _last_said(group, graph)
    compacted = carried or any(
        line.record.is_compact_summary and (waiting or line.number < said) for line in group
    )
    return Turn(
        index=index,
        prompt=_short(graph.prompts[group[0].number]),
        text=graph.prompts[group[0].number] or "",
        start=group[0].number,
        end=last.number,
        key=last.record.uuid or "",
        status=status,
        forkable=status != "open" and not dangling,
        answer=answer_text,
        tools=tuple(ToolCall(name, call, results.get(call)) for call, name in calls.items()),
        compacted=compacted,
        cut_short=noted is not None or killed,
    )


def _ends_at_a_result(group: list[Line[_Node]], graph: _Graph) -> bool:
    """Whether the last line said in a turn, Claude Code's own messages aside, is a tool's
    result: the model wrote nothing after it."""
    said = next(
        line
        for line in reversed(group)
        if _talk(line, graph) and not (line.record.type == "assistant" and _unsaid(line.record))
    )  # its prompt at least
    return said.record.type == "user" and any(block.type == "tool_result" for block in _blocks(said.record))


def _results(record: _Node, results: dict[str, bool]) -> None:
    """Add the outcomes of a user record's tool results to `results` (call id -> ok)."""
    for block in _blocks(record):
        if block.type == "tool_result":
            results[str(block.tool_use_id)] = not block.is_error


def _branches(graph: _Graph, active: list[Line[_Node]], on_path: set[str | None]) -> tuple[Branch, ...]:
    """Abandoned paths that leave the `active` path (whose uuids are `on_path`) with a real
    prompt, latest leaf first. A path that joins none (a lost line cut the conversation, so it
    goes on from a parent not in the file) is a branch before the first turn: what was said
    before the cut stays in sight."""
    if len(on_path) == len(graph.nodes):  # every node is on the conversation: nothing left it
        return ()
    return _branches_from(graph, graph.leaves(), on_path, active)


def _branches_from(
    graph: _Graph, leaves: Iterable[Line[_Node]], on_path: set[str | None], path: list[Line[_Node]]
) -> tuple[Branch, ...]:
    """The branches begun at `leaves` (latest first) off the conversation `path`, whose nodes
    are `on_path`: each joins the conversation, or a branch found before it."""
    rests: set[str | None] = set()  # the nodes of the branches found so far
    known = _Either(on_path, rests)
    turns_before: dict[str | None, int] | None = None  # walked once a branch is found
    branches: list[Branch] = []
    for leaf in leaves:
        if leaf.record.uuid in known or not _main_chain(leaf.record):
            continue
        after, rest = graph.climb_to(leaf, known)
        # What leaves the path first, past the lines no turn is made of (the isMeta caveat
        # Claude Code writes before a local slash command, a compaction summary, a command's output).
        first_talk = next((line for line in rest if _talk(line, graph)), None)
        if first_talk is None or first_talk.number not in graph.prompts:
            continue  # a parallel tool result, a hook or progress line: not a branch
        if turns_before is None:
            turns_before = _turn_starts(path, graph.prompts)
        before = turns_before.get(after, 0)
        branches.append(Branch(after or "", before, leaf.record.uuid or "", _turns(rest, graph, before + 1)))
        rests.update(line.record.uuid for line in rest)
        turns_before.update({k: v + before for k, v in _turn_starts(rest, graph.prompts).items()})
    return tuple(branches)


@dataclass(frozen=True)
class _Either:
    """Membership in either of two sets, without copying the larger one."""

    first: set[str | None]
    second: set[str | None]

    def __contains__(self, item: object) -> bool:
        return item in self.first or item in self.second


def _turn_starts(path: list[Line[_Node]], prompts: dict[int, str]) -> dict[str | None, int]:
    """For each node of `path`, how many turns have started at or before it."""
    count, seen = 0, {}
    for line in path:
        if line.number in prompts:
            count += 1
        seen[line.record.uuid] = count
    return seen


def _created(held: _Held, forked: bool) -> str | None:
    """When a session was made: a fork at the time of its last copied record, which the fork
    stamps with it (the other copies keep their parent's times); any session at its first stamp
    when that is later, as a `--fork-session` copy of a fork is, whose own lines come before the
    fork's records it copies, `forkedFrom` and times included (decision 0461)."""
    stamps = [stamp for stamp in (held.fork_latest.value if forked else None, held.first_time) if stamp]
    return _latest(stamps) if stamps else None


def _first_time(stamps: list[str]) -> str | None:
    """When a file was started: its first stamp in file order, as claude-agent-sdk's listing
    dates a session. Not the earliest: a `--fork-session` copy writes its own lines first, then
    its parent's records with their parent's (earlier) times."""
    return next(filter(_instant, stamps), None)


def _latest(stamps: list[str]) -> str | None:
    """The latest of `stamps` as a time. Claude Code writes one fixed-width UTC form, whose text
    order is time order; stamps of mixed precision or offset are compared parsed."""
    if _utc_width(stamps):
        return max(stamps)
    times = [(when, stamp) for stamp in stamps if (when := _instant(stamp)) is not None]
    return max(times)[1] if times else None


def _utc_width(stamps: list[str]) -> int:
    """The width of `stamps` when all are of one fixed-width UTC form (as wide, ending in Z), else 0."""
    width = len(stamps[0]) if stamps else 0
    # Each stamp's last character, read in C from their concatenation once they are all as wide.
    if width and len(set(map(len, stamps))) == 1 and "".join(stamps)[width - 1 :: width] == "Z" * len(stamps):
        return width
    return 0


def _instant(stamp: str) -> datetime | None:
    """`stamp` as an aware time (one without an offset taken as UTC), None if it is none."""
    try:
        when = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _millis(when: datetime) -> int:
    """`when` in whole milliseconds since the epoch, as JavaScript's `Date` holds a time."""
    return (when - _EPOCH) // timedelta(milliseconds=1)


def _first(getter: Callable[[Any], Any], held: Iterable[_Node]) -> Any:
    """The first truthy field `getter` reads of `held`, found in C (filter over map)."""
    return next(filter(None, map(getter, held)), None)


_TIMESTAMP = attrgetter("timestamp")
_FORKED_FROM = attrgetter("forked_from")
_CWD = attrgetter("cwd")
_VERSION = attrgetter("version")
_AGENT_ID = attrgetter("agent_id")
_CUSTOM_TITLE = attrgetter("custom_title")
_AI_TITLE = attrgetter("ai_title")
