"""The Claude Code and Codex adapters: which files of a root are sessions, and their index rows.

Claude Code keeps `<root>/<encoded-cwd>/<session>.jsonl`, with subagents loose beside it
(`agent-*.jsonl`, 2.0) or in `<session>/subagents/agent-*.jsonl` (+ `.meta.json`). The folder
name is the launch cwd with every UTF-16 code unit but `[A-Za-z0-9]` turned into `-` (an emoji
is two), truncated with a runtime-dependent hash past 200 of them: lossy both ways, so a
workspace's listing reads the folders its cwd can have produced and keeps the files whose
records' `cwd` is the workspace (decision 0121). Codex keeps
`<root>/YYYY/MM/DD/rollout-*.jsonl` (archived rollouts flat): nothing in the path names the
workspace, so a workspace listing stats every rollout and filters by the cwd its index row
holds from its `session_meta`, line 1.

Files are opened without following a link, and links inside a root are refused, like DSH's.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import json
import os
import re
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from ..os_names import is_utf8, shown
from ..protocol.sessions import OPEN, ROLLED_BACK, SessionFormat, TurnSummary
from ..safe_open import Walk, open_regular, reason
from .formats import jsonl
from .formats.claude_code import (
    Grown,
    Sidechain,
    Transcript,
    grow,
    listed_transcript,
    read_transcript,
    turn_ends,
)
from .formats.codex import (
    Rollout,
    RolloutName,
    Tally,
    Unjoined,
    continued,
    cwd_at_start,
    first_line_cwd,
    listed_rollout,
    ordinal_cut,
    read_rollout,
    rollout_name,
    thread_history,
    turns_begun_before,
)
from .formats.jsonl import LineTooLong, read_bounded
from .formats.model import Problem, Turn, problem_counts
from .index import UNKEPT, LogRow, Update
from .projection import USER_PREVIEW_CHARS
from .reader import file_identity, stat_revision
from .roots import (
    LINK_REASON,
    NAME_REASON,
    LogFile,
    Rejected,
    files_fingerprint,
    folder_entries,
    not_regular,
    root_fingerprint,
    unreadable_folder,
)
from .sources import FileScan, detect_format

CLAUDE_NAME_MAX = 200  # past this Claude Code truncates the folder name and appends a hash
_NOT_ALNUM = re.compile(r"[^a-zA-Z0-9]")
SIDECAR_REASON = "a subagent's .meta.json without its transcript {name}; nothing to list for it"


# A Codex `session_meta` carries the base instructions: tens of KB, rarely more.
FIRST_LINE_BYTES = 1 << 20
# A glance reads this much first: older rollouts' first line is a few hundred bytes, and copying
# 64 KB from the page cache for it cost a workspace's first tree as much as the rest of a glance.
_GLANCE_FIRST = 4 << 10
_GLANCE_CHUNK = 64 << 10
_DIGEST_BLOCK = 1 << 20
_DIGEST_NAME = "sha256:"
_TAIL = 256  # the bytes a tally keeps of what it read last


@dataclass(frozen=True)
class BranchInfo:
    """An in-file branch (rewind, edit) of a Claude Code session, as the index keeps it."""

    leaf: str
    after_turn: int
    turns: int
    prompt: str | None


@dataclass(frozen=True)
class BranchPath:
    """An in-file branch with its turns: it leaves the conversation after `after_turn` turns."""

    leaf: str
    after_turn: int
    turns: tuple[Turn, ...]

    def info(self) -> BranchInfo:
        return BranchInfo(
            self.leaf, self.after_turn, len(self.turns), self.turns[0].prompt if self.turns else None
        )


@dataclass(frozen=True)
class SidechainInfo:
    """A subagent written inline in its parent's Claude Code file, as the index keeps it."""

    root: str
    title: str | None
    created_at: int | None
    turns: int


@dataclass(frozen=True)
class Tallied:
    """What a listing read of a harness file's first bytes (a Codex tally, a Claude Code graph),
    and of which file: a relisting goes on from it while the file only grew (decisions 0350,
    0351)."""

    tally: Tally | Grown
    device: int
    inode: int
    # The last bytes tallied. A file rewritten in place lacks them unless each of its earlier
    # lines kept its length; harnesses only append, and a file that did not grow is read whole.
    tail: bytes

    @property
    def graph(self) -> bool:
        """Whether it holds a transcript's graph, which costs more memory than its file."""
        return isinstance(self.tally, Grown)

    def grew(self, fd: int, st: os.stat_result) -> bool:
        """Whether the file open at `fd` (whose `stat` is `st`) is this one, grown. One that
        changed without growing was rewritten (or touched): nothing says what it holds."""
        size = self.tally.size
        if (st.st_dev, st.st_ino) != (self.device, self.inode) or st.st_size <= size:
            return False
        return os.pread(fd, len(self.tail), size - len(self.tail)) == self.tail


