"""Read one DSH session log (raw or zstd) into a validated, in-memory `SessionLog`.

Reading never writes: torn tails and crash closers are computed in memory exactly as DSH's
`inspect()` would, and the file is left byte-for-byte alone. Every defect surfaces as a
`SessionLogError` naming the file and the reason.

A log only ever grows by appends, so `read_appended` continues an earlier read from its
`ResumePoint` and `DigestState`, reading and validating only the new bytes; whatever cannot be
a pure continuation raises `NotAppendOnly` and must be read whole again.

A skimming read can also `fold` its events as they are checked instead of returning them, so a
listing's projection of a log holds one batch of events at a time, however many it has.
"""

from __future__ import annotations

import gc
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from ..limits import SESSION_LOG_MAX_BYTES, size_text
from ..safe_open import open_regular, reason
from ..validation import problems as validation_problems
from .checks import EventCheckError, check_event
from .decode import parse_json
from .digest import DigestState, LogDigest
from .envelopes import Note
from .errors import SessionLogError
from .models import (
    RETIRED_HEADER_KEYS,
    SESSION_FORMAT_VERSION,
    SessionEvent,
    SessionHeader,
    Skimmed,
    parse_json_int,
)
from .paths import Encoding, encode_segment, encoding_of_file_name, project_key
from .repair import interrupted_turn_closers
from .scanner import CorruptLog, Record, ScanResult, Sink, scan_records
from .upgrades import UPGRADED_TYPES, LegacyUpgrader, NeedsHistory
from .vocabulary import KNOWN_EVENT_TYPES
from .zstd_frames import (
    FrameError,
    FrameSpan,
    FrameSplit,
    TooLarge,
    decode_frame,
    decode_torn_frame,
    split_frames,
    starts_frame,
)

READ_ATTEMPTS = 5
Keep = frozenset[str] | None  # skim, keeping the payloads of these types (`scan_records`)
Event = SessionEvent | Skimmed
# Takes checked events in seq order, batch by batch (a skimming read's: see `skim_session`).
Fold = Callable[[list[Event]], object]
_WINDOWS_ABSOLUTE = re.compile(r"\A([A-Za-z]:[\\/]|\\\\)")
_TURN_BOUNDARIES = frozenset({"turn/start", "turn/end"})


@dataclass(frozen=True)
class ResumePoint:
    """Where the durable, frame-aligned part of the log ends; later appends start here."""

    file_offset: int
    frame_count: int  # complete zstd frames before `file_offset` (0 for raw logs)
    event_count: int
    logical_offset: int  # plaintext bytes before `file_offset`


@dataclass(frozen=True)
class TornTail:
    """Bytes past the committed prefix that a crash (or damage) left behind."""

    file_offset: int
    file_bytes: int
    reason: str
    recovered_events: int  # good events salvaged from a torn zstd frame


@dataclass(frozen=True)
class SessionLog:
    """A log as DSH would load it: header, committed events, in-memory crash closers."""

    path: Path
    encoding: Encoding
    header: SessionHeader
    events: tuple[SessionEvent, ...]
    closers: tuple[SessionEvent, ...]
    torn: TornTail | None
    resume: ResumePoint
    logical_length: int
    digest: str  # `LogDigest` hex of the committed prefix's logical bytes, header line included
    digest_state: DigestState  # the digest at `resume`, to continue with `read_appended`
    revision: str
    unknown_types: frozenset[str]

    @property
    def balanced_events(self) -> tuple[SessionEvent, ...]:
        """The events plus synthetic closers: what a fork of a crashed session inherits."""
        return self.events + self.closers


@dataclass(frozen=True)
class Appended:
    """What a log gained since an earlier read's resume point.

    `digest` covers the whole committed prefix, exactly like a fresh `SessionLog.digest`, when
    the earlier read's digest state was given (None otherwise).
    `closers` are exact whenever the new events contain a turn/start or turn/end (the turn
    state resets there); otherwise they would need events from before the resume point and
    are `()`, so a caller that needs the balanced view of such a log reads it whole. A
    skimming read (`keep`) has `Skimmed` events among them and never computes closers.
    """

    events: tuple[Event, ...]  # new committed events, seqs continuing from resume.event_count
    closers: tuple[SessionEvent, ...]
    torn: TornTail | None
    resume: ResumePoint
    digest_state: DigestState | None  # None when the earlier read had none to continue
    digest: str | None
    revision: str


