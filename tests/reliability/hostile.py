"""The hostile files the attack on remem fed its daemon, written where the daemon reads them.

Session logs go into DSH session roots (`ROOTS` under one folder: a root holds one encoding),
memory files into a workspace folder of a home. Each
input is the attack's own size; the reliability suite checks each is refused on its own with
an error naming the cap, and the `daemon.hostile-rss` benchmark measures the daemon's peak
memory through each.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import zstandard

from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.sessions.paths import Encoding, encode_segment, project_key
from remem.daemon.sessions.zstd_frames import encode_frame

MIB = 1024 * 1024
CWD = "/home/dev/projects/hostile"
ROOTS = [Encoding.RAW.value, Encoding.ZSTD.value]  # under the folder given as `root`


@dataclass(frozen=True)
class Hostile:
    name: str
    write: Callable[[Path, Home, Path], Path]  # (folder of ROOTS, home, project) -> the file written
    refusal: str  # what the error about it says: the cap it broke
    in_memory: bool  # a memory file (read by memory/readWorkspace), else a session log


def _log(root: Path, session_id: str, encoding: Encoding) -> Path:
    folder = root / encoding.value / project_key(CWD) / encode_segment(session_id)
    folder.mkdir(parents=True, exist_ok=True)
    return folder / encoding.file_name


def _header(session_id: str) -> bytes:
    header = {
        "type": "session",
        "version": 0,
        "id": session_id,
        "createdAt": 1,
        "cwd": CWD,
        "delegationDepth": 0,
    }
    return json.dumps(header).encode() + b"\n"


def zstd_bomb(root: Path, home: Home, project: Path) -> Path:
    """A log of 32 KB whose second frame decompresses to 1 GiB."""
    path = _log(root, "zstd-bomb", Encoding.ZSTD)
    compressor = zstandard.ZstdCompressor(
        level=1, write_checksum=True, write_content_size=False
    ).compressobj()
    spaces = b" " * MIB
    bomb = b"".join(compressor.compress(spaces) for _ in range(1024)) + compressor.flush()
    path.write_bytes(encode_frame(_header("zstd-bomb")) + bomb)
    return path


def long_line(root: Path, home: Home, project: Path) -> Path:
    """A raw log whose one event is a 100 MB line."""
    path = _log(root, "long-line", Encoding.RAW)
    with path.open("wb") as out:
        out.write(_header("long-line"))
        out.write(b'{"type":"session/title","seq":0,"time":1,"data":{"title":"')
        for _ in range(100):
            out.write(b"x" * 1_000_000)
        out.write(b'","messageSeqs":[],"source":{"kind":"user"}}}\n')
    return path


def tiny_events(root: Path, home: Home, project: Path) -> Path:
    """A raw log of a million tiny events: one packed row of a million one-letter deltas (6 MB)."""
    path = _log(root, "tiny-events", Encoding.RAW)
    count = 1_000_000
    data = {"turn": 1, "step": 1, "index": 0, "dt": [0] * (count - 1), "texts": ["a"] * count}
    row = {"type": "text-chunks", "seq0": 0, "time0": 1, "data": data}
    path.write_bytes(_header("tiny-events") + json.dumps(row, separators=(",", ":")).encode() + b"\n")
    return path


def _record_path(home: Home, project: Path, name: str) -> Path:
    folder = home.workspaces / WorkspaceId.from_cwd(project).key
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{name}.md"


def huge_record(root: Path, home: Home, project: Path) -> Path:
    """A 100 MB record file."""
    path = _record_path(home, project, "huge")
    with path.open("wb") as out:
        out.write(b"---\nname: huge\ndescription: A huge record\ntype: project\n---\n")
        for _ in range(100):
            out.write(b"y" * (MIB - 1) + b"\n")
    return path


def many_keys(root: Path, home: Home, project: Path) -> Path:
    """A record whose front matter has 100 000 keys."""
    path = _record_path(home, project, "many-keys")
    keys = "".join(f"k{i}: v\n" for i in range(100_000))
    path.write_text(f"---\nname: many-keys\ndescription: Many keys\ntype: project\n{keys}---\nBody.\n")
    return path


INPUTS = [
    Hostile("zstd bomb (1 GiB)", zstd_bomb, "SESSION_LOG_MAX_BYTES", in_memory=False),
    Hostile("100 MB line", long_line, "SESSION_LOG_MAX_BYTES", in_memory=False),
    Hostile("1 000 000 tiny events", tiny_events, "SESSION_EVENTS_MAX", in_memory=False),
    Hostile("100 MB record", huge_record, "the most remem reads of a memory file", in_memory=True),
    Hostile("100 000 front-matter keys", many_keys, "the front matter is over 16 KiB", in_memory=True),
]
