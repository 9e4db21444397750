"""Where sessions come from: the roots, each in one format, and the adapter that reads it.

Three formats are sources: DSH logs, Claude Code transcripts and Codex rollouts. A root is a
folder in one format: remem's own root and DSH's are DSH; `~/.claude/projects` (or
`$CLAUDE_CONFIG_DIR/projects`) is Claude Code; `~/.codex/sessions` and
`~/.codex/archived_sessions` (or under `$CODEX_HOME`) are Codex. Each default root is used only
when it exists. A configured root may name its format; a plain path is recognised by its
layout (decision 0120). A root whose name is not UTF-8 (from a variable, or a `~` of such a
`HOME`) is never read: the listing says it as the root's error (decision 0494). Every format
is served through the same interface, `Source`: which files of a root are sessions (all, or
those that can belong to one workspace), and what one file says at one revision, for the index.
DSH's adapter is the catalog's own reader path, which continues a grown log from its resume
point; Codex's goes on from the tally of what it read last (decision 0350); Claude Code's from
the graph it read last, while the conversation only went on (decision 0351).
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..home import Home
from ..os_names import is_utf8, shown
from ..protocol.sessions import SessionFormat
from ..safe_open import kind_of

if TYPE_CHECKING:
    # Annotations only: the processes a cold listing spawns import this module, and the
    # settings' schema is a fifth of their start.
    from ..settings import SessionRootSetting
    from .harness_sources import Tallied
    from .index import Update
    from .roots import LogFile, Rejected

HARNESS_NAMES: dict[SessionFormat, str] = {"dsh": "DSH", "claude-code": "Claude Code", "codex": "Codex"}
_YEAR = re.compile(r"\d{4}\Z")
_DAY = re.compile(r"\d{2}\Z")  # a Codex month or day folder
_DSH_LOGS = ("session.jsonl", "session.jsonl.zstd")
_PEEK = 8  # the entries of a folder looked into for DSH session folders


@dataclass(frozen=True)
class Root:
    """A session root and the format of every session in it; `implicit` roots (the defaults)
    are only looked at when they exist, so their absence is no error."""

    path: Path
    format: SessionFormat
    implicit: bool = False
    # Why the folder is not listed: it is one level inside a root (`misplaced`), its name is
    # not UTF-8 (`_misnamed`), ...; said as the root's error.
    problem: str | None = None
    # Its name is not UTF-8: `path` is its shown name, which stands for no folder (or another).
    misnamed: bool = False


@dataclass(frozen=True)
class HarnessHome:
    """Where a harness keeps its sessions: its home folder, which `variable` moves (else it is
    `default`), and the `folders` of it that hold sessions; the first is the one the harness
    resumes a session from."""

    variable: str
    default: str
    folders: tuple[str, ...]

    def path(self) -> Path:
        """The home in this process's environment: the variable's folder, else the default."""
        return _absolute(os.environ.get(self.variable, "").strip() or self.default)


# Each format's home, written here only: the roots read by default (`default_roots`), DSH's
# archive list (`metadata.dsh_registry`), the folders an empty listing names and a fork's resume
# command (`harness_homes`) all come from it.
HARNESS_HOMES: dict[SessionFormat, HarnessHome] = {
    "dsh": HarnessHome("DSH_HOME", "~/.dsh", ("sessions",)),
    "claude-code": HarnessHome("CLAUDE_CONFIG_DIR", "~/.claude", ("projects",)),
    "codex": HarnessHome("CODEX_HOME", "~/.codex", ("sessions", "archived_sessions")),
}


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

    def index(self, path: Path, revision: str, root: Path | None = None) -> Update:
        """What the file at `path` says, for the index (a per-file error, never a raise). It is
        opened from `root` without following a link on the way, and must be the file of
        `revision` (its device and inode): decision 0364."""
        ...

    def follow(
        self, path: Path, revision: str, kept: Tallied | None, root: Path | None = None
    ) -> tuple[Update, Tallied | None]:
        """`index`, going on from what an earlier read `kept` where the format allows; and what
        to keep for the next read of the file (None: it will be read whole)."""
        ...

    def elsewhere(self, path: str, cwd: str, root: Path | None = None, revision: str | None = None) -> bool:
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
    return _recognised(_names(path)) or "dsh"


def _names(path: Path) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def _recognised(names: list[str]) -> SessionFormat | None:
    """The format a root's entries `names` show, None when they show none."""
    if any(_YEAR.match(n) or (n.startswith("rollout-") and n.endswith(".jsonl")) for n in names):
        return "codex"
    if any(n.startswith("--") and n.endswith("--") for n in names):
        return "dsh"
    if any(n.startswith("-") for n in names):
        return "claude-code"
    return None