@dataclass(frozen=True)
class SessionView:
    """One harness file in the terms of the catalog, whatever its format."""

    format: SessionFormat
    id: str | None
    cwd: str | None
    title: str | None
    created_at: str | None
    parent: str | None
    fork_turn: int | None  # a fork's turns copied from its parent
    subagent: bool
    root_uuid: str | None  # Claude Code: the first record's uuid (shared by --fork-session copies)
    turns: tuple[Turn, ...]  # () when only counted (a listing's read)
    turn_count: int
    branches: tuple[BranchPath, ...]
    problems: tuple[Problem, ...]
    error: str | None
    sidechains: tuple[Sidechain, ...] = ()
    # Codex: the lines of `inherits_from` (its `history_base`) a fork inherits without copying
    # them. A fork that copied its parent's lines, `history_base` kept, inherits them too: from
    # the session that base names, not from the parent it copied (decision 0079).
    fork_at: int | None = None
    inherits_from: str | None = None
    newlines: int = 0  # the file's newline characters (a row's `last_seq`)
    # Claude Code: the leaves a `summary` line in another file may title the session by (its
    # conversation's, then its branches'), when nothing in its own file titles it but a prompt;
    # and the (leafUuid, summary) lines of this file that title other files' sessions.
    leaves: tuple[str, ...] = ()
    foreign_summaries: tuple[tuple[str, str], ...] = ()

    @property
    def branchable(self) -> bool:
        return branchable(self.format, subagent=self.subagent)


def branchable(fmt: SessionFormat, *, subagent: bool) -> bool:
    """Whether a fork after one of a session's turns can be made, as the fork service judges it:
    not of a Claude Code subagent's own file, whose records `claude --resume` finds no
    conversation in (`claude_code.fork_selection` refuses it). A Codex subagent is a rollout
    like any other, which `codex resume` continues once forked."""
    return not (fmt == "claude-code" and subagent)


def claude_view(data: bytes, name: str, *, turns: bool = True, stopped: bool = False) -> SessionView:
    return transcript_view(read_transcript(data, name, turns=turns, stopped=stopped))


def transcript_view(t: Transcript) -> SessionView:
    fork = next((edge.parent for edge in t.lineage if edge.kind == "fork"), None)
    return SessionView(
        format="claude-code",
        id=t.session_id,
        cwd=t.cwd,
        title=t.title,
        created_at=t.created_at,
        parent=t.parent_session if t.subagent else fork,
        fork_turn=t.fork_turn,
        subagent=t.subagent,
        root_uuid=t.root,
        turns=t.turns,
        turn_count=t.turn_count,
        branches=tuple(BranchPath(b.leaf, b.after_turn, b.turns) for b in t.branches),
        problems=t.problems,
        error=t.error,
        sidechains=t.sidechains,
        newlines=t.newlines,
        leaves=_summarised_leaves(t),
        foreign_summaries=t.foreign_summaries,
    )


def _summarised_leaves(t: Transcript) -> tuple[str, ...]:
    """The leaves a summary in another file titles `t`'s session by: the conversation's last
    record, then each branch's, when the session has no title of its own but a prompt (a
    `custom-title`, an `ai-title` or a summary in its own file wins, decision 0358)."""
    if t.subagent or t.leaf is None or t.title_source not in ("prompt", None):
        return ()
    return (t.leaf, *(branch.leaf for branch in t.branches if branch.leaf))


def codex_view(data: bytes) -> SessionView:
    return rollout_view(read_rollout(data))


def rollout_view(r: Rollout) -> SessionView:
    edge = r.lineage[0] if r.lineage else None
    history = next((e for e in r.lineage if e.kind == "history" and e.upto is not None), None)
    forked = next((e.parent for e in r.lineage if e.kind == "fork"), None)
    spawned = next((e.parent for e in r.lineage if e.kind == "subagent"), None)
    return SessionView(
        format="codex",
        id=r.session_id,
        cwd=r.cwd,
        title=r.title,
        created_at=r.created_at,
        parent=edge.parent if edge else None,
        fork_turn=r.fork_turn,
        # A subagent Codex spawns with its parent's context is forked from that parent; one
        # forked from another session (a fork of a subagent, which copied its `session_meta`)
        # is that session's fork.
        subagent=spawned is not None and forked in (None, spawned),
        root_uuid=None,
        turns=r.turns,
        turn_count=r.turn_count,
        branches=(),
        problems=r.problems,
        error=r.error,
        fork_at=history.upto if history else None,
        inherits_from=history.parent if history else None,
        newlines=r.newlines,
    )


def inherited_turns(parent: LogRow, ordinal: int, base: str) -> int | None:
    """The fork turn of a Codex fork that inherits, without copying them, the ordinals before
    `ordinal` of its parent's rollout `base` (its `history_base`), read from the parent's files;
    None when they cannot be read."""
    return _turns_before(parent.path, parent.revision, ordinal, base)