class LogNotReached(SessionLogError):
    """The log could not be read for where it is, not for what it holds: an `OSError` (the file
    or a folder on its way gone, moved, swapped for a link or another file, unreadable, an I/O
    failure). A fact of the moment no revision of the log holds: a listing reports it and never
    stores it as the log's row (decision 0394)."""


class NotAppendOnly(SessionLogError):
    """The file is not a pure continuation of the earlier read: the caller must read it whole."""


@dataclass(frozen=True)
class _Scan:
    """How records are scanned: skimmed (`keep`), and handed to `sink` as they come, if given;
    `note` is told of the current tool/results a skimming scan proves."""

    keep: Keep
    note: Note
    sink: Sink | None = None

    def scan(self, buf: bytes, start: int, first_seq: int, first_line: int, strict: bool) -> ScanResult:
        """`scan_records`; with a sink, the records it left are handed over too."""
        scan = scan_records(
            buf, start, first_seq, first_line, strict=strict, keep=self.keep, sink=self.sink, note=self.note
        )
        if self.sink is not None and scan.records:
            self.sink(scan.records)
            return ScanResult([], scan.count, scan.end, scan.stop)
        return scan


@dataclass
class _Tail:
    """What the bytes after one resume point hold."""

    records: list[Record]  # as `ScanResult.records` (none when they went to a sink)
    resume: ResumePoint
    torn: TornTail | None
    recovered: bytes  # logical bytes of the records salvaged from a torn zstd frame


def stat_revision(st: os.stat_result) -> str:
    """DSH's opaque revision of a log: `dev:ino:size:mtimeNs:ctimeNs`."""
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def file_revision(path: Path) -> str:
    return stat_revision(os.stat(path))


def file_identity(revision: str) -> tuple[int, int]:
    """The file a `stat_revision` is of: its device and inode (`(-1, -1)`, no file's, when the
    revision is not one)."""
    dev, _, rest = revision.partition(":")
    ino = rest.partition(":")[0]
    return (int(dev), int(ino)) if dev.isdigit() and ino.isdigit() else (-1, -1)


def _split_header(buf: bytes) -> tuple[bytes, int]:
    nl = buf.find(b"\n")
    if nl < 0:
        raise CorruptLog("header line is incomplete (no newline): the log was never fully created")
    return buf[:nl], nl + 1


def _torn(offset: int, total: int, reason: str | None, recovered: int) -> TornTail | None:
    if offset >= total:
        return None
    return TornTail(offset, total - offset, reason or "trailing bytes", recovered)


def _raw_tail(
    data: bytes, pos: int, base: ResumePoint, digest: LogDigest, first_line: int, how: _Scan
) -> _Tail:
    """The lines of `data[pos:]`, where `data[pos]` sits at `base.file_offset` in the file."""
    origin = base.file_offset - pos
    scan = how.scan(data, pos, base.event_count, first_line, False)
    digest.update(memoryview(data)[pos : scan.end])
    end = origin + scan.end
    resume = ResumePoint(end, 0, base.event_count + scan.count, end)
    return _Tail(scan.records, resume, _torn(end, origin + len(data), scan.stop, 0), b"")


def _split(data: bytes) -> FrameSplit:
    try:
        return split_frames(data)
    except FrameError as exc:
        raise CorruptLog(str(exc)) from None


_OVER_CAP = (
    f"its cap: remem reads session logs of up to {size_text(SESSION_LOG_MAX_BYTES)} of plaintext "
    "(SESSION_LOG_MAX_BYTES)"
)


def _frame_plain(data: bytes, span: FrameSpan, index: int, origin: int, before: int) -> bytes:
    """Frame `index`'s plaintext, `before` plaintext bytes of the log preceding it."""
    start, end = origin + span.start, origin + span.end
    try:
        return decode_frame(memoryview(data)[span.start : span.end], SESSION_LOG_MAX_BYTES - before)
    except FrameError as exc:
        raise CorruptLog(f"frame {index} (bytes {start}-{end}) is damaged: {exc}") from None
    except TooLarge:
        raise CorruptLog(f"frame {index} (bytes {start}-{end}) takes the log past {_OVER_CAP}") from None