def misplaced(path: Path) -> str | None:
    """What a folder whose layout is no root's looks like when it is a folder inside one (a
    Claude Code project folder, a Codex year or month folder, a DSH project or session folder),
    and which folder to name instead; None for any other (an empty folder, say). Only folders
    `detect_format` recognises nothing in are asked: a readdir, and a stat or two. The listing
    makes it the root's error (decision 0362)."""
    names = _names(path)
    if not names or _recognised(names) is not None:
        return None
    name = path.name
    if any(n in _DSH_LOGS for n in names):
        what, instead = "one DSH session's folder", path.parent.parent
    elif any(n.endswith(".jsonl") for n in names if (path / n).is_file()):
        what, instead = "a Claude Code project folder (its *.jsonl are one workspace's sessions)", path.parent
    elif _YEAR.match(name) and any(_DAY.match(n) for n in names):
        what, instead = "a Codex year folder (sessions/YYYY)", path.parent
    elif _DAY.match(name) and _YEAR.match(path.parent.name) and any(_DAY.match(n) for n in names):
        what, instead = "a Codex month folder (sessions/YYYY/MM)", path.parent.parent
    elif any((path / n / log).is_file() for n in names[:_PEEK] for log in _DSH_LOGS):
        what, instead = "a DSH project folder (it holds session folders)", path.parent
    else:
        return None
    return f"looks like {what}, not a session root; name {instead} as the root instead"