@functools.lru_cache(maxsize=64)  # a tree is drawn again on every change; the parent rarely changed
def _turns_before(path: str, revision: str, ordinal: int, base: str) -> int | None:
    try:
        data = read_file(Path(path), listed=revision)  # the file the listing read there
    except (OSError, LineTooLong):
        return None
    history = base_history(Path(path), data, base)
    return None if history is None else turns_begun_before(history, ordinal) or None


def copied_turns(copy: LogRow, original: LogRow) -> int:
    """The turns a Claude Code `--fork-session` copy holds of the session it copies, read from
    both files as listed: its first turns whose records are all the original's first turns.
    A turn the copy added to, or one the original was rewound past (an abandoned branch now,
    reviewed with neither), is the copy's own; 0 when either file cannot be read."""
    ends, theirs = _turn_ends(copy.path, copy.revision), _turn_ends(original.path, original.revision)
    shared = 0
    for mine, its in zip(ends, theirs, strict=False):
        if mine is None or mine != its:
            break
        shared += 1
    return shared


@functools.lru_cache(maxsize=64)  # as `_turns_before`: a tree is drawn again on every change
def _turn_ends(path: str, revision: str) -> tuple[str | None, ...]:
    try:
        data = read_file(Path(path), listed=revision)
    except (OSError, LineTooLong):
        return ()
    return turn_ends(data, Path(path).name)


def base_history(path: Path, data: bytes, base: str) -> bytes | None:
    """The history of the rollout `base` of the thread whose current rollout, at `path`, holds
    `data`: what a fork whose `history_base` names `base` inherits (a rollout id: the thread's
    own for its first rollout). A revert rotates a thread to a new rollout (decision 0366), and
    Codex resumes a fork made before it with the lines of the rollout its base names, the turns
    the revert abandoned included. None when that rollout is not in the root."""
    named = rollout_name(path.name)
    if named is not None and named.rollout != base.lower():
        found = _ThreadRollouts(path)(base.lower())
        if found is None:
            return None
        path, data = path.with_name(found[0]), found[1]  # its name says what it continues
    return codex_history(path, data)[0]


@dataclass(frozen=True)
class Inherited:
    """The turns a Codex fork inherits from an ancestor's file without copying them, and the
    ancestor's lines they were read from (None: the ancestor could not be read)."""

    session: str
    turns: tuple[Turn, ...]
    lines: bytes | None


INHERITED_DEPTH = 16  # forks of forks followed back; Codex chains rarely pass two


def inherited_history(view: SessionView, read: Callable[[str, str], bytes | None]) -> list[Inherited]:
    """What a Codex fork inherits by reference (`fork_at` lines of its parent's rollout
    `inherits_from`), oldest ancestor first: each ancestor's turns in the lines the next one
    inherits. `read(session, rollout)` gives the history of the session's rollout of that id
    (`base_history`), or None when it is not at hand."""
    found: list[Inherited] = []
    seen = {view.id}
    while view.fork_at is not None and view.inherits_from is not None and len(found) < INHERITED_DEPTH:
        parent, data = _inherited_lines(view, read)
        if parent in seen:
            break
        if data is None:
            found.append(Inherited(parent, (), None))
            break
        cut = ordinal_cut(data, view.fork_at)[0]  # Codex's numbers, not lines (decision 0400)
        head = data if cut is None else data[:cut]
        ancestor = codex_view(head)
        found.append(Inherited(parent, ancestor.turns, head))
        seen.add(parent)
        view = ancestor
    return found[::-1]


def _inherited_lines(view: SessionView, read: Callable[[str, str], bytes | None]) -> tuple[str, bytes | None]:
    """The session a Codex fork inherits lines from, and the history of its rollout they are
    in: the parent's rollout `inherits_from` names, one a revert rotated the parent to included;
    else (a fork that copied another's lines, their base kept: decision 0079) the session of
    that id."""
    base = view.inherits_from or ""
    for session in dict.fromkeys(candidate for candidate in (view.parent, base) if candidate):
        history = read(session, base)
        if history is not None:
            return session, history
    # A fork that copied none of its parent's turns inherits a rollout of its parent: named by the
    # parent, listed or not; a copy's kept base names a session of its own.
    return (view.parent or base) if view.fork_turn is None else base, None


def read_file(path: Path, *, root: Path | None = None, listed: str | None = None) -> bytes:
    """The file's bytes through a descriptor that is not a link (an `OSError` otherwise), or
    `LineTooLong` for a file with a line past the cap, so a hostile file never fills memory.
    `root` and `listed` as `open_listed` takes them."""
    return read_file_stat(path, root=root, listed=listed)[0]


def read_file_stat(
    path: Path, *, root: Path | None = None, listed: str | None = None
) -> tuple[bytes, os.stat_result]:
    """`read_file`, with the `stat` of the descriptor read (the bytes' own revision)."""
    with os.fdopen(open_listed(path, root, listed), "rb") as handle:
        return read_bounded(handle), os.fstat(handle.fileno())


