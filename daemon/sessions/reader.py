"""Read one DSH session log (raw or zstd) into a validated, in-memory `SessionLog`.

Reading never writes: torn tails and crash closers are computed in memory exactly as DSH's
`inspect()` would, and the file is left byte-for-byte alone. Every defect surfaces as a
`SessionLogError` naming the file and the reason.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .checks import EventCheckError, check_event, is_unknown
from .errors import SessionLogError
from .models import RETIRED_HEADER_KEYS, SESSION_FORMAT_VERSION, SessionEvent, SessionHeader, parse_json_int
from .paths import Encoding, encode_segment, encoding_of_file_name, project_key
from .repair import interrupted_turn_closers
from .scanner import CorruptLog, parse_json, scan_records
from .upgrades import LegacyUpgrader
from .zstd_frames import FrameError, FrameSpan, decode_frame, decode_torn_frame, split_frames

READ_ATTEMPTS = 5
_WINDOWS_ABSOLUTE = re.compile(r"\A([A-Za-z]:[\\/]|\\\\)")


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
    digest: str  # sha256 hex of the committed prefix's logical (plaintext) bytes
    revision: str
    unknown_types: frozenset[str]

    @property
    def balanced_events(self) -> tuple[SessionEvent, ...]:
        """The events plus synthetic closers: what a fork of a crashed session inherits."""
        return self.events + self.closers


@dataclass
class _Decoded:
    header_line: bytes
    records: list[dict[str, Any]]
    torn: TornTail | None
    resume: ResumePoint
    digest: Any  # hashlib object over the committed logical bytes
    logical_length: int
    lines: int  # complete logical lines before the resume point


def file_revision(path: Path) -> str:
    """DSH's opaque revision: `dev:ino:size:mtimeNs:ctimeNs` of the log."""
    st = os.stat(path)
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def _split_header(buf: bytes) -> tuple[bytes, int]:
    nl = buf.find(b"\n")
    if nl < 0:
        raise CorruptLog("header line is incomplete (no newline): the log was never fully created")
    return buf[:nl], nl + 1


def _torn(offset: int, total: int, reason: str | None, recovered: int) -> TornTail | None:
    if offset >= total:
        return None
    return TornTail(offset, total - offset, reason or "trailing bytes", recovered)


def _decode_raw(data: bytes) -> _Decoded:
    if not data:
        raise CorruptLog("log file is empty")
    header_line, body = _split_header(data)
    scan = scan_records(data, body, 0, 2, strict=False)
    resume = ResumePoint(scan.end, 0, len(scan.records), scan.end)
    digest = hashlib.sha256(memoryview(data)[: scan.end])
    torn = _torn(scan.end, len(data), scan.stop, 0)
    return _Decoded(header_line, scan.records, torn, resume, digest, scan.end, 0)


def _decode_frames(data: bytes, spans: list[FrameSpan]) -> _Decoded:
    digest, length, lines = hashlib.sha256(), 0, 0
    records: list[dict[str, Any]] = []
    header_line = b""
    for index, span in enumerate(spans):
        try:
            plain = decode_frame(memoryview(data)[span.start : span.end])
        except FrameError as exc:
            raise CorruptLog(f"frame {index} (bytes {span.start}-{span.end}) is damaged: {exc}") from None
        start = 0
        if index == 0:
            header_line, start = _split_header(plain)
        first_line = lines + 1 + (index == 0)
        records.extend(scan_records(plain, start, len(records), first_line, strict=True).records)
        lines += plain.count(b"\n")
        digest.update(plain)
        length += len(plain)
    end = spans[-1].end if spans else 0
    resume = ResumePoint(end, len(spans), len(records), length)
    return _Decoded(header_line, records, None, resume, digest, length, lines)


def _decode_zstd(data: bytes) -> _Decoded:
    if not data:
        raise CorruptLog("log file is empty")
    try:
        split = split_frames(data)
    except FrameError as exc:
        raise CorruptLog(str(exc)) from None
    if not split.frames:
        raise CorruptLog("the header frame is incomplete: the log was never fully created")
    decoded = _decode_frames(data, split.frames)
    if split.torn_start is None:
        return decoded
    plain = decode_torn_frame(memoryview(data)[split.torn_start :])
    scan = scan_records(plain, 0, len(decoded.records), decoded.lines + 1, strict=False)
    decoded.records.extend(scan.records)
    decoded.digest.update(memoryview(plain)[: scan.end])
    decoded.logical_length += scan.end
    reason = f"last frame is incomplete (a crashed append); {len(scan.records)} events recovered from it"
    decoded.torn = _torn(split.torn_start, len(data), reason, len(scan.records))
    return decoded


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
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
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


def _load_events(session_id: str, records: list[dict[str, Any]]) -> list[SessionEvent]:
    upgrader = LegacyUpgrader(session_id)
    try:
        return [check_event(upgrader.upgrade(r), where=f"event seq {r.get('seq')}") for r in records]
    except EventCheckError as exc:
        raise CorruptLog(str(exc)) from None


def _read_stable(path: Path) -> tuple[bytes, str]:
    """The file's bytes and revision, re-read while a writer is changing it (DSH does too)."""
    for _ in range(READ_ATTEMPTS):
        before = file_revision(path)
        data = path.read_bytes()
        if file_revision(path) == before:
            return data, before
    raise CorruptLog(f"log kept changing across {READ_ATTEMPTS} reads; retry when its writer is idle")


def read_session(path: Path, *, expected_id: str | None = None) -> SessionLog:
    """Read and validate the log at `path` (`session.jsonl` or `session.jsonl.zstd`)."""
    encoding = encoding_of_file_name(path.name)
    if encoding is None:
        raise SessionLogError(path, "not a session log name (expected session.jsonl or session.jsonl.zstd)")
    try:
        data, revision = _read_stable(path)
        decoded = (_decode_raw if encoding is Encoding.RAW else _decode_zstd)(data)
        header = _parse_header(decoded.header_line)
        if expected_id is not None and header.id != expected_id:
            raise CorruptLog(f"header id {header.id!r} is not the requested id {expected_id!r}")
        _check_identity(path, header, encoding)
        events = _load_events(header.id, decoded.records)
    except CorruptLog as exc:
        raise SessionLogError(path, str(exc)) from None
    except OSError as exc:
        raise SessionLogError(path, f"cannot read the log: {exc.strerror or exc}") from None
    return SessionLog(
        path=path,
        encoding=encoding,
        header=header,
        events=tuple(events),
        closers=tuple(interrupted_turn_closers(events)),
        torn=decoded.torn,
        resume=decoded.resume,
        logical_length=decoded.logical_length,
        digest=decoded.digest.hexdigest(),
        revision=revision,
        unknown_types=frozenset(e.type for e in events if is_unknown(e)),
    )