def _zstd_tail(
    data: bytes,
    origin: int,
    frames: FrameSplit,
    base: ResumePoint,
    digest: LogDigest,
    first_line: int,
    how: _Scan,
) -> _Tail:
    """`frames` of `data` (at file offset `origin`), where the first one starts at `base`."""
    spans, torn_start = frames.frames, frames.torn_start
    records: list[Record] = []
    length, line_no, count = 0, first_line, 0
    for index, span in enumerate(spans, start=base.frame_count):
        plain = _frame_plain(data, span, index, origin, base.logical_offset + length)
        scan = how.scan(plain, 0, base.event_count + count, line_no, True)
        records.extend(scan.records)
        count += scan.count
        line_no += plain.count(b"\n")
        digest.update(plain)
        length += len(plain)
    end = origin + spans[-1].end if spans else base.file_offset
    resume = ResumePoint(
        end, base.frame_count + len(spans), base.event_count + count, base.logical_offset + length
    )
    if torn_start is None:
        return _Tail(records, resume, None, b"")
    try:
        left = SESSION_LOG_MAX_BYTES - resume.logical_offset
        plain = decode_torn_frame(memoryview(data)[torn_start:], left)
    except TooLarge:
        raise CorruptLog(f"the torn last frame takes the log past {_OVER_CAP}") from None
    scan = how.scan(plain, 0, resume.event_count, line_no, False)
    records.extend(scan.records)
    reason = f"last frame is incomplete (a crashed append); {scan.count} events recovered from it"
    torn = _torn(origin + torn_start, origin + len(data), reason, scan.count)
    return _Tail(records, resume, torn, plain[: scan.end])


Begin = Callable[[bytes], _Scan]  # takes the header line, before any event is scanned


def _read_raw(data: bytes, digest: LogDigest, begin: Begin) -> _Tail:
    header_line, body = _split_header(data)
    how = begin(header_line)
    digest.update(memoryview(data)[:body])
    return _raw_tail(data, body, ResumePoint(body, 0, 0, body), digest, 2, how)


def _read_zstd(data: bytes, digest: LogDigest, begin: Begin) -> _Tail:
    split = _split(data)
    if not split.frames:
        raise CorruptLog("the header frame is incomplete: the log was never fully created")
    head = split.frames[0]
    plain = _frame_plain(data, head, 0, 0, 0)
    header_line, body = _split_header(plain)
    how = begin(header_line)
    head_scan = how.scan(plain, body, 0, 2, True)  # DSH writes none
    digest.update(plain)
    base = ResumePoint(head.end, 1, head_scan.count, len(plain))
    rest = FrameSplit(split.frames[1:], split.torn_start)
    tail = _zstd_tail(data, 0, rest, base, digest, plain.count(b"\n") + 1, how)
    tail.records[:0] = head_scan.records
    return tail


def _parse_header(line: bytes) -> SessionHeader:
    try:
        record = parse_json(line, parse_int=parse_json_int)
    except ValueError as exc:
        raise CorruptLog(f"header line is not valid JSON ({exc})") from None
    if not isinstance(record, dict):
        raise CorruptLog("header line is not a JSON object")
    version = record.get("version")
    if isinstance(version, bool) or not isinstance(version, (int, float)):
        raise CorruptLog("first line is not a session header (no numeric version)")
    if version != SESSION_FORMAT_VERSION:
        age = "newer" if version > SESSION_FORMAT_VERSION else "older"
        raise CorruptLog(
            f"log format version {version} was written by a {age} harness; remem reads version 0"
        )
    if record.get("type") != "session" or "delegationDepth" not in record:
        raise CorruptLog("first line is not a session header (type 'session' with delegationDepth)")
    retired = [k for k in RETIRED_HEADER_KEYS if k in record]
    if retired:
        raise CorruptLog(f"header carries retired keys {retired}; DSH refuses such a header")
    try:
        return SessionHeader.model_validate({**record, "version": 0})
    except ValidationError as exc:
        problems = validation_problems(exc)
        raise CorruptLog(f"invalid session header ({problems})") from None


