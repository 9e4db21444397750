"""The child of a Claude Code fork: the parent's conversation through a turn, re-stamped.

What claude-agent-sdk's `fork_session` writes, so that `claude --resume <child>` continues it:
every inherited record gets a fresh uuid (derived from the child id, so a retry writes the same
ones), the child's `sessionId`, ``forkedFrom: {sessionId, messageUuid}`` naming the parent's
record, its nearest inherited ancestor as parent (none for a root, a compaction boundary
included), every other reference to an inherited record renamed, and no sidechain or team
fields; the last
record is stamped now (Claude Code resumes at the latest leaf). The session's
``content-replacement`` entries are re-emitted under the child's id, then a ``custom-title``.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from typing import Any

import msgspec

from ..sessions.decode import decode_mended
from ..sessions.formats.claude_code import Selection
from ..sessions.formats.jsonl import records, replaced_utf8

_LEAKING = ("teamName", "agentName", "slug", "sourceToolAssistantUUID")
# What the model was sent, and tool output kept for the UI: copied as is. Everywhere else a
# string naming an inherited record is renamed with it — parent links, and references such
# as a compaction's preserved segment (`compactMetadata.preservedSegment.headUuid`, ...).
_VERBATIM = frozenset({"message", "toolUseResult"})
_STAMPED = frozenset({"uuid", "parentUuid", "sessionId", "isSidechain", "forkedFrom", *_LEAKING})
_RAW_FIELDS = msgspec.json.Decoder(dict[str, msgspec.Raw])


def child_uuid(child: str, parent_uuid: str) -> str:
    """The child's uuid for the parent's record `parent_uuid`: fresh, yet the same on a retry."""
    return _uuid5(uuid.UUID(child).bytes, parent_uuid)


def _uuid5(namespace: bytes, name: str) -> str:
    """`str(uuid.uuid5(UUID(bytes=namespace), name))`, without building UUID objects (a fork
    names tens of thousands of records)."""
    digest = bytearray(hashlib.sha1(namespace + name.encode("utf-8")).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50
    digest[8] = (digest[8] & 0x3F) | 0x80
    hex_ = digest.hex()
    return f"{hex_[:8]}-{hex_[8:12]}-{hex_[12:16]}-{hex_[16:20]}-{hex_[20:]}"


def child_lines(data: bytes, selection: Selection, child: str, title: str, now: str) -> list[bytes]:
    """The child transcript's lines (each ending in a newline) for `selection` of `data`.

    Each record is decoded only to its top-level fields' raw JSON: what needs no renaming is
    written back byte for byte, the conversation's bulk included."""
    parent = selection.session_id
    starts = _line_starts(data)
    encode = msgspec.json.Encoder().encode
    out: list[bytes] = []
    last = len(selection.lines) - 1
    namespace = uuid.UUID(child).bytes
    renamed = {old: _uuid5(namespace, old) for old in selection.parents}
    # A string field names a record when its JSON text is that uuid's; objects and arrays are
    # decoded and searched; numbers, booleans and other strings are written back as they are.
    tokens = {encode(old): encode(new) for old, new in renamed.items()}
    sizes = {len(token) for token in tokens}
    # `parents` holds the selected records' uuids in the order of their lines.
    for position, (number, original) in enumerate(zip(selection.lines, selection.parents, strict=True)):
        # A line that is not UTF-8 was read with U+FFFD for its bad bytes, and is written so, as
        # claude-agent-sdk's fork writes it (decision 0415).
        record: dict[str, Any] = decode_mended(_RAW_FIELDS, replaced_utf8(_line(data, starts, number)))
        above = selection.parents.get(original)
        for key, value in record.items():
            if key in _VERBATIM or key in _STAMPED:
                continue
            first = memoryview(value)[:1]
            if first == b"{" or first == b"[":
                record[key] = _renamed(msgspec.json.decode(value), renamed)
            elif len(value) in sizes and (text := bytes(value)) in tokens:
                record[key] = msgspec.Raw(tokens[text])
        for key in _LEAKING:
            record.pop(key, None)
        record.update(
            uuid=renamed[original],
            parentUuid=renamed[above] if above else None,
            sessionId=child,
            isSidechain=False,
            forkedFrom={"sessionId": parent, "messageUuid": original},
        )
        if position == last:
            record["timestamp"] = now
        out.append(encode(record) + b"\n")
    if selection.replacements:
        replacement = {
            "type": "content-replacement",
            "sessionId": child,
            "replacements": list(selection.replacements),
            "uuid": child_uuid(child, "content-replacement"),
            "timestamp": now,
        }
        out.append(encode(replacement) + b"\n")
    custom = {
        "type": "custom-title",
        "sessionId": child,
        "customTitle": title,
        "uuid": child_uuid(child, "custom-title"),
        "timestamp": now,
    }
    out.append(encode(custom) + b"\n")
    return out


class _Stamp(msgspec.Struct, rename="camel"):
    """A child's line as far as what makes it the fork it is."""

    type: Any = None
    uuid: Any = None
    forked_from: Any = None
    custom_title: Any = None


@dataclass(frozen=True)
class Identity:
    """What makes a child transcript the fork it is, as `child_lines` writes it: each inherited
    record's uuid and the parent's record it copies (``forkedFrom``), in order (the cut), and
    its title (the ``custom-title`` right after them)."""

    inherited: tuple[tuple[Any, Any], ...]
    title: Any

    def __str__(self) -> str:
        if not self.inherited:
            return f"no record of a parent, titled {self.title!r}"
        parent = self.inherited[-1][1]
        of = parent.get("sessionId") if isinstance(parent, dict) else None
        last = parent.get("messageUuid") if isinstance(parent, dict) else None
        return f"{len(self.inherited)} records of session {of} through {last}, titled {self.title!r}"


def identity(data: bytes) -> Identity | None:
    """The `Identity` of the child transcript `data`, from its first lines: what Claude Code
    appends to a child it resumed (its turns, a rename) is not looked at. None when `data` does
    not begin as a child remem writes."""
    inherited: list[tuple[Any, Any]] = []
    replaced = False  # the content-replacement entry, between the inherited records and the title
    for line in records(data, _Stamp, []).lines:
        record = line.record
        if record.type == "custom-title":
            return Identity(tuple(inherited), record.custom_title)
        if record.type == "content-replacement" and not replaced:
            replaced = True
        elif record.forked_from is not None and not replaced:
            inherited.append((record.uuid, record.forked_from))
        else:
            return None
    return None


def _renamed(value: Any, renamed: dict[str, str]) -> Any:
    if isinstance(value, str):
        return renamed.get(value, value)
    if isinstance(value, list):
        return [_renamed(item, renamed) for item in value]
    if isinstance(value, dict):
        return {key: _renamed(item, renamed) for key, item in value.items()}
    return value


def _line_starts(data: bytes) -> list[int]:
    """Byte offset of each line's start (index 0 is line 1)."""
    starts = [0]
    find = data.find
    at = find(b"\n")
    while at >= 0:
        starts.append(at + 1)
        at = find(b"\n", at + 1)
    return starts


def _line(data: bytes, starts: list[int], number: int) -> bytes:
    begin = starts[number - 1]
    end = starts[number] - 1 if number < len(starts) else len(data)
    return data[begin:end]
