"""What a skimming scan proves of a window of lines in one msgspec call.

Each event type DSH writes, and each packed-row tag, has a struct, and the lines of a window
are decoded at once as a tagged union of them over `type`. The structs carry the envelope
rules as constraints: exactly the envelope's keys (`forbid_unknown_fields`), a seq that is a
non-negative safe integer and a time that is a safe integer (`Meta` bounds, and plain JSON
integers only), `surfaceOp` `"append"` or a replace op, `sourceEventSeqs` of non-negative
safe integers, `ignorable` exactly true, and a packed row's keys and member types. Payloads
are skipped (`msgspec.Raw`) unless the scan keeps them or a rule reads them.

What a type cannot say is left to `Union.judges`: the seq the line must carry, the upgrade
shims, the payload rules, `sourceEventSeqs` being earlier and unique, a row's counts. A judge
answers None when its line must take the general path (the scanner's line-by-line decode,
upgrade and `check_event`), which owns every error, so a struct only ever proves a line good.
A line the union refuses ends the call; its error names the line, which alone takes the
general path, and decoding resumes after it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Annotated, Any, Literal, Union

import msgspec
from msgspec import UNSET, Meta, Raw, Struct, UnsetType

from .checks import BARE_TYPES, PAYLOAD_CHECKS, EventCheckError
from .chunks import ROW_TAGS
from .models import MAX_SAFE_INTEGER, SURFACE_TYPES, Skimmed
from .upgrades import PAYLOAD_SHIMS
from .vocabulary import KNOWN_EVENT_TYPES, REFUSED_LEGACY_TYPES

Seq = Annotated[int, Meta(ge=0, le=MAX_SAFE_INTEGER)]
SafeInt = Annotated[int, Meta(ge=-MAX_SAFE_INTEGER, le=MAX_SAFE_INTEGER)]
Members = Annotated[list[str], Meta(min_length=1)]
Note = Callable[[int, str], None]  # a current tool/result's seq and message id, for the upgrader
Item = Skimmed | int  # a line's event, or how many a packed row stands for
# A line's struct, its expected seq, the events it may still add, and `Note` -> its events.
Judge = Callable[[Any, int, int, Note], Item | None]

# Types whose lines a judge must look into: every known type but the bare ones. Refused legacy
# types have no struct, so their lines always take the general path.
CHECKED_TYPES = KNOWN_EVENT_TYPES - BARE_TYPES - REFUSED_LEGACY_TYPES
_new_tuple = tuple.__new__


class _Replace(Struct, forbid_unknown_fields=True):
    op: Literal["replace"]
    start: Seq
    end: Seq


# A dt may be negative (the general path checks every partial sum); DSH's never are, so the
# struct takes only non-negative ones and the last time is the largest.
Delta = Annotated[int, Meta(ge=0, le=MAX_SAFE_INTEGER)]


class _TextRow(Struct, forbid_unknown_fields=True):
    turn: SafeInt
    step: SafeInt
    index: SafeInt
    dt: list[Delta]
    texts: Members


class _ToolRow(Struct, forbid_unknown_fields=True):
    turn: SafeInt
    step: SafeInt
    index: SafeInt
    id: str
    dt: list[Delta]
    args: Members
    name: str | UnsetType = UNSET


NonEmpty = Annotated[str, Meta(min_length=1)]


# The payload rules of the checked types whose payloads are large and seldom kept, as structs
# (`checks.PAYLOAD_CHECKS` says the same of a decoded payload); the fields they do not name
# are skipped, not built. Each requires `message` (or `header`), so no upgrade shim applies.
class _ModelSource(Struct):
    kind: Literal["model"]
    provider: NonEmpty
    model: NonEmpty


class _AssistantMessage(Struct):
    id: NonEmpty
    role: Literal["assistant"]
    source: _ModelSource


class _AssistantData(Struct):
    message: _AssistantMessage


class _ToolSource(Struct):
    kind: str
    callId: Any = UNSET


class _Block(Struct):
    type: Any = UNSET
    toolCallId: Any = UNSET


class _ToolMessage(Struct):
    id: NonEmpty
    role: Literal["user"]
    content: list[_Block]
    source: _ToolSource


class _ToolResultData(Struct):
    message: _ToolMessage


class _Config(Struct):
    provider: NonEmpty
    model: NonEmpty


class _Header(Struct):
    config: _Config


class _RequestHeaderData(Struct):
    header: _Header
    reason: Any = UNSET


def _one_matching_result(data: _ToolResultData) -> bool:
    """`_check_tool_result`'s block rule (absent on both sides matches, as `None == None`)."""
    message = data.message
    blocks = [block for block in message.content if block.type == "tool-result"]
    return len(blocks) == 1 and blocks[0].toolCallId == message.source.callId


