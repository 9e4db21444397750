"""The child of a Codex fork: a new ``session_meta``, then the parent's bytes through a turn.

Codex's legacy fork layout, so that `codex resume <child>` (what remem prints, decision 0438)
continues it, as `codex exec resume <child> "<prompt>"` does in a script: the child's
``session_meta`` is the parent's first one with the child's id, ``forked_from_id`` naming the
parent and the time of the fork — the parent's cwd, provider and instructions, and its
``history_base`` when the parent itself inherits paginated history (without it the child
would lose everything before the parent's own lines), and no ``forked_from_ordinal_exclusive``
(the parent's, an ordinal of the thread the parent was forked from; decision 0400). Then come
the parent's lines verbatim, its own ``session_meta`` included, through the line that ends the
chosen turn. Readers take identity from line 1 only, the child's own ``session_meta``.

A fork is no subagent, whatever its parent is: a subagent parent's ``source.subagent`` (which
names the session that spawned it) and its agent's nickname and role are not carried over, and
the child's ``source`` is ``exec``, as a fork Codex makes takes the source of the process that
forks (codex-rs ``ThreadManager::fork_thread``): remem forks in no Codex process and writes that
of ``codex exec``, which ``codex resume`` continues all the same (decision 0438).
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec

from ..safe_open import open_folder
from ..sessions.formats.jsonl import end_of_line

# What a fork of a subagent says it came from: `codex exec`, whose `resume` continues it.
FORK_SOURCE = "exec"
# A spawned subagent's own fields of its `session_meta`, besides its `source`.
SUBAGENT_FIELDS = ("agent_nickname", "agent_role", "agent_path", "parent_thread_id")


def child_meta(first_meta_line: bytes, child: str, parent: str, now: datetime) -> bytes:
    """The child's ``session_meta`` line (ending in a newline)."""
    record: dict[str, Any] = msgspec.json.decode(first_meta_line)
    stamp = now.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    record.pop("ordinal", None)  # the parent's numbering; the child's own lines continue it
    record["timestamp"] = stamp
    payload = record["payload"]
    payload.update(id=child, forked_from_id=parent, timestamp=stamp)
    # Where in its parent Codex forked the parent (paired with the parent's own parent): the
    # child copies its parent's lines, so it was forked at no ordinal of the parent it names.
    payload.pop("forked_from_ordinal_exclusive", None)
    if "session_id" in payload:
        payload["session_id"] = child
    source = payload.get("source")
    if isinstance(source, dict) and "subagent" in source:
        payload["source"] = FORK_SOURCE
        for spawned in SUBAGENT_FIELDS:
            payload.pop(spawned, None)
    return msgspec.json.encode(record) + b"\n"


def meta_line(data: bytes, number: int) -> bytes:
    """Line `number` (1-based) of `data`, without its newline."""
    begin = end_of_line(data, number - 1)
    end = data.find(b"\n", begin)
    return data[begin : end if end >= 0 else len(data)]


def landing_root(parent: Path, root: Path | None) -> Path:
    """The root the child of `parent`, listed from `root`, lands in (decision 0290): an
    ``archived_sessions`` root forks into its sibling ``sessions``, since Codex refuses to resume
    an archived rollout. Without a `root`, the one the parent's path shows (`layout_root`)."""
    return child_root(root if root is not None else layout_root(parent))


def child_path(parent: Path, target: Path, child: str, now: datetime) -> Path:
    """Where the child of `parent` lands in its `landing_root`, `target`.

    A ``sessions`` root gets today's ``YYYY/MM/DD/rollout-<ts>-<id>.jsonl``, as Codex writes its
    own. Any other root gets the child beside its parent: remem lists it there, and Codex finds
    it there when the root lies under its ``CODEX_HOME/sessions``. The date folders and the
    file name's time are local, as Codex names its own (codex-rs's `now_local`), so the child
    sorts among them by when it was made; the times inside the file stay UTC.
    """
    local = now.astimezone()
    folder = (
        target / f"{local:%Y}" / f"{local:%m}" / f"{local:%d}" if target.name == "sessions" else parent.parent
    )
    return folder / f"rollout-{local:%Y-%m-%dT%H-%M-%S}-{child}.jsonl"


def landed_root(child: Path) -> Path:
    """The root a rollout `child_path` made lies in, told by its path alone: a ``sessions``
    folder directly above its date folders, else (beside its parent, in a root of another
    shape) its own folder, the one layout that does not tell how far up the root lies; a
    folder named ``sessions`` a few levels above such a root is not it."""
    root = layout_root(child)
    below = child.parent.relative_to(root).parts
    return root if len(below) == 3 and all(part.isdigit() for part in below) else child.parent


def child_root(root: Path) -> Path:
    """The root a fork of a rollout listed from `root` lands in."""
    return root.parent / "sessions" if root.name == "archived_sessions" else root


def layout_root(parent: Path) -> Path:
    """The Codex folder `parent` lies in by its path: the nearest ``sessions`` or
    ``archived_sessions`` within the date folders' depth, else the parent's own folder."""
    for folder in list(parent.parents)[:4]:
        if folder.name in ("sessions", "archived_sessions"):
            return folder
    return parent.parent


def existing_rollout(root: Path, child: str) -> Path | None:
    """A rollout of session `child` already under `root` (flat, or in date folders): the same
    operation id used in another remem home, or before this home's fork journal was lost. The
    folders are looked through as `safe_open.open_folder` opens them: a link is not followed."""
    try:
        fd = open_folder(root, root)
    except OSError:
        return None  # no root yet: nothing is in it
    return _rollout_in(fd, root, f"-{child}.jsonl", 0)


def _rollout_in(fd: int, folder: Path, suffix: str, depth: int) -> Path | None:
    """The rollout ending in `suffix` in the folder `fd` (closed here) or, down to the date
    folders' depth, in a folder below it."""
    try:
        with os.scandir(fd) as entries:
            found = sorted((e.name, e.is_dir(follow_symlinks=False)) for e in entries)
        for name, is_folder in found:
            if depth in (0, 3) and not is_folder and name.startswith("rollout-") and name.endswith(suffix):
                return folder / name
        for name, is_folder in found:
            if depth < 3 and is_folder:
                try:
                    below = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                except OSError:
                    continue  # swapped for a link since, or gone
                if (inside := _rollout_in(below, folder / name, suffix, depth + 1)) is not None:
                    return inside
        return None
    finally:
        os.close(fd)
