"""Where sessions come from: the roots, each in one format, and the adapter that reads it.

Three formats are sources: DSH logs, Claude Code transcripts and Codex rollouts. A root is a
folder in one format: remem's own root and DSH's are DSH; `~/.claude/projects` (or
`$CLAUDE_CONFIG_DIR/projects`) is Claude Code; `~/.codex/sessions` and
`~/.codex/archived_sessions` (or under `$CODEX_HOME`) are Codex. Each default root is used only
when it exists. A configured root may name its format; a plain path is recognised by its
layout (decision 0120). Every format is served through the same interface, `Source`: which
files of a root are sessions (all, or those that can belong to one workspace), and what one
file says at one revision, for the index. DSH's adapter is the catalog's own reader path,
which continues a grown log from its resume point; Codex's goes on from the tally of what it
read last (decision 0350); Claude Code's from the graph it read last, while the conversation
only went on (decision 0351).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..home import Home
from ..protocol.sessions import SessionFormat

if TYPE_CHECKING:
    # Annotations only: the processes a cold listing spawns import this module, and the
    # settings' schema is a fifth of their start.
    from ..settings import SessionRootSetting
    from .harness_sources import Tallied
    from .index import Update
    from .roots import LogFile, Rejected

HARNESS_NAMES: dict[SessionFormat, str] = {"dsh": "DSH", "claude-code": "Claude Code", "codex": "Codex"}
_YEAR = re.compile(r"\d{4}\Z")


@dataclass(frozen=True)
class Root:
    """A session root and the format of every session in it; `implicit` roots (the defaults)
    are only looked at when they exist, so their absence is no error."""

    path: Path
    format: SessionFormat
    implicit: bool = False


@dataclass
class FileScan:
    """The session files of a root (or of the folders a workspace can use), what was refused,
    and the path prefixes looked at: only rows under those can be known gone."""

    files: list[LogFile]
    rejected: list[Rejected]
    scanned: tuple[str, ...]


class Source(Protocol):
    """One format's adapter: finding its files in a root and reading one for the index."""

    format: SessionFormat

    def scan(self, root: Path, cwd: str | None) -> FileScan:
        """Every session file of `root`, or of the folders that can hold sessions of `cwd`."""
        ...

    def index(self, path: Path, revision: str) -> Update:
        """What the file at `path` says, for the index (a per-file error, never a raise)."""
        ...

    def follow(self, path: Path, revision: str, kept: Tallied | None) -> tuple[Update, Tallied | None]:
        """`index`, going on from what an earlier read `kept` where the format allows; and what
        to keep for the next read of the file (None: it will be read whole)."""
        ...

    def elsewhere(self, path: str, cwd: str) -> bool:
        """Whether a glance at the file shows it holds a session of another workspace than `cwd`,
        so a workspace's listing can pass it by unread; False when a glance cannot tell."""
        ...


def _absolute(path: str) -> Path:
    return Path(os.path.abspath(os.path.expanduser(path)))


def detect_format(path: Path) -> SessionFormat:
    """The format a root's layout shows: Codex has `YYYY` date folders or `rollout-*.jsonl`
    files, a Claude Code project folder is the cwd with every other character a `-`
    (`-home-me-app`), DSH's is `--<slug>--`. An empty or unreadable root is DSH, the format
    remem writes."""
    try:
        names = os.listdir(path)
    except OSError:
        return "dsh"
    if any(_YEAR.match(n) or (n.startswith("rollout-") and n.endswith(".jsonl")) for n in names):
        return "codex"
    if any(n.startswith("--") and n.endswith("--") for n in names):
        return "dsh"
    if any(n.startswith("-") for n in names):
        return "claude-code"
    return "dsh"


def configured_roots(entry: str | SessionRootSetting) -> list[Root]:
    """The roots a `sessions.roots` entry names (`harness_home` for a harness's own folder)."""
    if isinstance(entry, str):
        return named_roots(_absolute(entry))
    path = _absolute(entry.path)
    found = detect_format(path)
    home = harness_home(path, found)
    if home and (entry.format is None or entry.format == home[0].format):
        return home
    return [Root(path, entry.format or found)]


def named_roots(path: Path) -> list[Root]:
    """The roots a folder named on the command line (`--root`) stands for: itself, in the format
    its layout shows, or the session folders of the harness home it is."""
    absolute = Path(os.path.abspath(path))
    found = detect_format(absolute)
    return harness_home(absolute, found) or [Root(absolute, found)]


def harness_home(path: Path, found: SessionFormat) -> list[Root]:
    """The session folders of `path` (whose own layout reads as `found`) when it is a harness's
    own folder rather than one of them: a Codex home (`sessions/` in Codex's date layout, and
    `archived_sessions/`) or a Claude Code config folder (`projects/`). People name those, and
    they hold no session themselves. Costs a `stat` or two for any other root (every request
    builds its roots)."""
    if found == "codex":  # a rollout folder itself
        return []
    sessions, projects = path / "sessions", path / "projects"
    if sessions.is_dir() and detect_format(sessions) == "codex":
        found_here = [sessions, path / "archived_sessions"]
        return [Root(folder, "codex") for folder in found_here if folder.is_dir()]
    if projects.is_dir() and detect_format(projects) == "claude-code":
        return [Root(projects, "claude-code")]
    return []


def default_roots() -> list[Root]:
    """Where DSH, Claude Code and Codex keep this user's sessions, found or not (an empty tree
    names them all); each home is taken from the harness's variable, else its default."""
    dsh = os.environ.get("DSH_HOME", "").strip() or "~/.dsh"
    claude = os.environ.get("CLAUDE_CONFIG_DIR", "").strip() or "~/.claude"
    codex = os.environ.get("CODEX_HOME", "").strip() or "~/.codex"
    return [
        Root(_absolute(dsh) / "sessions", "dsh", implicit=True),
        Root(_absolute(claude) / "projects", "claude-code", implicit=True),
        Root(_absolute(codex) / "sessions", "codex", implicit=True),
        Root(_absolute(codex) / "archived_sessions", "codex", implicit=True),
    ]


def all_roots(home: Home, configured: Iterable[str | SessionRootSetting]) -> list[Root]:
    """remem's own root, the configured ones, and the harnesses' default ones when they exist;
    a folder named twice is one root, with the format it was first named with."""
    roots = [Root(home.sessions, "dsh", implicit=True)]
    roots += [root for entry in configured for root in configured_roots(entry)]
    roots += [root for root in default_roots() if root.path.is_dir()]
    unique: dict[Path, Root] = {}
    for root in roots:
        unique.setdefault(root.path, root)
    return list(unique.values())