_PAYLOAD_STRUCTS: dict[str, tuple[type[Struct], Callable[[Any], bool] | None]] = {
    "assistant/message": (_AssistantData, None),
    "tool/result": (_ToolResultData, _one_matching_result),
    "request/header": (_RequestHeaderData, lambda data: data.reason != "fallback"),
}


def _event_struct(kind: str, data: Any, surface: bool) -> type[Struct]:
    fields: list[tuple[str, Any] | tuple[str, Any, Any]] = [("seq", Seq), ("time", SafeInt), ("data", data)]
    if surface:
        fields += [
            ("surfaceOp", Literal["append"] | _Replace),  # required of a surface event
            ("sourceEventSeqs", list[Seq] | UnsetType, UNSET),
            ("ignorable", Literal[True] | UnsetType, UNSET),
        ]
    return msgspec.defstruct(
        "EventLine", fields, tag_field="type", tag=kind, forbid_unknown_fields=True, module=__name__
    )


def _row_struct(tag: str) -> type[Struct]:
    data = _ToolRow if tag == "tool-call-chunks" else _TextRow
    fields = [("seq0", Seq), ("time0", SafeInt), ("data", data)]
    return msgspec.defstruct(
        "RowLine", fields, tag_field="type", tag=tag, forbid_unknown_fields=True, module=__name__
    )


def _bare_judge(kind: str) -> Judge:
    """A kept bare type's: the line as it is, its payload built."""

    def judge(line: Any, seq: int, room: int, note: Note) -> Item | None:
        return _new_tuple(Skimmed, (kind, seq, line.data)) if line.seq == seq else None

    return judge


def _row_judge(line: Any, seq: int, room: int, note: Note) -> Item | None:
    """How many members a packed row stands for, once its counts and expanded range are
    proved (`_decode_row`)."""
    data = line.data
    members = data.args if data.__class__ is _ToolRow else data.texts
    count, dt, time0 = len(members), data.dt, line.time0
    if line.seq0 != seq or count > room or len(dt) != count - 1 or seq + count - 1 > MAX_SAFE_INTEGER:
        return None
    if time0 + sum(dt) > MAX_SAFE_INTEGER:  # the last time, the largest (`Delta`)
        return None
    return count


def _sources_ok(kind: str, seqs: list[int] | UnsetType, seq: int) -> bool:
    """`_check_surface`'s rule on `sourceEventSeqs` (a surface struct proved the rest): unique
    and strictly earlier, or empty only for an assistant message."""
    if seqs is UNSET:
        return True
    count = len(seqs)
    if count == 1:  # a tool/result's call: alone, it is unique
        return seqs[0] < seq
    if not count:
        return kind == "assistant/message"
    first, last = seqs[0], seqs[-1]
    if last >= seq:
        return False
    # DSH writes a consecutive run, which proves uniqueness in C (its ends, compared first,
    # spare building the run for any other list); any other list is counted.
    if last - first == count - 1 and seqs == list(range(first, last + 1)):
        return True
    return max(seqs) < seq and len(set(seqs)) == count


def _checked_judge(kind: str, kept: bool) -> Judge:
    """A checked type's, its payload decoded: no upgrade shim applies, and its surface and
    payload rules hold."""
    surface = kind in SURFACE_TYPES
    payload_check = PAYLOAD_CHECKS.get(kind)
    shim = PAYLOAD_SHIMS.get(kind)
    result = kind == "tool/result"

    def judge(line: Any, seq: int, room: int, note: Note) -> Item | None:
        data = line.data
        if line.seq != seq or (shim is not None and data.__class__ is dict and shim(data)):
            return None
        if surface and not _sources_ok(kind, line.sourceEventSeqs, seq):
            return None
        if payload_check is not None:
            try:
                payload_check(data)
            except EventCheckError:
                return None
        if result:
            note(seq, data["message"]["id"])  # `_check_tool_result` proved it a message's id
        return _new_tuple(Skimmed, (kind, seq, data if kept else None))

    return judge


def _struct_judge(kind: str, rule: Callable[[Any], bool] | None) -> Judge:
    """A checked type's whose payload struct (`_PAYLOAD_STRUCTS`) proved it, but for `rule`."""
    surface = kind in SURFACE_TYPES
    result = kind == "tool/result"

    def judge(line: Any, seq: int, room: int, note: Note) -> Item | None:
        data = line.data
        if line.seq != seq or (rule is not None and not rule(data)):
            return None
        if surface and not _sources_ok(kind, line.sourceEventSeqs, seq):
            return None
        if result:
            note(seq, data.message.id)
        return _new_tuple(Skimmed, (kind, seq, None))

    return judge