def open_listed(path: str | Path, root: Path | None, listed: str | None, walk: Walk | None = None) -> int:
    """A descriptor of the session file at `path` (`safe_open.open_regular`, or `walk`'s when
    given): opened from its `root` without following a link on the way, when the root is known;
    and when the `listed` revision is given, the very file the listing read there (its device
    and inode), else `OSError` (`ESTALE`: it was replaced since)."""
    identity = None if listed is None else file_identity(listed)
    if walk is None:
        return open_regular(path, root=root, identity=identity)
    return walk.open_regular(path, root=root, identity=identity)


def content_digest(data: bytes) -> str:
    """The digest a Claude Code or Codex session is reviewed by: of its file's bytes."""
    return _DIGEST_NAME + hashlib.sha256(data).hexdigest()


def file_digest(path: Path, *, root: Path | None = None, listed: str | None = None) -> tuple[str, str]:
    """`content_digest` of the file at `path`, read in blocks through a descriptor that is not
    a link (an `OSError` otherwise; `root` and `listed` as `open_listed` takes them), and the
    revision the file had once it was read."""
    digest = hashlib.sha256()
    with os.fdopen(open_listed(path, root, listed), "rb") as handle:
        while block := handle.read(_DIGEST_BLOCK):
            digest.update(block)
        return _DIGEST_NAME + digest.hexdigest(), stat_revision(os.fstat(handle.fileno()))


def view_of(
    fmt: SessionFormat, path: Path, data: bytes, *, turns: bool = True, stopped: bool = False
) -> SessionView:
    """The file's view; without `turns`, what a listing needs (turns counted, maybe not built);
    `stopped`: no harness writes it any more (a Claude Code file's last turn has then ended).
    A Codex rollout that continues its thread after a revert is read with the history it
    inherits (`codex_history`)."""
    if fmt == "claude-code":
        return claude_view(data, path.name, turns=turns, stopped=stopped)
    return _joined_view(path, data, codex_view)


def codex_history(path: Path, data: bytes) -> tuple[bytes, str | None]:
    """The history of the Codex thread whose rollout at `path` holds `data`: `data` itself,
    unless the rollout continues its thread after a revert (`formats.codex.thread_history`),
    the rollouts it continues looked for in its root (decision 0366). Then also, when those
    cannot be read, `data` alone and why."""
    if continued(data, path.name) is None:
        return data, None
    try:
        return thread_history(data, path.name, _ThreadRollouts(path)), None
    except Unjoined as exc:
        return data, exc.reason


def _joined_view(path: Path, data: bytes, view: Callable[[bytes], SessionView]) -> SessionView:
    """`view` of the history `codex_history` joins; a rollout whose history cannot be joined is
    read alone, with no parent (its `history_base` is its own thread's) and a problem on line 1."""
    history, unjoined = codex_history(path, data)
    seen = view(history)
    if unjoined is None:
        return seen
    problem = Problem(1, "unjoined", f"the thread's history before this rollout cannot be read: {unjoined}")
    return replace(seen, parent=None, fork_at=None, inherits_from=None, problems=(problem, *seen.problems))


class _ThreadRollouts:
    """The rollouts of one thread in the Codex root a rollout lies in (and its sibling:
    ``sessions`` and ``archived_sessions``), by rollout id; found on first use by their names,
    without following a link, and read through a descriptor that is not one."""

    def __init__(self, path: Path) -> None:
        named = rollout_name(path.name)
        self.thread = named.thread if named else ""
        self.path = path
        self._found: dict[str, tuple[Path, Path]] | None = None

    def __call__(self, rollout: str) -> tuple[str, bytes] | None:
        if self._found is None:
            self._found = self._scan()
        found = self._found.get(rollout)
        if found is None:
            return None
        path, top = found
        try:
            # From the Codex folder it was found in: a folder swapped for a link since the scan
            # is refused, not followed out of it (decision 0364).
            return path.name, read_file(path, root=top)
        except (OSError, LineTooLong):
            return None

    def _scan(self) -> dict[str, tuple[Path, Path]]:
        root = next((f for f in list(self.path.parents)[:4] if f.name in _CODEX_FOLDERS), self.path.parent)
        siblings = [root.with_name(name) for name in _CODEX_FOLDERS if name != root.name]
        roots = [root, *siblings] if root.name in _CODEX_FOLDERS else [root]
        found: dict[str, tuple[Path, Path]] = {}
        for top in roots:
            folders = [(str(top), 0)] if top == root or top.is_dir() else []
            while folders:
                folder, depth = folders.pop()
                for entry in folder_entries(folder, []):  # the listing says which cannot be read
                    named = rollout_name(entry.name)
                    if entry.is_symlink():
                        continue
                    if named is not None and named.thread == self.thread:
                        found.setdefault(named.rollout, (Path(entry.path), top))
                    elif depth < 3 and entry.is_dir(follow_symlinks=False):
                        folders.append((entry.path, depth + 1))
        return found