def _check_identity(path: Path, header: SessionHeader, encoding: Encoding) -> None:
    """The header must re-derive the path the log was found at (DSH identity binding)."""
    if header.cwd is not None and not (header.cwd.startswith("/") or _WINDOWS_ABSOLUTE.match(header.cwd)):
        raise CorruptLog(f"header cwd {header.cwd!r} is not absolute")
    expected_rel = (project_key(header.cwd), encode_segment(header.id), encoding.file_name)
    actual_rel = (path.parent.parent.name, path.parent.name, path.name)
    if expected_rel == actual_rel:
        return
    expected = path.parent.parent.parent.joinpath(*expected_rel)
    if expected.exists() and os.path.samefile(expected, path):
        return
    raise CorruptLog(
        f"header id {header.id!r} and cwd {header.cwd!r} belong at {'/'.join(expected_rel)}, "
        f"not {'/'.join(actual_rel)}; DSH refuses a log copied or renamed into another directory"
    )


class _Loader:
    """Upgrades and checks scanned records in seq order, batch by batch, for one session.

    The scanner's events come checked already: they are `assistant/chunk`s from packed rows
    and bare records of `BARE_TYPES` (skimmed or not), which no upgrade shim touches (nor
    learns from), so they skip the upgrader too. Each record is handed over to its event
    (`adopt`): the scan's records are not used again. `kinds` collects the types of those
    that were still records.
    """

    def __init__(self, session_id: str, first_seq: int, fold: Fold) -> None:
        upgrader = LegacyUpgrader(session_id, first_seq=first_seq)
        self._upgrade, self.note = upgrader.upgrade, upgrader.note_result
        self._fold = fold
        self.kinds: set[str] = set()

    def load(self, records: list[Record]) -> None:
        upgrade = self._upgrade
        events: list[Event] = []
        append, add_kind = events.append, self.kinds.add
        try:
            for record in records:
                if record.__class__ is SessionEvent or record.__class__ is Skimmed:
                    append(record)
                    continue
                kind = record.get("type")  # type: ignore[union-attr]
                if kind.__class__ is not str or kind in UPGRADED_TYPES:
                    record = upgrade(record)  # type: ignore[arg-type]
                    kind = record.get("type")
                append(check_event(record, adopt=True))  # type: ignore[arg-type]
                add_kind(kind)  # type: ignore[arg-type]  # check_event proved it a string
        except EventCheckError as exc:
            raise CorruptLog(str(exc)) from None
        self._fold(events)


def _scan_for(loader: _Loader, keep: Keep, streamed: bool) -> _Scan:
    """Scanning that hands records to `loader` as they come (`streamed`), or holds them all."""
    return _Scan(keep, loader.note, loader.load if streamed else None)


def _closers(events: list[SessionEvent]) -> tuple[SessionEvent, ...]:
    """Crash closers for the turn `events` leave open, or () when they hold no turn boundary.

    The repair state resets at every turn/start and turn/end, so only the events from the last
    boundary on matter; that keeps this cheap and lets `read_appended` use it on new events.
    """
    for index in range(len(events) - 1, -1, -1):
        if events[index].type in _TURN_BOUNDARIES:
            return tuple(interrupted_turn_closers(events[index:]))
    return ()


class _Unhashed(LogDigest):
    """The digest a listing's read does not take: only a review compares it, and it is taken
    then (`SessionCatalog.digest_of`, decision 0341)."""

    def update(self, data: bytes | memoryview) -> None:
        pass


def _digests(digest: LogDigest, recovered: bytes) -> tuple[DigestState | None, str | None]:
    """The state at the resume point, and the hex digest that also covers salvaged records."""
    if isinstance(digest, _Unhashed):
        return None, None
    state = digest.state
    digest.update(recovered)
    return state, digest.hexdigest()


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while logs are decoded (nested pauses are fine).

    A read allocates several containers per event and keeps all of them, so the collector
    would keep re-walking the growing heap (over half the read time) without finding garbage.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@contextmanager
