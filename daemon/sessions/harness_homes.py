"""Where the harnesses keep their sessions, as people are told it: the folders an empty listing
looked in, and the command that resumes a fork's child from where its harness finds it.

Each harness's variable and default home are `sources.HARNESS_HOMES`, its session folders
`sources.default_roots()`; the CLI's empty state and the editor's both come from `looked_in`,
with the default folders of the process that read the sessions: the daemon's, which it says in
`daemon/hello` (`harness_roots`), when it answered. A client whose own environment names folders
the daemon does not read is warned (`unread_here`, `elsewhere_warning`; decision 0372). A
Claude Code or Codex child is resumed by its harness only from its home's session folder:
Claude Code from ``$CLAUDE_CONFIG_DIR/projects/<project>/`` (by default ``~/.claude``), Codex
from anywhere under ``$CODEX_HOME/sessions`` (by default ``~/.codex``; an archived rollout it
refuses, decision 0290). `resume_place` names the variable when the child's home is not the
default one, so the command works from any shell.
"""

from __future__ import annotations

import os
import shlex
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..home import Home, HomeUnusable
from ..protocol.sessions import SessionFormat
from .sources import HARNESS_HOMES, HARNESS_NAMES, Root, configured_roots, default_listed, default_roots


@dataclass(frozen=True)
class Looked:
    """A folder a listing looked in; `harness` names whose default folder it is."""

    path: Path
    exists: bool
    harness: SessionFormat | None = None

    def to_json(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"path": str(self.path), "exists": self.exists}
        return shown if self.harness is None else {**shown, "harness": self.harness}


def looked_in(roots: Iterable[Path], defaults_read: Sequence[Root] | None = None) -> list[Looked]:
    """`roots` (those a listing read, found or not), then each harness's default folder that is
    not one of them: a listing passes a default folder by while it does not exist, yet that is
    where the harness's sessions would be. The default folders are `defaults_read`, those of the
    process that listed (the daemon's, from its hello), else this process's."""
    chosen = default_roots() if defaults_read is None else defaults_read
    defaults = {root.path: root.format for root in chosen}
    read = list(dict.fromkeys(roots))
    # `os.path.isdir` says False for a path that cannot be looked at (a name too long, an I/O
    # error), which the listing said as an error of its own; `Path.is_dir` raised it.
    looked = [Looked(path, os.path.isdir(path), defaults.get(path)) for path in read]
    return looked + [Looked(path, os.path.isdir(path), f) for path, f in defaults.items() if path not in read]


def harness_roots() -> dict[SessionFormat, list[str]]:
    """Each harness's default session folders in this process's environment, keyed by format:
    what `daemon/hello` carries, the client's in its params and the daemon's in its answer."""
    said: dict[SessionFormat, list[str]] = {}
    for root in default_roots():
        said.setdefault(root.format, []).append(str(root.path))
    return said


def roots_said(said: Mapping[str, Sequence[str]]) -> list[Root]:
    """The default roots another process's `harness_roots` names (a harness this remem does not
    know is left out), as `default_roots` gives this process's."""
    known: dict[str, SessionFormat] = {fmt: fmt for fmt in HARNESS_HOMES}
    return [
        Root(Path(path), known[fmt], implicit=True)
        for fmt, paths in said.items()
        if fmt in known
        for path in paths
    ]


@dataclass(frozen=True)
class Elsewhere:
    """A harness whose session folders in this process's environment (`here`) the daemon does
    not read: its own default folders are `daemon`. `misnamed`: one of them is there by a name
    that is not UTF-8, which no listing reads (`here` holds its shown name)."""

    harness: SessionFormat
    daemon: tuple[Path, ...]
    here: tuple[Path, ...]
    misnamed: bool = False


def unread_here(home: Home, daemon: Mapping[str, Sequence[str]]) -> list[Elsewhere]:
    """Each harness with a session folder in this process's environment that exists and that
    the daemon, whose default folders are `daemon`, reads neither by default nor as a root of
    `sessions.roots`: its sessions are missing from the daemon's answers. One whose name is not
    UTF-8 the daemon names only as its error when its own is the same (by its shown name); else
    its listing says nothing of it (decision 0494). Compared as real paths; `settings.yml` is
    read only when a folder is not among the daemon's defaults."""
    theirs = roots_said(daemon)
    read = {os.path.realpath(root.path) for root in theirs}
    here = default_roots()
    missing = [root for root in here if default_listed(root) and os.path.realpath(root.path) not in read]
    if missing:
        read |= {os.path.realpath(root.path) for root in _configured(home)}
        missing = [root for root in missing if os.path.realpath(root.path) not in read]
    harnesses = dict.fromkeys(root.format for root in missing)
    return [
        Elsewhere(
            fmt,
            tuple(root.path for root in theirs if root.format == fmt),
            tuple(root.path for root in here if root.format == fmt),
            any(root.misnamed for root in missing if root.format == fmt),
        )
        for fmt in harnesses
    ]