_CODEX_FOLDERS = ("sessions", "archived_sessions")


def superseded_rollouts(rows: Iterable[LogRow]) -> set[str]:
    """The paths of Codex rollouts a later rollout of their thread supersedes: Codex rotates a
    thread it reverts to a new rollout of the same id (decision 0366), so each thread whose
    rollouts are all named as its own, each rollout id once, is the one made last (of those it
    was rotated to, by its name's time, then its rollout id, time-ordered), and the others are
    its history or what the reverts abandoned. A thread with one rollout id twice (a copy)
    stays a duplicate."""
    threads: dict[str, list[tuple[RolloutName, str]]] = {}
    for row in rows:
        named = rollout_name(os.path.basename(row.path)) if row.format == "codex" else None
        if named is not None and row.id is not None and named.thread == row.id.lower():
            threads.setdefault(named.thread, []).append((named, row.path))
    superseded: set[str] = set()
    for found in threads.values():
        if len(found) < 2 or len({named.rollout for named, _ in found}) != len(found):
            continue
        # Once rotated, never the first: a remem fork's first rollout id is no time-ordered one.
        current = max(found, key=lambda f: (f[0].continues, f[0]))
        if current[0].continues:
            superseded.update(path for _, path in found if path != current[1])
    return superseded


def session_digest(
    fmt: SessionFormat, path: Path, *, root: Path | None = None, listed: str | None = None
) -> tuple[str, str]:
    """`file_digest`, of what a session is reviewed by: a Codex rollout that continues its
    thread after a revert is reviewed with the history it inherits (`codex_history`). `root`
    and `listed` as `open_listed` takes them."""
    named = rollout_name(path.name) if fmt == "codex" else None
    if named is None or not named.continues:
        return file_digest(path, root=root, listed=listed)
    data, st = read_file_stat(path, root=root, listed=listed)
    return content_digest(codex_history(path, data)[0]), stat_revision(st)


def epoch_ms(stamp: str | None) -> int | None:
    if not stamp:
        return None
    try:
        return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


def turn_summaries(turns: tuple[Turn, ...]) -> list[TurnSummary]:
    """The turns as the index and `sessions turns` show them; a turn that cannot be branched
    from reads `open` (or `rolled-back`), with its line range as the seq range. A turn of a
    session no fork can be made of (`Entry.branchable`) keeps the status it ended with."""
    rows = []
    for turn in turns:
        status = turn.status if turn.forkable or turn.status == ROLLED_BACK else OPEN
        rows.append(
            TurnSummary(
                turn=turn.index,
                startSeq=turn.start,
                endSeq=None if status == OPEN else turn.end,
                status=status,
                user=turn.prompt.strip()[:USER_PREVIEW_CHARS],
            )
        )
    return rows


def file_turns(
    fmt: SessionFormat,
    path: Path,
    *,
    root: Path | None = None,
    listed: str | None = None,
    stopped: bool = False,
) -> tuple[list[TurnSummary], str]:
    """The turns of the harness file at `path` as `sessions turns` shows them, and the stat
    revision they were read at; `OSError` or `LineTooLong` when it cannot be read
    (`unreadable` says why; `root` and `listed` as `open_listed` takes them, `stopped` as
    `view_of`)."""
    data, st = read_file_stat(path, root=root, listed=listed)
    view = view_of(fmt, path, data, stopped=stopped)
    return turn_summaries(view.turns), stat_revision(st)


def _index(fmt: SessionFormat, path: Path, revision: str, root: Path | None) -> Update:
    """The file's row, read from `root` as `open_listed` reads it. Its turns are not stored: a
    listing shows how many there are, not what they are, and the catalog stores them the first
    time they are asked for (`file_turns`). Nor is its digest: hashing the bytes cost a listing
    a fifth of its time, and only a review needs it (`SessionCatalog.digest_of`, decision 0340)."""
    try:
        data = read_file(path, root=root, listed=revision)
    except (OSError, LineTooLong) as exc:
        return _unreadable(fmt, path, revision, exc)
    return _update(path, revision, view_of(fmt, path, data, turns=False))


def _unreadable(fmt: SessionFormat, path: Path, revision: str, exc: OSError | LineTooLong) -> Update:
    """The row of a file that cannot be read. One that could not be opened or read (gone,
    behind a link or another file, unreadable, an I/O failure) keeps no revision: that says
    where it was, not what it holds, so the next listing reads it again (a swap undone since
    must not leave the error standing; decision 0394)."""
    kept = UNKEPT if isinstance(exc, OSError) else revision
    return Update(LogRow(path=str(path), revision=kept, format=fmt, error=unreadable(exc, path)))