def _session_errors(path: Path, context: str = "") -> Iterator[None]:
    """Turn what reading found wrong into the per-log errors callers handle."""
    try:
        yield
    except CorruptLog as exc:
        raise SessionLogError(path, f"{context}{exc}") from None
    except NeedsHistory as exc:
        raise NotAppendOnly(path, f"{exc}; read the log whole") from None
    except OSError as exc:
        raise LogNotReached(path, f"cannot read the log: {reason(exc, path)}") from None


def _read_stable(path: Path, start: int = 0) -> tuple[bytes, str]:
    """The file's bytes from `start` on and its revision, re-read while a writer changes it.
    The log is opened from its root without following a link (`open_log`)."""
    for _ in range(READ_ATTEMPTS):
        with os.fdopen(open_log(path), "rb") as file:
            st = os.fstat(file.fileno())
            before = stat_revision(st)
            if st.st_size > SESSION_LOG_MAX_BYTES:  # refused before a byte of it is held
                raise CorruptLog(f"the log file is {st.st_size} bytes, past {_OVER_CAP}")
            file.seek(start)
            data = file.read()
        if file_revision(path) == before:
            return data, before
    raise CorruptLog(f"log kept changing across {READ_ATTEMPTS} reads; retry when its writer is idle")


def open_log(path: Path) -> int:
    """A descriptor of the DSH log at `path`, opened from its root without following a link on
    the way (`safe_open.open_regular`): a log lies three folders below its root
    (`<root>/<project>/<session>/<log>`), so the project and session folders are opened from
    the root's descriptor, and one swapped for a link since the scan is refused, never followed."""
    return open_regular(path, root=path.parent.parent.parent)


def _log_encoding(path: Path) -> Encoding:
    encoding = encoding_of_file_name(path.name)
    if encoding is None:
        raise SessionLogError(path, "not a session log name (expected session.jsonl or session.jsonl.zstd)")
    return encoding


@dataclass(frozen=True)
class _Whole:
    encoding: Encoding
    header: SessionHeader
    tail: _Tail
    events: list[Event]
    kinds: set[str]
    revision: str
    digest_state: DigestState | None
    digest: str | None


def _read_whole(
    path: Path, expected_id: str | None, keep: Keep, fold: Fold | None = None, hashed: bool = True
) -> _Whole:
    """The log read whole; its events are returned, or handed to `fold` as they are checked.
    Its digest is taken when `hashed`."""
    encoding = _log_encoding(path)
    digest = LogDigest() if hashed else _Unhashed()
    events: list[Event] = []
    begun: list[tuple[SessionHeader, _Loader]] = []

    def begin(header_line: bytes) -> _Scan:
        header = _parse_header(header_line)
        if expected_id is not None and header.id != expected_id:
            raise CorruptLog(f"header id {header.id!r} is not the requested id {expected_id!r}")
        _check_identity(path, header, encoding)
        loader = _Loader(header.id, 0, events.extend if fold is None else fold)
        begun.append((header, loader))
        return _scan_for(loader, keep, fold is not None)

    with gc_paused(), _session_errors(path):
        data, revision = _read_stable(path)
        if not data:
            raise CorruptLog("log file is empty")
        tail = (_read_raw if encoding is Encoding.RAW else _read_zstd)(data, digest, begin)
        header, loader = begun[0]
        loader.load(tail.records)
    state, hexdigest = _digests(digest, tail.recovered)
    return _Whole(encoding, header, tail, events, loader.kinds, revision, state, hexdigest)


def read_session(path: Path, *, expected_id: str | None = None) -> SessionLog:
    """Read and validate the log at `path` (`session.jsonl` or `session.jsonl.zstd`)."""
    whole = _read_whole(path, expected_id, None)
    events: list[SessionEvent] = whole.events  # type: ignore[assignment]  # nothing was skimmed
    tail = whole.tail
    assert whole.digest is not None and whole.digest_state is not None  # it was hashed
    return SessionLog(
        path=path,
        encoding=whole.encoding,
        header=whole.header,
        events=tuple(events),
        closers=_closers(events),
        torn=tail.torn,
        resume=tail.resume,
        logical_length=tail.resume.logical_offset + len(tail.recovered),
        digest=whole.digest,
        digest_state=whole.digest_state,
        revision=whole.revision,
        # Events the scanner checked are all of known types (`BARE_TYPES`, `assistant/chunk`).
        unknown_types=frozenset(whole.kinds - KNOWN_EVENT_TYPES),
    )


