"""Fork benchmarks of Claude Code and Codex sessions: ~50 MB parents against their floors.

A Codex fork copies a byte prefix after a new first line: its floor is a durable copy of the
parent's bytes. A Claude Code fork re-stamps every inherited record: its floor is decoding and
re-encoding every line (msgspec, as fast as any JSON library here) plus the durable write.
The parents are generated in the harnesses' shapes: turns of a prompt, a tool call, a large
tool result and an answer.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import msgspec

from remem.daemon.forks.harness_service import HarnessForkRequest, HarnessForks
from remem.daemon.home import Home
from remem.daemon.sessions.formats.claude_code import read_transcript
from remem.daemon.sessions.formats.codex import read_rollout

from ..sessions.claude_lines import SID, jsonl, prompt, result, say, use
from ..sessions.codex_lines import TID, meta, tool_turns
from .forks import _copy_synced
from .harness import Benchmark, Budget, Call, Contenders

_BYTES = 50_000_000
_TOOL_OUTPUT = "".join(f"line {n}: some tool output worth remembering\n" for n in range(120))


def _claude_code_parent(path: Path) -> int:
    """Write a ~50 MB transcript at `path`; its number of turns."""
    parts: list[bytes] = []
    size, parent, turns = 0, None, 0
    while size < _BYTES:
        turns += 1
        n = turns
        records = [
            prompt(f"u{n}", parent, f"question {n}: look at the file and explain it"),
            use(f"t{n}", f"u{n}", f"c{n}"),
            result(f"r{n}", f"t{n}", f"c{n}"),
            say(f"a{n}", f"r{n}", f"answer {n}: " + "the file says many things. " * 20),
        ]
        records[2]["message"]["content"][0]["content"] = _TOOL_OUTPUT
        chunk = jsonl(*records)
        parts.append(chunk)
        size, parent = size + len(chunk), f"a{n}"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(parts))
    return turns


def _codex_parent(path: Path) -> int:
    data, turns = tool_turns(meta(), _BYTES, _TOOL_OUTPUT)
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    return turns


def _restamp_synced(source: Path, target: Path) -> None:
    """Decode and re-encode every line of `source`, then write the result durably."""
    decode, encode = msgspec.json.decode, msgspec.json.Encoder().encode
    lines = [encode(decode(line)) + b"\n" for line in source.read_bytes().splitlines() if line]
    _copy_synced_bytes(b"".join(lines), target)


def _copy_synced_bytes(data: bytes, target: Path) -> None:
    staged = target.with_suffix(".staged")
    staged.parent.mkdir(parents=True, exist_ok=True)
    staged.write_bytes(data)
    _copy_synced(staged, target)
    os.unlink(staged)


@contextmanager
def _fork(harness: str) -> Iterator[Contenders]:
    with tempfile.TemporaryDirectory(prefix="remem-bench-") as folder:
        root = Path(folder)
        if harness == "claude-code":
            parent = root / "claude" / "projects" / "-home-dev-bench" / f"{SID}.jsonl"
            last = _claude_code_parent(parent)
            assert read_transcript(parent.read_bytes(), parent.name).turns[-1].forkable
        else:
            parent = (
                root
                / "codex"
                / "sessions"
                / "2026"
                / "05"
                / "01"
                / f"rollout-2026-05-01T00-00-00-{TID}.jsonl"
            )
            last = _codex_parent(parent)
            assert read_rollout(parent.read_bytes()).turns[-1].forkable
        forks = HarnessForks(Home(root / "home"))
        floor = _restamp_synced if harness == "claude-code" else _copy_synced

        def remem(iteration: int) -> Call:
            request = HarnessForkRequest(
                harness=harness, path=str(parent), operationId=f"bench-{iteration}", afterTurn=last
            )
            return lambda: forks.fork(request)

        def baseline(iteration: int) -> Call:
            return lambda: floor(parent, root / "copies" / f"{iteration}.jsonl")

        yield Contenders(remem=remem, baseline=baseline)


BENCHMARKS = [
    Benchmark(
        name="forks.codex-fork-50mb",
        note="branch a ~50 MB Codex rollout after its last turn; baseline: copy its bytes to a new "
        "file with fsync and a directory fsync",
        target=1.5,
        budget=Budget(iterations=5, warmup=1),
        setup=lambda: _fork("codex"),
    ),
    Benchmark(
        name="forks.claude-code-fork-50mb",
        note="branch a ~50 MB Claude Code transcript after its last turn (every record re-stamped); "
        "baseline: decode and re-encode every line (msgspec), then write the result durably",
        target=1.5,
        budget=Budget(iterations=5, warmup=1),
        setup=lambda: _fork("claude-code"),
    ),
]