def _update(path: Path, revision: str, view: SessionView) -> Update:
    """The row of the file at `path` that `view` is of."""
    fmt = view.format
    if view.error is not None or not view.id:
        error = view.error or "the file names no session id"
        return Update(LogRow(path=str(path), revision=revision, format=fmt, error=error))
    fork_at, fork_base = _fork_base(view)
    row = LogRow(
        path=str(path),
        revision=revision,
        id=view.id,
        cwd=view.cwd,
        created_at=epoch_ms(view.created_at),
        parent=view.parent,
        fork_turn=view.fork_turn,
        origin="subagent" if view.subagent else None,
        title=view.title,
        turns=view.turn_count,
        last_seq=view.newlines,
        format=fmt,
        root_uuid=view.root_uuid,
        branches=json.dumps([b.info().__dict__ for b in view.branches]) if view.branches else None,
        problems=json.dumps(problem_counts(view.problems)) if view.problems else None,
        sidechains=json.dumps([_sidechain_info(c).__dict__ for c in view.sidechains])
        if view.sidechains
        else None,
        fork_at=fork_at,
        fork_base=fork_base,
        leaves=json.dumps(view.leaves) if view.leaves else None,
        summaries=json.dumps(view.foreign_summaries) if view.foreign_summaries else None,
    )
    return Update(row)


def _fork_base(view: SessionView) -> tuple[int | None, str | None]:
    """What the row keeps of the lines a Codex fork inherits by reference, the ordinal they
    end before and the parent's rollout they are in: the tree reads a fork turn from them in
    the row's parent (decision 0281), so only for a fork that copied none of its turns."""
    if view.fork_turn is None and view.parent is not None and view.inherits_from is not None:
        return view.fork_at, view.inherits_from
    return None, None


def _sidechain_info(chain: Sidechain) -> SidechainInfo:
    title = chain.turns[0].prompt if chain.turns else None
    return SidechainInfo(chain.root, title, epoch_ms(chain.created_at), len(chain.turns))


def unreadable(exc: OSError | LineTooLong, path: Path | str | None = None) -> str:
    """Why a harness file cannot be read, as its listing row says it; the folder on the way that
    stopped it is named when it is not `path` itself."""
    if isinstance(exc, LineTooLong):
        return exc.reason
    if path is not None and exc.filename is not None and exc.filename != str(path):
        return f"cannot be read: {reason(exc, path)}"
    # O_NOFOLLOW: a link swapped in since the scan fails with ELOOP.
    return LINK_REASON if exc.errno == errno.ELOOP else f"cannot be read: {exc.strerror or exc}"


def _take(entry: os.DirEntry[str], files: list[LogFile], rejected: list[Rejected]) -> None:
    """`entry`, named like a session file, into `files` when it is a regular file whose path
    the index can hold; anything else named so (a FIFO, a folder) is refused, never opened."""
    try:
        st = entry.stat(follow_symlinks=False)
    except FileNotFoundError:
        return  # gone since the folder was read
    except OSError as exc:
        rejected.append(Rejected(entry.path, f"cannot be read: {exc.strerror or exc}"))
        return
    if not is_utf8(entry.path):
        rejected.append(Rejected(entry.path, NAME_REASON))
    elif stat.S_ISREG(st.st_mode):
        files.append(LogFile(entry.path, st))
    else:
        rejected.append(Rejected(entry.path, not_regular(st.st_mode)))


def claude_folders(cwd: str) -> tuple[str, int]:
    """The project folder name `cwd` produces, and how much of it must match: all of it, or
    its first 200 characters when Claude Code truncated it and appended a hash. Claude Code
    replaces and counts UTF-16 code units: a character past U+FFFF is two of them, so two `-`."""
    name = _NOT_ALNUM.sub(_dashes, cwd)
    return name, len(name) if len(name) <= CLAUDE_NAME_MAX else CLAUDE_NAME_MAX


