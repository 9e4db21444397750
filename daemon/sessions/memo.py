"""What a long-lived process (the daemon) remembers of its session roots between listings.

A listing scans every folder of the roots, stats every log and reads the index's rows. The
daemon's watcher sees every change anyway, so the memo keeps the folder scans and the rows in
memory and the watcher marks what changed (`changed(path)`): one log, one project folder or a
root's list of projects. A warm listing then costs what changed: with inotify, nothing for an
unchanged log; with polling, whose events come up to a second late, one `stat` per log.
Claude Code and Codex roots are remembered the same way, as the scan their adapter made for
a workspace (or for every workspace): a marked file is stat-ed again, and a mark on a folder
the scan looked at, or on the root's list of folders, has the scan redone. On top of the scans,
each query's last answer (`Answer`) is kept whole: while no mark came since it was computed
(and, polling, no file it looked at has another `stat`), the next listing is that answer again.
What is kept is bounded by what is on disk and by the queries: a project folder that does not
exist is scanned but not kept, a Codex root (whose scan is the same for every workspace) keeps
one scan, and a Claude Code root those of its `MAX_SCANS` last workspaces. Where no mark can be
trusted to have come, what marks would have corrected is dropped: a root's scans when it went
unwatched for a while (`forget_roots`), everything when the watcher lost events (`reset`).
The turns of the last few live Claude Code files asked for are kept too (`LiveTurns`), each
for the revision it was read at and dropped at a mark on its file.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..memory.stamps import RACY_NS, Stamp, stamp
from .claude_processes import NOTHING, Running
from .continuations import Continuations
from .index import LogRow, SessionIndex

if TYPE_CHECKING:
    from ..protocol.sessions import ListError, Listing, SessionMeta, TurnSummary
    from .catalog import Entry
from .paths import LOG_FILE_NAMES, Encoding
from .reader import stat_revision
from .roots import LogFile, Rejected, project_logs, single_encoding, unreadable_folder
from .sources import FileScan

_LOG_NAMES = frozenset(LOG_FILE_NAMES.values())
MAX_ANSWERS = 32  # queries (the whole listing, workspaces) whose last answer is kept
MAX_SCANS = MAX_ANSWERS  # workspaces (and the whole listing) whose scan a harness root keeps
MARK_HISTORY = 64  # batches of marks remembered, to tell a kept answer what changed since
MAX_LIVE_TURNS = 4  # live Claude Code files whose turns are kept: those an editor shows
# A root opened only to look up names in it (Linux's O_PATH): no read permission needed, as for a
# path's `stat`. Without O_PATH an open would need it and cost a real open: paths are used.
_FOLDER_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC if hasattr(os, "O_PATH") else None
# An answer's `files` by the root each lies under (None: by its path): each one's name from
# there and its place in `files`. Positions, not `stat`s: a patched answer keeps its paths in
# their places, so it keeps the probe too.
Probe = list[tuple[str | None, list[tuple[str, int]]]]


def file_stamp(path: str) -> Stamp | None:
    """The stamp of the file a read of `path` reads: through a link, as remem's metadata and
    DSH's archive list are read (a dotfiles link to the list is honoured), so editing the
    target or pointing the link elsewhere moves it. None if there is none."""
    try:
        return stamp(os.stat(path))
    except OSError:
        return None


@dataclass(frozen=True)
class Stamps:
    """The stamps of files read from `taken_ns` on (taken before reading them)."""

    stamps: tuple[Stamp | None, ...]
    taken_ns: int

    def still(self, now: Stamps) -> bool:
        """Whether stamps taken later (`now`) prove the files unchanged since these were taken:
        the same, and each of a change (its ctime) older than `RACY_NS` before they were taken.
        A write after the read lands in a later timestamp tick than such a change, so it moves
        the stamp; a change within the window may share a tick with a write of the same size
        after the read, which leaves the stamp as it was (a racily clean file): its stamp proves
        nothing, whatever the clock says now. The mtime says nothing of when the file changed:
        any program sets it (a copy that kept it, another machine's clock), even in the future."""
        horizon = self.taken_ns - RACY_NS
        return now.stamps == self.stamps and all(s is None or s[3] < horizon for s in self.stamps)


def file_stamps(paths: Iterable[str]) -> Stamps:
    """The stamps of the files at `paths`, with when they were taken (`Stamps`)."""
    taken_ns = time.time_ns()
    return Stamps(tuple(file_stamp(p) for p in paths), taken_ns)


NO_STAMPS = Stamps((), 0)  # of an answer no memo keeps: it is never compared


@dataclass
class Answer:
    """A listing's entries and errors as computed, with what they were computed from.

    `files` are every file it looked at, with the `stat` it used (polling takes them again);
    `stamps` are those of the files outside the roots it read (remem's metadata, DSH's archive
    list, published forks), taken before it read them;
    `live_until` is when the clock alone would change a session's liveness; `volatile` are
    the entries whose liveness hangs on a lock, looked at again each time, and `running` what
    Claude Code's homes said of their processes, read again each time. `shown` is what it
    read of those files (remem's titles and archive states, DSH's archive list): while their
    stamps hold, a patch reuses it instead of parsing them again.
    """

    entries: list[Entry]
    errors: list[ListError]
    files: list[LogFile]
    stamps: Stamps
    live_until: int
    volatile: list[tuple[Entry, os.stat_result]]
    shown: tuple[dict[str, SessionMeta], frozenset[str]]
    generation: int = -1
    listing: Listing | None = None  # built from the entries when first asked for
    # By path: its place in `files` and in `entries` (None if it lists as an error); a patched
    # answer keeps every place, and so this map.
    places: dict[str, tuple[int, int | None]] | None = None
    # Claude Code: leafUuid -> the summary (from any listed file) that titles the session whose
    # conversation ends there; a patch that changes no file's summaries titles by it again.
    summaries: dict[str, str] | None = None
    # The Claude Code sessions live processes ran when it was computed (decision 0376): it
    # holds while they run the same ones.
    running: Running = NOTHING
    # The roots no folder stood at when it was computed: it holds while none stands there (the
    # watcher looks for a missing root only every few seconds; a listing looks each time).
    absent: frozenset[str] = frozenset()

    probe: Probe | None = None  # `files` by root, made when first asked for (`moved`)

    def place(self, path: str) -> tuple[int, int | None] | None:
        if self.places is None:
            slots = {e.row.path: i for i, e in enumerate(self.entries)}
            self.places = {f.path: (i, slots.get(f.path)) for i, f in enumerate(self.files)}
        return self.places.get(path)

    def moved(self, roots: Iterable[str]) -> list[str] | None:
        """The files whose `stat` moved since (its revision's fields); None if one is gone.
        `roots`: the folders its files were found under (a file under none is stat-ed by path)."""
        if self.probe is None:
            self.probe = _probe(self.files, roots)
        return _moved(self.probe, self.files)


@dataclass
class _Project:
    """One project folder as last scanned: its logs by encoding (by path) and what it refuses."""

    found: dict[Encoding, dict[str, LogFile]]
    rejected: list[Rejected]

    def restat(self, path: str) -> bool:
        """Take a new `stat` of one remembered log; False if it is not (or no longer) one."""
        encoding = next((e for e, files in self.found.items() if path in files), None)
        st = regular_stat(path)
        if encoding is None or st is None:
            return False
        self.found[encoding][path] = LogFile(path, st)
        return True


@dataclass
class _HarnessScan:
    """One harness adapter's scan of a root (for one workspace, or all): files by path."""

    root: str
    files: dict[str, LogFile]
    rejected: list[Rejected]
    scanned: tuple[str, ...]

    @classmethod
    def of(cls, root: Path, scan: FileScan) -> _HarnessScan:
        return cls(str(root), {f.path: f for f in scan.files}, scan.rejected, scan.scanned)

    def as_scan(self) -> FileScan:
        return FileScan(list(self.files.values()), self.rejected, self.scanned)

    def restat(self, path: str) -> bool:
        """Take a new `stat` of one remembered file; False if it is not (or no longer) one."""
        st = regular_stat(path) if path in self.files else None
        if st is None:
            return False
        self.files[path] = LogFile(path, st)
        return True

    def still_current(self, path: str) -> bool:
        """Whether the scan survives a change at `path`, a path under its root."""
        if path in self.files:
            return self.restat(path)
        if path == self.root or os.path.dirname(path) == self.root:
            return False  # the root's folders came, went or changed
        return not any(path.startswith(prefix) or f"{path}{os.sep}" == prefix for prefix in self.scanned)


class LiveTurns:
    """The turns of the last `capacity` live Claude Code files asked for, each at the revision
    it was read at. The index keeps only a quiet file's, whose last turn ends further on
    (decision 0535); a live file read again at each ask costs seconds when it is large, and an
    idle terminal keeps it live for hours."""

    def __init__(self, capacity: int = MAX_LIVE_TURNS) -> None:
        self.capacity = capacity
        self._kept: OrderedDict[str, tuple[str, list[TurnSummary]]] = OrderedDict()
        self._lock = threading.Lock()  # a kept catalog may be asked from more than one thread

    def get(self, path: str, revision: str) -> list[TurnSummary] | None:
        with self._lock:
            kept = self._kept.get(path)
            if kept is None or kept[0] != revision:
                return None
            self._kept.move_to_end(path)
            return kept[1]

    def keep(self, path: str, revision: str, turns: list[TurnSummary]) -> None:
        with self._lock:
            self._kept[path] = (revision, turns)
            self._kept.move_to_end(path)
            while len(self._kept) > self.capacity:
                self._kept.popitem(last=False)

    def forget(self, paths: Iterable[str]) -> None:
        with self._lock:
            for path in paths:
                self._kept.pop(path, None)

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()


@dataclass
class _Root:
    projects: dict[str, _Project | None]  # None: to be scanned again
    names_current: bool = True  # the list of project folders is still the one scanned
    refused: list[Rejected] = field(default_factory=list)  # the root itself, when unreadable


class ListingMemo:
    """Folder scans and index rows of the roots, kept current by the watcher's marks.

    `trust_events` says whether the watcher reports changes as they happen (inotify); when it
    does not (polling), every remembered log is stat-ed again at each listing. One listing at a
    time uses the memo (`lock`); marks come from the event loop and never wait for a listing.
    """

    def __init__(self, trust_events: Callable[[], bool]) -> None:
        self.lock = threading.Lock()
        self._trust_events = trust_events
        self._marks_lock = threading.Lock()
        self._marks: set[str] = set()
        self._forgotten: set[str] = set()  # roots whose scans go at the next listing
        self._lost = False  # events were lost: every scan and answer goes at the next listing
        self._roots: dict[str, _Root] = {}
        # By (root, workspace), the least recently used first (a Codex root's under None alone).
        self._harness: OrderedDict[tuple[str, str | None], _HarnessScan] = OrderedDict()
        self._rows: dict[str, LogRow] | None = None
        self._entries: dict[str, tuple[tuple[object, ...], Entry]] = {}
        self._revisions: dict[str, tuple[os.stat_result, str]] = {}  # by log path: bounded
        self._answers: OrderedDict[Hashable, Answer] = OrderedDict()
        self._stirred: tuple[Answer, list[str] | None] | None = None  # `answer`'s last stat pass
        self._generation = 0  # how many batches of marks were applied
        self._history: deque[tuple[int, set[str]]] = deque(maxlen=MARK_HISTORY)
        self.continuations = Continuations()  # of the logs listed last: a grown one continues
        self.live_turns = LiveTurns()

    def changed(self, paths: Iterable[str]) -> None:
        """Paths the watcher saw change (any thread): applied at the start of the next listing."""
        with self._marks_lock:
            self._marks.update(paths)

    def forget_roots(self, roots: Iterable[str]) -> None:
        """Roots whose changes went unwatched for a while (any thread): one no longer watched,
        or watched anew (added back, come back, appeared). Their scans go at the next listing,
        and the roots are marked, so no answer kept from before is used again."""
        roots = list(roots)
        with self._marks_lock:
            self._forgotten.update(roots)
            self._marks.update(roots)

    def reset(self) -> None:
        """The watcher lost events (the kernel's queue overflowed; any thread): no mark can be
        trusted to have come, so every scan and answer goes at the next listing."""
        with self._marks_lock:
            self._lost = True

    def settle(self) -> int:
        """Apply the marks that came; the generation an answer computed from now on is of. A
        listing settles before it asks what `moved`: a mark coming after is for the next one."""
        self._apply_marks()
        return self._generation

    def answer(self, query: Hashable) -> Answer | None:
        """The answer kept for `query`, if no mark came since it was computed and (polling)
        every file it looked at still has the `stat` it used."""
        known = self._answers.get(query)
        self._stirred = None
        with self._marks_lock:
            marked = bool(self._marks) or self._lost
        if known is None or marked or known.generation != self._generation:
            return None
        if not self._trust_events():
            # For `moved`, should this listing go on there.
            self._stirred = (known, known.moved(self._scanned_roots()))
            if self._stirred[1] != []:
                return None
        self._answers.move_to_end(query)
        return known

    def moved(self, query: Hashable) -> tuple[Answer, set[str]] | None:
        """The answer kept for `query` and the files it looked at that changed since, when
        those are all that did: every mark applied since (`settle` first) is on one of its files
        and (polling) every one of them is still there. None when anything else may have
        changed. Marks not applied yet are left to the next listing, which `answer` sends here
        again: an answer kept at a generation is patched with exactly that generation's marks."""
        known = self._answers.get(query)
        if known is None:
            return None
        applied = [marks for generation, marks in self._history if generation > known.generation]
        if len(applied) != self._generation - known.generation:
            return None  # the history no longer reaches back to it
        paths: set[str] = set().union(*applied)
        if not self._trust_events():
            # The pass `answer` just made, when it made one of this answer: each `stat` once per
            # listing. A log changed since is seen by the next listing, its `stat` kept as it was.
            taken, self._stirred = self._stirred, None
            if taken is None or taken[0] is not known:
                taken = (known, known.moved(self._scanned_roots()))
            if taken[1] is None:
                return None
            paths.update(taken[1])
        if any(known.place(path) is None for path in paths):
            return None
        return known, paths

    def _scanned_roots(self) -> set[str]:
        """The roots the memo keeps scans of: those an answer's files were found under."""
        return {*self._roots, *(root for root, _ in self._harness)}

    def keep(self, query: Hashable, answer: Answer, generation: int) -> None:
        answer.generation = generation
        self._answers[query] = answer
        self._answers.move_to_end(query)
        if len(self._answers) > MAX_ANSWERS:
            self._answers.popitem(last=False)

    def rows(self, index: SessionIndex) -> dict[str, LogRow]:
        """The index's rows, read from the file once."""
        if self._rows is None:
            self._rows = index.rows()
        return self._rows

    def remember(self, rows: Iterable[LogRow]) -> None:
        if self._rows is not None:
            self._rows.update((row.path, row) for row in rows)

    def forget(self, paths: Iterable[str]) -> None:
        paths = list(paths)
        self.live_turns.forget(paths)
        for path in paths:
            self._entries.pop(path, None)
            self._revisions.pop(path, None)
            if self._rows is not None:
                self._rows.pop(path, None)

    def revision(self, path: str, st: os.stat_result) -> str:
        """`stat_revision(st)`, remembered for the `stat` object the scan of `path` keeps."""
        known = self._revisions.get(path)
        if known is not None and known[0] is st:
            return known[1]
        revision = stat_revision(st)
        self._revisions[path] = (st, revision)
        return revision

    def entry(
        self,
        row: LogRow,
        live: bool,
        title: str | None,
        archived: bool,
        build: Callable[[LogRow, bool, str | None, bool], Entry],
    ) -> Entry:
        """The listed entry of `row`, built again only when something it shows changed."""
        key = (row, live, title, archived)  # the row itself: a changed log is a new row object
        known = self._entries.get(row.path)
        if known is not None and known[0][0] is row and known[0][1:] == key[1:]:
            return known[1]
        entry = build(row, live, title, archived)
        self._entries[row.path] = (key, entry)
        return entry

    def logs(
        self, root: Path, project_dir: str | None, passed: str | None = None
    ) -> tuple[list[LogFile], list[Rejected]]:
        """`list_logs(root, project_dir, passed)`, from the remembered scans where nothing changed."""
        self._apply_marks()
        remembered = self._roots.get(str(root))
        if remembered is None or not remembered.names_current:
            remembered = self._rescan_names(root, remembered)
        names = [n for n in remembered.projects if n != passed] if project_dir is None else [project_dir]
        # A project folder not (yet) in the list is scanned as it is, and not kept: it may not
        # exist at all, and a workspace without sessions here must cost no memory.
        found: dict[Encoding, list[LogFile]] = {}
        rejected: list[Rejected] = list(remembered.refused) if project_dir is None else []
        for name in names:
            listed = name in remembered.projects
            project = remembered.projects.get(name)
            if project is None or (
                not self._trust_events() and not all(map(project.restat, _paths(project)))
            ):
                project = _scan(root, name)
                if listed:
                    remembered.projects[name] = project
            for encoding, files in project.found.items():
                found.setdefault(encoding, []).extend(files.values())
            rejected.extend(project.rejected)
        chosen = single_encoding(root, found)
        return (found[chosen] if chosen else []), rejected

    def harness_scan(self, root: Path, cwd: str | None, scan: Callable[[], FileScan]) -> FileScan:
        """A Claude Code or Codex root's `scan()` for `cwd` (None: the whole root), remembered
        until a mark under it; a root keeps the scans of its `MAX_SCANS` last workspaces."""
        self._apply_marks()
        key = (str(root), cwd)
        known = self._harness.get(key)
        if known is not None and not self._trust_events() and not all(map(known.restat, list(known.files))):
            known = None
        if known is None:
            known = self._harness[key] = _HarnessScan.of(root, scan())
            same_root = [k for k in self._harness if k[0] == key[0]]
            if len(same_root) > MAX_SCANS:
                del self._harness[same_root[0]]  # the least recently used
        self._harness.move_to_end(key)
        return known.as_scan()

    def _rescan_names(self, root: Path, earlier: _Root | None) -> _Root:
        """The root's project folders; scans of those still there are kept, new ones are scanned
        when a listing needs them (a workspace's listing needs only its own)."""
        kept = earlier.projects if earlier is not None else {}
        try:
            names = sorted(os.listdir(root)) if root.is_dir() else []
        except OSError as exc:  # unreadable: said as a scan says it, and looked at again next time
            refused = [Rejected(root, unreadable_folder(exc))]
            fresh = _Root({}, names_current=False, refused=refused)
        else:
            fresh = _Root({name: kept.get(name) for name in names})
        self._roots[str(root)] = fresh
        return fresh

    def _apply_marks(self) -> None:
        with self._marks_lock:
            marks, self._marks = self._marks, set()
            forgotten, self._forgotten = self._forgotten, set()
            lost, self._lost = self._lost, False
        if lost:
            # No history entry: no answer from before (one a listing under way keeps too) can
            # be patched across it.
            self._generation += 1
            self._roots.clear()
            self._harness.clear()
            self._answers.clear()
            self.live_turns.clear()
        for root in forgotten:
            self._roots.pop(root, None)
            for key in [k for k in self._harness if k[0] == root]:
                del self._harness[key]
        if marks:
            self._generation += 1
            self._history.append((self._generation, marks))
        for path in marks:
            self._mark(path)

    def _mark(self, path: str) -> None:
        self.live_turns.forget([path])  # its turns of an earlier revision would stay unused
        for key, scan in list(self._harness.items()):
            under = path.startswith(f"{scan.root}{os.sep}") or path == scan.root
            if under and not scan.still_current(path):
                del self._harness[key]
        for root_path, remembered in self._roots.items():
            if path != root_path and not path.startswith(f"{root_path}{os.sep}"):
                continue
            parts = path[len(root_path) + 1 :].split(os.sep) if path != root_path else []
            if len(parts) <= 1:  # the root, or a project folder itself: the list may differ
                remembered.names_current = False
                if parts:
                    remembered.projects[parts[0]] = None
            elif len(parts) == 2:  # a session folder came, went or changed: rescan its project
                remembered.projects[parts[0]] = None
            elif len(parts) == 3 and parts[2] in _LOG_NAMES:
                project = remembered.projects.get(parts[0])
                if project is not None and not project.restat(path):  # a new (or vanished) log
                    remembered.projects[parts[0]] = None
            return


def _scan(root: Path, name: str) -> _Project:
    found, rejected = project_logs(root, name)
    return _Project({e: {log.path: log for log in files} for e, files in found.items()}, rejected)


def _paths(project: _Project) -> list[str]:
    return [path for files in project.found.values() for path in files]


def _probe(files: list[LogFile], roots: Iterable[str]) -> Probe:
    """`files` by the root each lies under (the innermost, as roots may nest), so that its
    `stat` is taken relative to that root's descriptor and the kernel walks the two to four
    names below the root (project, session, Codex's day folders), not the whole path. One
    descriptor per root: a folder per log's parent would cost an open and a close for each
    Claude Code subagent folder or DSH project of one session, more than the walk it saves."""
    inner_first = sorted(roots, key=len, reverse=True) if _FOLDER_FLAGS is not None else []
    prefixes = {f"{root}{os.sep}": root for root in inner_first}
    by_root: dict[str | None, list[tuple[str, int]]] = {}
    for place, (path, _) in enumerate(files):
        prefix = next((p for p in prefixes if path.startswith(p)), None)
        if prefix is None:
            by_root.setdefault(None, []).append((path, place))
        else:
            by_root.setdefault(prefixes[prefix], []).append((path[len(prefix) :], place))
    return list(by_root.items())


def _moved(probe: Probe, files: list[LogFile]) -> list[str] | None:
    """The files whose `stat` moved (its revision's fields); None if one is gone. One `stat`
    each is the polling floor, so the comparison is written out rather than a revision built,
    and each is taken from its root's descriptor (`_probe`), opened now: a folder moved or
    replaced is the one there now, as for a path."""
    lstat = os.lstat
    moved: list[str] = []
    for root, logs in probe:
        fd = _open_root(root)
        try:
            for name, place in logs:
                path, old = files[place]
                st = lstat(path) if fd is None else lstat(name, dir_fd=fd)
                if (
                    st.st_mtime_ns != old.st_mtime_ns
                    or st.st_size != old.st_size
                    or st.st_ino != old.st_ino
                    or st.st_ctime_ns != old.st_ctime_ns
                    or st.st_dev != old.st_dev
                ):
                    moved.append(path)
        except OSError:
            return None
        finally:
            if fd is not None:
                os.close(fd)
    return moved


def _open_root(root: str | None) -> int | None:
    """A descriptor to look names up in `root`, or None: its files are then stat-ed by path,
    which says whether they are still there (the root gone, or its open refused)."""
    if root is None or _FOLDER_FLAGS is None:
        return None
    try:
        return os.open(root, _FOLDER_FLAGS)
    except OSError:
        return None


def regular_stat(path: str) -> os.stat_result | None:
    """The log's `stat` if it is still a regular file (never through a link), else None."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return st if stat.S_ISREG(st.st_mode) else None
