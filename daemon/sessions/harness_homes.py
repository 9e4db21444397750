"""Where the harnesses keep their sessions, as people are told it: the folders an empty listing
looked in, and the command that resumes a fork's child from where its harness finds it.

Each harness's variable and default home are `sources.HARNESS_HOMES`, its session folders
`sources.default_roots()`; the CLI's empty state and the editor's both come from `looked_in`. A
Claude Code or Codex child is resumed by its harness only from its home's session folder:
Claude Code from ``$CLAUDE_CONFIG_DIR/projects/<project>/`` (by default ``~/.claude``), Codex
from anywhere under ``$CODEX_HOME/sessions`` (by default ``~/.codex``; an archived rollout it
refuses, decision 0290). `resume_place` names the variable when the child's home is not the
default one, so the command works from any shell.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..protocol.sessions import SessionFormat
from .sources import HARNESS_HOMES, HARNESS_NAMES, default_roots


@dataclass(frozen=True)
class Looked:
    """A folder a listing looked in; `harness` names whose default folder it is."""

    path: Path
    exists: bool
    harness: SessionFormat | None = None

    def to_json(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"path": str(self.path), "exists": self.exists}
        return shown if self.harness is None else {**shown, "harness": self.harness}


def looked_in(roots: Iterable[Path]) -> list[Looked]:
    """`roots` (those a listing read, found or not), then each harness's default folder that is
    not one of them: a listing passes a default folder by while it does not exist, yet that is
    where the harness's sessions would be."""
    defaults = {root.path: root.format for root in default_roots()}
    read = list(dict.fromkeys(roots))
    looked = [Looked(path, path.is_dir(), defaults.get(path)) for path in read]
    return looked + [Looked(path, path.is_dir(), f) for path, f in defaults.items() if path not in read]


@dataclass(frozen=True)
class ResumePlace:
    """How a harness finds a fork's child: from `cwd`, with `env`, as the shell `command`;
    `env` and `command` are None, and `note` says why, when no home of the harness holds it."""

    cwd: str | None
    env: dict[str, str] | None
    command: str | None
    note: str | None


def resume_place(harness: SessionFormat, child: Path, cwd: str | None, resume: Sequence[str]) -> ResumePlace:
    """Where and how `resume` (the harness's argv) continues `child`, a session of `cwd`, a
    Claude Code or Codex session: remem writes their children where the harness resumes them."""
    home = HARNESS_HOMES[harness]
    found = _home_of(harness, child)
    if found is None:
        sessions = home.folders[0]  # the folder of the home it resumes sessions from
        where = f"${home.variable}/{sessions} (by default {home.default}/{sessions})"
        name = HARNESS_NAMES[harness]
        note = f"{name} does not look in {child.parent}: it resumes sessions from {where} only"
        return ResumePlace(cwd, None, None, note)
    default = Path(home.default).expanduser()
    env = {} if os.path.realpath(found) == os.path.realpath(default) else {home.variable: str(found)}
    words = [f"{variable}={shlex.quote(value)}" for variable, value in env.items()] + [shlex.join(resume)]
    if cwd is not None:
        words.insert(0, f"cd {shlex.quote(cwd)} &&")
    return ResumePlace(cwd, env, " ".join(words), None)


def _home_of(harness: SessionFormat, child: Path) -> Path | None:
    """The home of `harness` whose session folder holds `child`, None when none does: Claude
    Code reads `<home>/projects/<project>/<session>.jsonl`, Codex any rollout under
    `<home>/sessions`, none under `archived_sessions`."""
    if harness == "claude-code":
        return child.parents[2] if len(child.parents) > 2 and child.parents[1].name == "projects" else None
    for folder in child.parents:
        if folder.name == "archived_sessions":
            return None
        if folder.name == "sessions":
            return folder.parent
    return None