@dataclass(frozen=True)
class Skim:
    """A log checked exactly as `read_session` checks it, with bare events `Skimmed`."""

    header: SessionHeader
    events: tuple[Event, ...]
    resume: ResumePoint
    digest: str | None  # None when not `hashed`
    digest_state: DigestState | None
    revision: str


def skim_session(path: Path, keep: frozenset[str], *, fold: Fold | None = None, hashed: bool = True) -> Skim:
    """`read_session(path)` for a listing: the same checks and errors, but the payloads of bare
    events are built only for the types in `keep` (the others are `Skimmed` with data None).

    With `fold`, the events are handed to it as they are checked and `Skim.events` is empty:
    only a batch is held at once, so `SESSION_EVENTS_MAX` bounds that batch, not the log. A
    fold is handed the events of the types in `keep` and the last event, in seq order, and may
    miss others (those the scanner proves without building: a projection reads none of them).
    A listing's read is not `hashed`: its digest and digest state are None.
    """
    whole = _read_whole(path, None, keep, fold, hashed)
    return Skim(
        whole.header, tuple(whole.events), whole.tail.resume, whole.digest, whole.digest_state, whole.revision
    )


def _appended_bytes(path: Path, data: bytes, encoding: Encoding) -> bytes:
    """The bytes after the resume point; `data` starts one byte before it."""
    if not data:
        raise NotAppendOnly(path, "the file is shorter than the resume point")
    appended = data[1:]
    if encoding is Encoding.RAW and data[:1] != b"\n":
        raise NotAppendOnly(path, "the byte before the resume point is not a newline")
    if encoding is Encoding.ZSTD and appended and not starts_frame(appended):
        raise NotAppendOnly(path, "the bytes at the resume point do not start a zstd frame")
    return appended


def _decode_appended(
    data: bytes, encoding: Encoding, resume: ResumePoint, digest: LogDigest, how: _Scan
) -> _Tail:
    # Line numbers in errors count from the resume point: earlier lines are not read.
    if encoding is Encoding.RAW:
        return _raw_tail(data, 0, resume, digest, 1, how)
    return _zstd_tail(data, resume.file_offset, _split(data), resume, digest, 1, how)


def read_appended(
    path: Path,
    header: SessionHeader,
    resume: ResumePoint,
    digest_state: DigestState | None,
    *,
    keep: Keep = None,
    fold: Fold | None = None,
) -> Appended:
    """Continue an earlier read of `path` (its `resume` and `digest_state`, None if it was not
    hashed: the new bytes are not either) over the new bytes.

    Validates and upgrades the new records exactly like `read_session` and never writes.
    Raises `NotAppendOnly` when the file is not a pure continuation or a legacy upgrade needs
    earlier records, `SessionLogError` for a defect in the new bytes. `keep` skims and `fold`
    takes the events as in `skim_session`; the closers are then not computed (`()`).
    """
    encoding = _log_encoding(path)
    if digest_state is not None and digest_state.length != resume.logical_offset:
        raise ValueError(
            f"digest state covers {digest_state.length} bytes, resume point {resume.logical_offset}"
        )
    digest = _Unhashed() if digest_state is None else LogDigest(digest_state)
    events: list[Event] = []
    loader = _Loader(header.id, resume.event_count, events.extend if fold is None else fold)
    with gc_paused(), _session_errors(path, f"in the bytes after offset {resume.file_offset}: "):
        data, revision = _read_stable(path, resume.file_offset - 1)
        appended = _appended_bytes(path, data, encoding)
        tail = _decode_appended(appended, encoding, resume, digest, _scan_for(loader, keep, fold is not None))
        loader.load(tail.records)
    state, hexdigest = _digests(digest, tail.recovered)
    closers = _closers(events) if keep is None and fold is None else ()  # type: ignore[arg-type]
    return Appended(tuple(events), closers, tail.torn, tail.resume, state, hexdigest, revision)
