"""A session root whose folder can be swapped for a link to a folder outside every root, at a
fixed step of an operation: what a `renameat2(RENAME_EXCHANGE)` race does at the worst moment
(decision 0364). The outside file has the inside one's name and holds `MARKER`."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.sessions.paths import Encoding
from tests.sessions.factory import SessionSpec, build_session, write_session

from .claude_lines import SID, jsonl, prompt, say
from .codex_lines import TID, meta, rollout, turn

MARKER = "OUTSIDE_SECRET"
INSIDE = "INSIDE_PROMPT"
OLD = 1_600_000_000


@dataclass(frozen=True)
class Swappable:
    """A root holding one session whose `folder` can be swapped for a link to `outside`, which
    holds a file of the same name with `MARKER` where the inside one has `INSIDE`."""

    fmt: str
    root: Path
    folder: Path
    file: Path
    outside: Path
    session: str

    def swap(self) -> None:
        """The folder moved aside (made first if it is not there yet) and a link to the outside
        folder put in its place."""
        self.folder.mkdir(parents=True, exist_ok=True)
        self.folder.rename(self.folder.with_name(self.folder.name + ".real"))
        self.folder.symlink_to(self.outside, target_is_directory=True)

    def undo(self) -> None:
        self.folder.unlink()
        self.folder.with_name(self.folder.name + ".real").rename(self.folder)

    def outside_files(self) -> list[str]:
        """What the outside folder holds, at any depth."""
        return sorted(str(p.relative_to(self.outside)) for p in self.outside.rglob("*"))

    def marked(self) -> list[Path]:
        """The files in the root that hold `MARKER`."""
        return [
            p
            for p in self.root.rglob("*")
            if p.is_file() and not p.is_symlink() and MARKER.encode() in p.read_bytes()
        ]


def place(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    os.utime(path, (OLD, OLD))


def swappable(tmp_path: Path, fmt: str) -> Swappable:
    if fmt == "claude-code":
        root = tmp_path / "claude" / "projects"
        file = root / "-home-u-proj" / f"{SID}.jsonl"
        data = jsonl(prompt("u1", None, INSIDE), say("a1", "u1", "an answer"))
        session = SID
    elif fmt == "codex":
        root = tmp_path / "codex" / "sessions"
        file = root / "2026" / "05" / "01" / f"rollout-2026-05-01T00-00-00-{TID}.jsonl"
        data = rollout(meta(cwd="/home/u/proj"), *turn("t1", INSIDE, "an answer"))
        session = TID
    else:
        root = tmp_path / "dsh"
        draft = build_session(SessionSpec(seed=3, turns=2, cwd="/home/u/proj"), session_id="dsh-swapped")
        file = write_session(root, draft, encoding=Encoding.RAW)
        os.utime(file, (OLD, OLD))
        # Outside, the project folder of a log of the same session whose first prompt holds the
        # marker: it reads as this session, at the same path below the folder.
        outside = tmp_path / "outside"
        marked = file.read_bytes().replace(b'"text":"', f'"text":"{MARKER} '.encode(), 1)
        place(outside / file.parent.name / file.name, marked)
        return Swappable(fmt, root, file.parent.parent, file, outside, "dsh-swapped")
    place(file, data)
    outside = tmp_path / "outside"
    place(outside / file.name, data.replace(INSIDE.encode(), MARKER.encode()))
    return Swappable(fmt, root, file.parent, file, outside, session)


def swap_before(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str, where: Swappable) -> None:
    """Have `owner.name` swap `where`'s folder right before its first call runs."""
    original: Callable[..., Any] = getattr(owner, name)
    calls: list[bool] = []

    def swapping(*args: Any, **kwargs: Any) -> Any:
        if not calls:
            calls.append(True)
            where.swap()
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, swapping)


def swap_after(
    monkeypatch: pytest.MonkeyPatch, owner: Any, name: str, where: Swappable, call: int = 1
) -> None:
    """Have `owner.name` swap `where`'s folder right after its `call`-th call returns."""
    original: Callable[..., Any] = getattr(owner, name)
    calls: list[bool] = []

    def swapping(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        calls.append(True)
        if len(calls) == call:
            where.swap()
        return result

    monkeypatch.setattr(owner, name, swapping)
