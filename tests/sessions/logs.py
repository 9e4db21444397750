"""Hand-made log files for reader tests (bytes exactly as a test needs them, damage included)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from remem.daemon.sessions.models import SessionHeader
from remem.daemon.sessions.paths import Encoding, session_log_path
from remem.daemon.sessions.writer import encode_batch, json_line
from remem.daemon.sessions.zstd_frames import encode_frame
from tests.sessions.factory import SessionSpec, build_session

CWD = "/home/dev/projects/demo"


def header(session_id: str = "s1", **extra: Any) -> dict[str, Any]:
    return SessionHeader(id=session_id, createdAt=1_785_000_000_000, cwd=CWD, **extra).to_record()


def line(record: dict[str, Any]) -> bytes:
    return json_line(record)


def event(seq: int, kind: str, data: Any, **extra: Any) -> dict[str, Any]:
    return {"type": kind, "seq": seq, "time": 1_785_000_000_000 + seq, "data": data, **extra}


def place(
    root: Path, session_id: str, data: bytes, encoding: Encoding = Encoding.RAW, cwd: str | None = CWD
) -> Path:
    """Put `data` where a log with this id/cwd belongs and return the path."""
    path = session_log_path(root, cwd, session_id, encoding)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def raw_log(root: Path, body: bytes, session_id: str = "s1", **header_extra: Any) -> Path:
    return place(root, session_id, line(header(session_id, **header_extra)) + body)


def zstd_log(root: Path, frames: list[bytes], session_id: str = "s1") -> Path:
    """A zstd log: header frame, then one frame per plaintext batch in `frames`."""
    data = encode_frame(line(header(session_id))) + b"".join(encode_frame(f) for f in frames)
    return place(root, session_id, data, Encoding.ZSTD)


def factory_batches(seed: int = 3, turns: int = 3) -> list[bytes]:
    """Plaintext batches of a realistic session with id `s1` (packed rows included)."""
    draft = build_session(SessionSpec(seed=seed, turns=turns, cwd=CWD), session_id="s1")
    return [encode_batch(b) for b in draft.batches]


def turn_events(first_seq: int = 0, turn: int = 1) -> list[dict[str, Any]]:
    """A small complete turn with a tool call, as records."""
    s = first_seq
    source = {"kind": "model", "provider": "p", "model": "m"}
    call = {"type": "tool-call", "id": "c1", "name": "bash", "arguments": "{}"}
    result = {
        "id": f"r{turn}",
        "role": "user",
        "source": {"kind": "tool", "callId": "c1"},
        "content": [{"type": "tool-result", "toolCallId": "c1", "content": [], "isError": False}],
    }
    return [
        event(s, "turn/start", {"turn": turn}),
        event(s + 1, "step/start", {"turn": turn, "step": 1}),
        event(
            s + 2,
            "user/message",
            {
                "id": f"u{turn}",
                "role": "user",
                "content": [{"type": "text", "text": "hi"}],
                "source": {"kind": "user"},
            },
            surfaceOp="append",
        ),
        event(
            s + 3,
            "assistant/message",
            {
                "turn": turn,
                "step": 1,
                "message": {"id": f"a{turn}", "role": "assistant", "content": [call], "source": source},
            },
            surfaceOp="append",
        ),
        event(
            s + 4, "tool/call", {"turn": turn, "step": 1, "callId": "c1", "name": "bash", "arguments": "{}"}
        ),
        event(
            s + 5,
            "tool/result",
            {"turn": turn, "step": 1, "message": result},
            surfaceOp="append",
            sourceEventSeqs=[s + 4],
        ),
        event(s + 6, "step/end", {"turn": turn, "step": 1}),
        event(s + 7, "turn/end", {"turn": turn, "reason": {"kind": "completed"}}),
    ]


def lines(records: list[dict[str, Any]]) -> bytes:
    return b"".join(line(r) for r in records)