class ClaudeCodeSource:
    format: SessionFormat = "claude-code"
    # A workspace's scan holds only the folders its cwd can have produced.
    scans_by_workspace = True

    def scan(self, root: Path, cwd: str | None) -> FileScan:
        files: list[LogFile] = []
        rejected: list[Rejected] = []
        scanned: list[str] = []
        wanted = claude_folders(cwd) if cwd is not None else None
        for project in folder_entries(str(root), rejected):
            if wanted is not None and not _may_hold(project.name, *wanted):
                continue
            if project.is_symlink():
                rejected.append(Rejected(project.path, LINK_REASON))
            elif project.is_dir(follow_symlinks=False) and not project.name.startswith("."):
                scanned.append(f"{project.path}{os.sep}")
                self._project(project.path, files, rejected)
        if wanted is None:
            scanned = [f"{root}{os.sep}"]
        return FileScan(files, rejected, tuple(scanned))

    def elsewhere(self, *_: object) -> bool:
        """Never (as `CodexSource.elsewhere` is asked): `scan` already keeps to the folders that
        can hold the workspace's sessions."""
        return False

    def _project(self, folder: str, files: list[LogFile], rejected: list[Rejected]) -> None:
        for entry in folder_entries(folder, rejected):
            if entry.is_symlink():
                rejected.append(Rejected(entry.path, LINK_REASON))
            elif entry.name.endswith(".jsonl"):
                _take(entry, files, rejected)
            elif entry.is_dir(follow_symlinks=False):
                self._subagents(os.path.join(entry.path, "subagents"), files, rejected)

    def _subagents(self, folder: str, files: list[LogFile], rejected: list[Rejected]) -> None:
        try:
            mode = os.lstat(folder).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return  # a session folder without subagents
        except OSError as exc:  # the session folder cannot be looked into: its subagents unknown
            rejected.append(Rejected(os.path.dirname(folder), unreadable_folder(exc)))
            return
        if stat.S_ISLNK(mode):  # scandir would follow it out of the root
            rejected.append(Rejected(folder, LINK_REASON))
            return
        entries = folder_entries(folder, rejected) if stat.S_ISDIR(mode) else []
        names = {e.name for e in entries}
        for entry in entries:
            if entry.is_symlink():
                rejected.append(Rejected(entry.path, LINK_REASON))
            elif entry.name.endswith(".jsonl"):
                _take(entry, files, rejected)
            elif entry.name.endswith(".meta.json"):
                transcript = entry.name.removesuffix(".meta.json") + ".jsonl"
                if transcript not in names:
                    rejected.append(Rejected(entry.path, SIDECAR_REASON.format(name=shown(transcript))))

    def index(self, path: Path, revision: str, root: Path | None = None) -> Update:
        return _index(self.format, path, revision, root)

    def follow(
        self, path: Path, revision: str, kept: Tallied | None, root: Path | None = None
    ) -> tuple[Update, Tallied | None]:
        """`index`, taking on only the bytes appended since `kept` was read when they just
        extend the conversation (`claude_code.grow`); and the state to go on from next time."""
        return _follow(self.format, path, revision, kept, _whole_transcript, _grown_transcript, root)


def _whole_transcript(data: bytes, name: str) -> tuple[SessionView, Grown | None]:
    transcript, grown = listed_transcript(data, name)
    return transcript_view(transcript), grown


def _grown_transcript(state: Tally | Grown, data: bytes) -> tuple[SessionView, Grown] | None:
    if not isinstance(state, Grown) or _past_lines(state.newlines, data):
        return None
    transcript = grow(state, data)
    return None if transcript is None else (transcript_view(transcript), state)


def _whole_rollout(data: bytes, name: str) -> tuple[SessionView, Tally | None]:
    rollout, tally = listed_rollout(data)
    return rollout_view(rollout), tally


def _rollout_of(path: Path) -> Whole:
    """`_whole_rollout` of the rollout at `path`; one that continues its thread after a revert is
    read with the history it inherits (`codex_history`), and whole each time (no tally kept)."""

    def whole(data: bytes, name: str) -> tuple[SessionView, Tally | None]:
        if continued(data, name) is None:
            return _whole_rollout(data, name)
        return _joined_view(path, data, lambda history: rollout_view(listed_rollout(history)[0])), None

    return whole


def _tallied_rollout(state: Tally | Grown, data: bytes) -> tuple[SessionView, Tally | None] | None:
    if not isinstance(state, Tally) or _past_lines(state.lines, data):
        return None
    rollout, tally = listed_rollout(data, state)
    return rollout_view(rollout), tally


def _past_lines(before: int, data: bytes) -> bool:
    """Whether a file of `before` lines grown by `data` is past the cap on its lines: it is then
    read whole, and refused (`jsonl.read_bounded`)."""
    return before + len(data) > jsonl.MAX_LINES and before + data.count(b"\n") > jsonl.MAX_LINES


# A whole read of a file: its view, and the state to go on from (None: read it whole next time).
Whole = Callable[[bytes, str], tuple[SessionView, Tally | Grown | None]]
# Going on from a state with the bytes appended since; None when the file must be read whole.
GoOn = Callable[[Tally | Grown, bytes], tuple[SessionView, Tally | Grown | None] | None]


def _follow(
    fmt: SessionFormat,
    path: Path,
    revision: str,
    kept: Tallied | None,
    whole: Whole,
    go_on: GoOn,
    root: Path | None = None,
) -> tuple[Update, Tallied | None]:
    """A harness file's row, read on from `kept` (what was read of its first bytes) while the
    file only grew, else read whole; and what to keep for its next read. The file is opened
    from its `root` and must be the one the scan found (`revision`'s device and inode): a
    folder on the way swapped for a link, or a file swapped in, since is an error of this
    file's, never a read of what it leads to (`open_listed`)."""
    try:
        fd = open_listed(path, root, revision)
        with os.fdopen(fd, "rb") as handle:
            st = os.fstat(fd)
            grown = kept if kept is not None and kept.grew(fd, st) else None
            start = 0 if grown is None else grown.tally.size
            handle.seek(start)
            data = read_bounded(handle)
    except LineTooLong as exc:
        if grown is not None:  # its line number counts from the appended bytes: say the file's
            return _follow(fmt, path, revision, None, whole, go_on, root)
        return _unreadable(fmt, path, revision, exc), None
    except OSError as exc:
        return _unreadable(fmt, path, revision, exc), None
    went_on = None if grown is None else go_on(grown.tally, data)
    if grown is not None and went_on is None:  # the append changed what was read before
        return _follow(fmt, path, revision, None, whole, go_on, root)
    view, state = whole(data, path.name) if went_on is None else went_on
    update = _update(path, revision, view)
    if state is None or update.row.error is not None:
        return update, None
    cut = state.size - start
    tail = (b"" if grown is None else grown.tail) + data[max(0, cut - _TAIL) : cut]
    return update, Tallied(state, st.st_dev, st.st_ino, tail[-_TAIL:])