def _configured(home: Home) -> list[Root]:
    """The roots `sessions.roots` names, as the daemon reads them; none while the file is
    invalid (the daemon's answer says so) or cannot be read."""
    from ..settings import SettingsError, SettingsStore  # only when the environments differ

    try:
        entries = SettingsStore(home).read()[0].sessions.roots
    except (SettingsError, HomeUnusable, OSError):
        return []
    return [root for entry in entries for root in configured_roots(entry)]


def elsewhere_warning(found: Sequence[Elsewhere], pid: int, whose: str, remedy: str) -> str:
    """One line: per harness, where the daemon (`pid`) reads its sessions and where `whose`
    environment ("this shell's") names them, by its variable; then `remedy`, how to go on."""
    said = []
    for one in found:
        variable = HARNESS_HOMES[one.harness].variable
        named = (
            f"which {whose} {variable} names"
            if os.environ.get(variable, "").strip()
            else f"{whose} default ({variable} unset)"
        )
        where = f"in {_folders(one.daemon)}, not in {_folders(one.here)}"
        # No daemon reads it, nor a listing without one: said so, or the remedy would mislead.
        unread = (
            ", a folder whose name is not UTF-8, which no listing can read: rename it" if one.misnamed else ""
        )
        said.append(f"{HARNESS_NAMES[one.harness]} sessions {where}, {named}{unread}")
    return f"the daemon (pid {pid}) reads {', and '.join(said)}; {remedy}"


def _folders(paths: Sequence[Path]) -> str:
    return " and ".join(str(path) for path in paths) or "no folder"


@dataclass(frozen=True)
class ResumePlace:
    """How a harness finds a fork's child: from `cwd`, with `env`, as the shell `command`;
    `env` and `command` are None, and `note` says why, when no home of the harness holds it;
    a `note` beside a command says why the command would fail now."""

    cwd: str | None
    env: dict[str, str] | None
    command: str | None
    note: str | None


def resume_place(harness: SessionFormat, child: Path, cwd: str | None, resume: Sequence[str]) -> ResumePlace:
    """Where and how `resume` (the harness's argv) continues `child`, a session of `cwd`, a
    Claude Code or Codex session: remem writes their children where the harness resumes them.
    A `cwd` that is no folder any more keeps its command, and a note says why it fails; one that
    is not absolute is no place to `cd` to, and a note says so."""
    home = HARNESS_HOMES[harness]
    found = _home_of(harness, child)
    if found is None:
        sessions = home.folders[0]  # the folder of the home it resumes sessions from
        where = f"${home.variable}/{sessions} (by default {home.default}/{sessions})"
        name = HARNESS_NAMES[harness]
        return ResumePlace(
            cwd, None, None, f"{name} does not look in {child.parent}: it resumes sessions from {where} only"
        )
    default = Path(home.default).expanduser()
    env = {} if os.path.realpath(found) == os.path.realpath(default) else {home.variable: str(found)}
    words = [f"{variable}={shlex.quote(value)}" for variable, value in env.items()] + [shlex.join(resume)]
    note: str | None = None
    if cwd is not None and not os.path.isabs(cwd):
        # Relative to a folder no file keeps: a `cd` (or a look at it) would go from wherever
        # the command runs, which is no place of the session's (decision 0495).
        note = (
            f"the session's cwd {cwd!r} is not an absolute path: run this from the folder the session was in"
        )
    elif cwd is not None:
        words.insert(0, f"cd {shlex.quote(cwd)} &&")
        if _gone(cwd):
            note = (
                f"the session's folder {cwd} is not there any more: the command's `cd` fails "
                "until the folder is made again or the project is moved back"
            )
    return ResumePlace(cwd, env, " ".join(words), note)


def _gone(folder: str) -> bool:
    """Whether `folder` is not there (nothing, or no folder, at its path); one that cannot be
    looked at (not allowed, an unreachable mount) is not said to be gone."""
    try:
        return not stat.S_ISDIR(os.stat(folder).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return True
    except (OSError, ValueError):
        return False


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
