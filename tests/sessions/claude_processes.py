"""A stand-in Claude Code process and the `sessions/<pid>.json` file Claude Code keeps while it
runs a session (the shape Claude Code 2.1.332 writes), for liveness tests without the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

_WAITER = "import sys\nprint('up', flush=True)\nsys.stdin.read()\n"


def start_time(pid: int) -> str:
    """Process `pid`'s start time as Claude Code writes it in `procStart`: /proc/<pid>/stat's
    22nd field (clock ticks since boot)."""
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rindex(")") + 2 :].split()[19]


def pid_space() -> str:
    return os.readlink("/proc/self/ns/pid")


def pid_record(pid: int, session_id: str, /, **changed: Any) -> dict[str, Any]:
    """What Claude Code writes to `<home>/sessions/<pid>.json` while process `pid` runs `session_id`."""
    record: dict[str, Any] = {
        "pid": pid,
        "sessionId": session_id,
        "cwd": "/home/u/proj",
        "startedAt": 1796431590157,
        "procStart": start_time(pid),
        "version": "2.1.332",
        "kind": "interactive",
        "entrypoint": "sdk-cli",
        "pidDomain": f"linux:3d1219c7c4c5404aaa1f6d2a48adfda4:{pid_space()}",
        "status": "busy",
    }
    record.update(changed)
    return record


def write_pid_file(home: Path, pid: int, record: dict[str, Any] | bytes) -> Path:
    """`<home>/sessions/<pid>.json` holding `record` (JSON) or these very bytes."""
    path = home / "sessions" / f"{pid}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(record if isinstance(record, bytes) else json.dumps(record).encode())
    return path


@contextmanager
def a_process() -> Iterator[subprocess.Popen[str]]:
    """A live child process standing in for Claude Code, ended (and reaped) when the block ends."""
    child = subprocess.Popen(
        [sys.executable, "-c", _WAITER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "up\n"
        yield child
    finally:
        end(child)


def end(child: subprocess.Popen[str]) -> None:
    """Have the child exit, and reap it."""
    if child.poll() is None:
        child.kill()
    child.wait(timeout=30)
    for stream in (child.stdin, child.stdout):
        if stream is not None:
            stream.close()