def _dashes(found: re.Match[str]) -> str:
    return "--" if ord(found.group()) > 0xFFFF else "-"


def _may_hold(name: str, folder: str, significant: int) -> bool:
    if significant == len(folder):
        return name == folder
    return name.startswith(folder[:significant]) and len(name) > significant


class CodexSource:
    format: SessionFormat = "codex"
    # Rollouts lie by date: every workspace's scan is the whole root (`elsewhere` tells them apart).
    scans_by_workspace = False

    def scan(self, root: Path, cwd: str | None) -> FileScan:
        files: list[LogFile] = []
        rejected: list[Rejected] = []
        # YYYY/MM/DD/rollout-*.jsonl, or flat (archived): three folder levels at most.
        folders = [(str(root), 0)]
        while folders:
            folder, depth = folders.pop()
            for entry in folder_entries(folder, rejected):
                if entry.is_symlink():
                    rejected.append(Rejected(entry.path, LINK_REASON))
                elif entry.name.startswith("rollout-") and entry.name.endswith(".jsonl"):
                    _take(entry, files, rejected)
                elif depth < 3 and entry.is_dir(follow_symlinks=False):
                    folders.append((entry.path, depth + 1))
        return FileScan(files, rejected, (f"{root}{os.sep}",))

    def index(self, path: Path, revision: str, root: Path | None = None) -> Update:
        return self.follow(path, revision, None, root)[0]

    def follow(
        self, path: Path, revision: str, kept: Tallied | None, root: Path | None = None
    ) -> tuple[Update, Tallied | None]:
        """`index`, reading only the bytes appended since `kept` was tallied when the file only
        grew since; and the tally to go on from next time (None when there is none to keep). A
        rollout that continues its thread after a revert is read whole, with its history."""
        return _follow(self.format, path, revision, kept, _rollout_of(path), _tallied_rollout, root)

    def elsewhere(
        self,
        path: str,
        cwd: str,
        root: Path | None = None,
        revision: str | None = None,
        walk: Walk | None = None,
    ) -> bool:
        """Rollouts lie by date, not by project: the first line, a rollout's `session_meta`,
        names its cwd, so a workspace's listing reads one line of another workspace's rollout
        (opened as `open_listed` opens it, from `root` and of the `revision` scanned, through
        `walk` when the listing glances at many)."""
        found = first_line_cwd(first_line(path, root, revision, walk, enough=_says_cwd))
        return found is not None and found != cwd


def _says_cwd(head: bytes) -> bool:
    return cwd_at_start(head) is not None


def first_line(
    path: str,
    root: Path | None = None,
    revision: str | None = None,
    walk: Walk | None = None,
    enough: Callable[[bytes], bool] | None = None,
) -> bytes:
    """The file's first line, up to `FIRST_LINE_BYTES` (empty when it cannot be read or is
    longer: the file is then read whole, as any other); or its start, once `enough` finds the
    bytes read so far enough (a glance needs no more of a long line than its cwd)."""
    head = b""
    try:
        fd = open_listed(path, root, revision, walk)
    except OSError:
        return b""
    try:
        size = _GLANCE_FIRST
        while len(head) < FIRST_LINE_BYTES and (block := os.read(fd, size)):
            end = block.find(b"\n")
            if end >= 0:
                return head + block[:end]
            head += block
            if enough is not None and enough(head):
                return head
            size = _GLANCE_CHUNK
    except OSError:
        pass
    finally:
        os.close(fd)
    return b""


HARNESS_SOURCES: dict[SessionFormat, ClaudeCodeSource | CodexSource] = {
    "claude-code": ClaudeCodeSource(),
    "codex": CodexSource(),
}


def source_fingerprint(root: Path) -> str:
    """`roots.root_fingerprint` for a root of any format: a digest of every session file's path
    and stat revision, and of what is refused, recognising the root's format by its layout."""
    fmt = detect_format(root)
    if fmt == "dsh":
        return root_fingerprint(root)
    scan = HARNESS_SOURCES[fmt].scan(root, None)
    return files_fingerprint(scan.files, scan.rejected)