def not_a_folder(path: Path) -> str | None:
    """Why `path`, named as a session root, is no folder to list when something else is there
    (a file, a FIFO: never opened); None for a folder, or when nothing is there (the listing
    says a root does not exist). A link is followed: the user chose the root."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISDIR(mode):
        return None
    return f"session root is {kind_of(mode)}, not a folder; name the folder that holds the sessions instead"


def configured_roots(entry: str | SessionRootSetting) -> list[Root]:
    """The roots a `sessions.roots` entry names (`harness_home` for a harness's own folder);
    one whose name is not UTF-8 (a `~` of a HOME whose name is not) is one root said unread."""
    path = _absolute(entry if isinstance(entry, str) else entry.path)
    if not is_utf8(str(path)):
        return [_misnamed(path, None if isinstance(entry, str) else entry.format)]
    if isinstance(entry, str):
        return named_roots(path)
    found = detect_format(path)
    try:
        home = harness_home(path, found)
    except OSError as exc:
        return [_unreadable(path, entry.format or found, exc)]
    if home and (entry.format is None or entry.format == home[0].format):
        return home
    return [Root(path, entry.format or found, problem=not_a_folder(path) or misplaced(path))]


def awaited_folders(entry: str | SessionRootSetting) -> list[Path]:
    """The session folders of a harness home an entry names that the harness makes only later:
    Codex makes `archived_sessions/` at its first archive. Watched before they exist, so what
    is archived into them is listed (a listing reads them once they are there)."""
    path = _absolute(entry if isinstance(entry, str) else entry.path)
    named = {root.path for root in configured_roots(entry)}
    archive = path / "archived_sessions"
    return [archive] if path / "sessions" in named and archive not in named else []


def named_roots(path: Path) -> list[Root]:
    """The roots a folder named on the command line (`--root`) stands for: itself, in the format
    its layout shows, or the session folders of the harness home it is."""
    absolute = Path(os.path.abspath(path))
    found = detect_format(absolute)
    problem = not_a_folder(absolute) or misplaced(absolute)
    try:
        home = harness_home(absolute, found)
    except OSError as exc:
        return [_unreadable(absolute, found, exc)]
    return home or [Root(absolute, found, problem=problem)]


def _unreadable(path: Path, found: SessionFormat, exc: OSError) -> Root:
    """The root at `path` whose own folders could not be looked for, for another reason than
    that none is there (`_is_dir`): its listing says why, the other roots listed."""
    return Root(
        path, found, problem=f"session root cannot be looked into ({exc.strerror or exc}); check the path"
    )


def harness_home(path: Path, found: SessionFormat) -> list[Root]:
    """The session folders of `path` (whose own layout reads as `found`) when it is a harness's
    own folder rather than one of them: a Codex home (`sessions/` in Codex's date layout, and
    `archived_sessions/`) or a Claude Code config folder (`projects/`). People name those, and
    they hold no session themselves. Costs a `stat` or two for any other root (every request
    builds its roots)."""
    if found == "codex":  # a rollout folder itself
        return []
    sessions, projects = path / "sessions", path / "projects"
    if _is_dir(sessions) and detect_format(sessions) == "codex":
        found_here = [sessions, path / "archived_sessions"]
        return [Root(folder, "codex") for folder in found_here if _is_dir(folder)]
    if _is_dir(projects) and detect_format(projects) == "claude-code":
        return [Root(projects, "claude-code")]
    return []


def _is_dir(path: Path) -> bool:
    """Whether a folder is at `path`; False when none is or none can be looked for there (a
    root that cannot be searched): the root is then taken as named, and its listing says why it
    cannot be read, where this raised at every start of the daemon. Any other error (an I/O
    error, a name too long) is raised, for the root's listing to say (`_unreadable`)."""
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except OSError as exc:
        if exc.errno in _NO_FOLDER:
            return False
        raise


_NO_FOLDER = frozenset({errno.EACCES, errno.ENOENT, errno.ENOTDIR, errno.ELOOP})


def default_roots() -> list[Root]:
    """Where DSH, Claude Code and Codex keep this user's sessions, found or not (an empty tree
    names them all): the session folders of each home (`HARNESS_HOMES`), taken from the
    harness's variable, else its default."""
    return [
        _default_root(home.path() / folder, fmt)
        for fmt, home in HARNESS_HOMES.items()
        for folder in home.folders
    ]


def _default_root(path: Path, fmt: SessionFormat) -> Root:
    """The default root at `path`. One whose name is not UTF-8 is never looked into, by its
    shown name (`_misnamed`) or its raw one: whether a folder is there is decided here, once,
    from the raw name. Said unread only where one is (it is not `implicit` then), as any default
    root is read only then."""
    if is_utf8(str(path)):
        return Root(path, fmt, implicit=True)
    unread = _misnamed(path, fmt)
    return unread if os.path.isdir(path) else replace(unread, implicit=True)


def default_listed(root: Root) -> bool:
    """Whether a listing takes up the default root `root`: where its folder is. One whose name
    is not UTF-8 is its error when its folder was there (`_default_root`); its shown name, which
    stands for no folder or for another one, is never looked at."""
    return not root.implicit if root.misnamed else root.path.is_dir()


def _misnamed(path: Path, fmt: SessionFormat | None) -> Root:
    """The root at `path`, whose name is not UTF-8, by its shown name and never looked into: the
    index, the listing and the daemon's answers hold paths as UTF-8 text, where its name failed
    every command that stored or sent it. Its format (`fmt`, else DSH) is only a label."""
    from .roots import NAME_REASON  # only for such a name: it costs the reader's imports

    return Root(Path(shown(str(path))), fmt or "dsh", problem=NAME_REASON, misnamed=True)


def all_roots(
    home: Home, configured: Iterable[str | SessionRootSetting], defaults: Iterable[Root] | None = None
) -> list[Root]:
    """remem's own root, the configured ones, and the harnesses' default ones (`defaults`, else
    this process's) when they exist; a folder named twice is one root, with the format it was
    first named with."""
    roots = [Root(home.sessions, "dsh", implicit=True)]
    roots += [root for entry in configured for root in configured_roots(entry)]
    chosen = default_roots() if defaults is None else defaults
    roots += [root for root in chosen if default_listed(root)]
    return unique_roots(roots)


def unique_roots(roots: Iterable[Root]) -> list[Root]:
    """`roots`, a folder named twice once, with the path and format it was first named with: by
    the same path, or by another that reaches the same folder (its device and inode), such as a
    link to a harness's folder in `sessions.roots` or `--root`. Read twice, every session in it
    would have its id at two paths, and be listed as neither copy. The root named through a
    link is the user's choice (it is followed, as `not_a_folder` follows it); nothing inside
    a root is ever followed."""
    unique: dict[object, Root] = {}
    for root in roots:
        unique.setdefault(_folder_identity(root.path), root)
    return list(unique.values())


def _folder_identity(path: Path) -> object:
    """The folder `path` reaches (device, inode), links followed; its path when no folder is there."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return path
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else path