@dataclass(frozen=True)
class LineUnion:
    """The decoder of one `keep` set, and how each struct's line becomes events.

    `plain` maps the struct of each bare type whose payload is not kept to its type: such a
    line needs only its seq compared, which the scanner does inline. Every other struct has
    its judge.
    """

    decode: Callable[[memoryview], list[Any]]
    plain: dict[type, str]
    judges: dict[type, Judge]
    kinds: dict[type, str]  # every struct's event type (a packed row's members' for a row)
    # Each struct's way, its type when plain and its judge otherwise: one look-up a line.
    ways: dict[type, str | Judge] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "ways", {**self.plain, **self.judges})


@lru_cache(maxsize=8)
def union_for(keep: frozenset[str]) -> LineUnion:
    """The structs of every line a skimming read keeping the payloads of `keep` can prove."""
    plain: dict[type, str] = {}
    judges: dict[type, Judge] = {}
    kinds: dict[type, str] = {}
    for kind in sorted(BARE_TYPES):
        if kind in keep:
            struct = _event_struct(kind, Any, False)
            judges[struct] = _bare_judge(kind)
        else:
            struct = _event_struct(kind, Raw, False)
            plain[struct] = kind
        kinds[struct] = kind
    for kind in sorted(CHECKED_TYPES):
        surface = kind in SURFACE_TYPES
        if kind in _PAYLOAD_STRUCTS and kind not in keep:
            payload, rule = _PAYLOAD_STRUCTS[kind]
            struct = _event_struct(kind, payload, surface)
            judges[struct] = _struct_judge(kind, rule)
        else:
            struct = _event_struct(kind, Any, surface)
            judges[struct] = _checked_judge(kind, kind in keep)
        kinds[struct] = kind
    for tag in ROW_TAGS:
        struct = _row_struct(tag)
        judges[struct], kinds[struct] = _row_judge, "assistant/chunk"
    union = Union[tuple(kinds)]  # type: ignore[valid-type]  # noqa: UP007
    return LineUnion(msgspec.json.Decoder(union).decode_lines, plain, judges, kinds)


_AT_LINE = re.compile(r" - at `\$\[(\d+)\]")
_AT_BYTE = re.compile(r"\(byte (\d+)\)$")


def _refused_line(error: Exception, buf: bytes, start: int) -> int | None:
    """The index of the line an error of decoding the lines from `buf[start]` on is about,
    when it says."""
    message = str(error)
    at = _AT_LINE.search(message)
    if at is not None:
        return int(at.group(1))
    at = _AT_BYTE.search(message)
    return buf.count(b"\n", start, start + int(at.group(1))) if at is not None else None


@dataclass(frozen=True)
class Window:
    """The structs of a window's first lines, where they end, and how many lines after them
    take the general path before decoding resumes (0 when every line of the window was
    decoded)."""

    lines: list[Any]
    slow: int
    end: int  # the offset just past the last decoded line


def _one_object_each(buf: bytes, start: int, end: int, count: int) -> bool:
    """Whether each of the `count` newlines but the last sits in a `}\n{`. DSH writes `type`
    first, and the longer needle is found faster."""
    return buf.count(b'}\n{"type":"', start, end) == count - 1 or buf.count(b"}\n{", start, end) == count - 1


def decode_window(union: LineUnion, buf: bytes, start: int, end: int, ascii: bool) -> Window:
    """The structs of the lines of `buf[start:end]` (`end` just after a newline).

    `decode_lines` takes whitespace-separated values, not lines, so its values are the lines
    only when each newline sits in a `}\\n{` (JSON allows no raw newline in a string, and no
    `{` follows a `}` inside a value); a window that is not so shaped takes the general path
    whole. UTF-8 is checked here (unless the whole buffer is `ascii`), since msgspec does not
    check the bytes it skips.
    """
    count = buf.count(b"\n", start, end)
    if buf[start] != 0x7B or buf[end - 2] != 0x7D or not _one_object_each(buf, start, end, count):  # { }
        return Window([], count, start)
    body = memoryview(buf)[start:end]
    if not ascii:
        try:
            str(body, "utf-8")
        except UnicodeDecodeError as exc:
            return _prefix(union, buf, start, buf.count(b"\n", start, start + exc.start))
    try:
        lines = union.decode(body)
    except (msgspec.DecodeError, RecursionError) as exc:  # ValidationError is a DecodeError
        refused = _refused_line(exc, buf, start) if isinstance(exc, msgspec.DecodeError) else None
        if refused is None or refused >= count:  # not a line it can name: the window goes whole
            return Window([], count, start)
        return _prefix(union, buf, start, refused)
    return Window(lines, 0, end) if len(lines) == count else Window([], count, start)


def _prefix(union: LineUnion, buf: bytes, start: int, refused: int) -> Window:
    """The structs of the `refused` lines before the one the union refused, then that line."""
    if not refused:
        return Window([], 1, start)
    end = start
    for _ in range(refused):
        end = buf.index(b"\n", end) + 1
    head = decode_window(union, buf, start, end, True)  # UTF-8 checked up to the refused line
    return head if head.slow else Window(head.lines, 1, end)
