"""Listing benchmarks of Claude Code and Codex corpora: 2 000 files of ~100 KB, cold and warm.

The cold listings and trees stand beside the DSH listing's floor, orjson decoding every line
read (stdlib `json` and reading the bytes as extra columns, and `msgspec`: one `decode_lines`
of each file into exactly the struct the reader decodes, the least a reader in these structs
can do); a warm listing, where every file is an index hit, beside a `stat` of every file.
Files are generated in the harnesses' shapes (a prompt, a tool call, a large tool result and an
answer per turn), each with uuids, ids and a workspace of its own.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import msgspec
import orjson

from remem.daemon.home import Home
from remem.daemon.sessions.catalog import SessionCatalog, lineage_items
from remem.daemon.sessions.cold_reads import SPREAD, ColdReads
from remem.daemon.sessions.formats import claude_code, codex
from remem.daemon.sessions.lineage import build_tree
from remem.daemon.sessions.sources import Root

from ..sessions.claude_lines import jsonl, prompt, result, say, use
from ..sessions.codex_lines import meta, tool_turn_parts
from .harness import Benchmark, Budget, Call, Contenders, Prepare, repeat
from .sessions import (
    BIG_LOG_BYTES,
    ONE_PROCESS,
    RELIST_BUDGET,
    SPARE_BATCHES,
    _floors,
    _forget_index,
    _orjson_all,
    relist_contenders,
)

_SESSIONS = 2000
_WORKSPACE_SESSIONS = 100
_FILE_BYTES = 100_000
_TOKEN = "@@@@@"  # stands for a file's number in its template, so uuids and ids differ per file
_CWD = "/home/dev/projects/bench"
_OTHER_CWDS = tuple(f"/home/dev/projects/other-{n:02d}" for n in range(19))
_TOOL_OUTPUT = "".join(f"line {n}: some tool output worth remembering\n" for n in range(40))
_OLD = 1_600_000_000
# Recent Codex versions (0.125 on) write the model's base instructions into the first line, the
# `session_meta` a workspace's listing glances at: 22-27 KB of Markdown in the public rollouts.
_INSTRUCTIONS = "".join(
    f'## Rule {n}\n\n- Keep "changes" small; run the tests before you answer (rule {n}).\n'
    for n in range(300)
)


def _claude_turns(size: int) -> list[bytes]:
    """A transcript's turns (a prompt, a tool call, its result, an answer), one chained to the
    next, until they hold at least `size` bytes; each file's number and cwd still tokens."""
    chunks, total, parent, n = [], 0, None, 0
    while total < size:
        n += 1
        u = f"{_TOKEN}-{n}"
        records = [
            prompt(f"u{u}", parent, f"question {n}: look at the file and explain it", cwd="@CWD@"),
            use(f"t{u}", f"u{u}", f"c{u}"),
            result(f"r{u}", f"t{u}", f"c{u}"),
            say(f"a{u}", f"r{u}", f"answer {n}: " + "the file says many things. " * 20),
        ]
        records[2]["message"]["content"][0]["content"] = _TOOL_OUTPUT
        for record in records:
            record["cwd"] = "@CWD@"
        chunk = jsonl(*records)
        chunks.append(chunk)
        total, parent = total + len(chunk), f"a{u}"
    return chunks


def _codex_turns(size: int) -> list[bytes]:
    """A rollout's first line, then turns that each run a tool, until they hold `size` bytes."""
    first = meta(
        f"019c0000-0000-7000-8000-0000{_TOKEN}00", cwd="@CWD@", base_instructions={"text": _INSTRUCTIONS}
    )
    return tool_turn_parts(first, size, _TOOL_OUTPUT)


def _turns(fmt: str, size: int) -> list[bytes]:
    return _claude_turns(size) if fmt == "claude-code" else _codex_turns(size)


def _file_of(template: bytes, number: int, cwd: str) -> bytes:
    return template.replace(_TOKEN.encode(), f"{number:05d}".encode()).replace(b"@CWD@", cwd.encode())


def _file_path(root: Path, fmt: str, number: int, cwd: str) -> Path:
    if fmt == "claude-code":
        return root / cwd.replace("/", "-") / f"7c1a0000-0000-4000-8000-0000{number:05d}00.jsonl"
    day = root / "2026" / "05" / f"{1 + number % 28:02d}"
    return day / f"rollout-2026-05-01T00-00-00-019c0000-0000-7000-8000-0000{number:05d}00.jsonl"


def _corpus(root: Path, fmt: str, count: int, cwds: tuple[str, ...], first: int = 0) -> list[Path]:
    """`count` files of ~100 KB in `root` laid out as `fmt` writes them, dealt over `cwds`."""
    template = b"".join(_turns(fmt, _FILE_BYTES))
    paths = []
    for number in range(first, first + count):
        cwd = cwds[number % len(cwds)]
        data = _file_of(template, number, cwd)
        path = _file_path(root, fmt, number, cwd)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.utime(path, (_OLD, _OLD))
        paths.append(path)
    return paths


def _decode_all(fmt: str, paths: list[Path]) -> Call:
    """One msgspec call per file into the struct its reader decodes (the `msgspec` floor)."""
    decoder = msgspec.json.Decoder((claude_code if fmt == "claude-code" else codex).LISTED_LINE)

    def decode() -> None:
        for path in paths:
            decoder.decode_lines(path.read_bytes())

    return decode


def _catalog(home: Path, root: Path, fmt: str, reads: ColdReads = SPREAD) -> SessionCatalog:
    return SessionCatalog(Home(home), [Root(root, fmt)], idle_seconds=120, cold_reads=reads)  # type: ignore[arg-type]


def _cold(home: Path, root: Path, fmt: str, cwd: str | None = None, reads: ColdReads = SPREAD) -> Call:
    def listing() -> object:
        _forget_index(home)
        return _catalog(home, root, fmt, reads).listing(cwd)

    return listing


def _harness_floors(fmt: str, paths: list[Path]) -> tuple[Prepare, dict[str, Prepare]]:
    """The orjson floor of reading `paths`, with the json and read-bytes extras and msgspec
    decoding each file into the format reader's own line struct (DSH's line structs, the
    `structs` extra of DSH listings, are not these formats')."""
    floor, others = _floors(paths)
    del others["structs"]
    return floor, {**others, "msgspec": repeat(_decode_all(fmt, paths))}


@contextmanager
def _list_cold(fmt: str) -> Iterator[Contenders]:
    with tempfile.TemporaryDirectory(prefix="remem-bench-") as folder:
        root = Path(folder)
        paths = _corpus(root / "corpus", fmt, _SESSIONS, (_CWD, *_OTHER_CWDS))
        floor, others = _harness_floors(fmt, paths)
        alone = repeat(_cold(root / "alone", root / "corpus", fmt, reads=ONE_PROCESS))
        yield Contenders(
            remem=repeat(_cold(root / "home", root / "corpus", fmt)),
            baseline=floor,
            others={**others, "one process": alone},
        )


@contextmanager
def _tree_cold(fmt: str) -> Iterator[Contenders]:
    """A 100-session workspace's first tree among 2 000, against a cold listing of those 100
    alone. Claude Code reads only the workspace's folder; Codex, whose rollouts lie by date,
    glances at the first line of every other rollout (extras: orjson-parsing all 2 000, the
    floor when each had to be read once to learn its cwd; and the cold listing of the 100 plus
    an orjson parse of each other rollout's first line, what the layout forces on any reader)."""
    with tempfile.TemporaryDirectory(prefix="remem-bench-") as folder:
        root, alone = Path(folder, "all"), Path(folder, "alone")
        everything = _corpus(root / "corpus", fmt, _SESSIONS - _WORKSPACE_SESSIONS, _OTHER_CWDS)
        everything += _corpus(root / "corpus", fmt, _WORKSPACE_SESSIONS, (_CWD,), first=_SESSIONS)
        mine = _corpus(alone / "corpus", fmt, _WORKSPACE_SESSIONS, (_CWD,), first=_SESSIONS)

        def tree() -> object:
            _forget_index(root / "home")
            entries, _ = _catalog(root / "home", root / "corpus", fmt).entries(_CWD)
            assert len(entries) == _WORKSPACE_SESSIONS
            return build_tree(lineage_items(entries)).flat()

        orjson_floor, others = _harness_floors(fmt, mine)
        baseline_call = _cold(alone / "home", alone / "corpus", fmt)
        baseline = repeat(baseline_call)
        others = {"orjson": orjson_floor, **others}
        if fmt == "codex":
            others[f"orjson of all {_SESSIONS}"] = repeat(lambda: _orjson_all(everything))
            others = {
                **others,
                "the 100 + first lines": repeat(_and_first_lines(baseline_call, everything, mine)),
            }
        yield Contenders(remem=repeat(tree), baseline=baseline, others=others)


def _and_first_lines(listing: Call, everything: list[Path], mine: list[Path]) -> Call:
    """`listing`, then an orjson parse of the first line of each file of `everything` that
    `mine` (the workspace's, by number) does not hold."""
    names = {path.name for path in mine}
    others = [path for path in everything if path.name not in names]

    def both() -> None:
        listing()
        for path in others:
            with open(path, "rb") as handle:
                orjson.loads(handle.readline())

    return both


@contextmanager
def _relist(fmt: str) -> Iterator[Contenders]:
    """One turn appended to a ~50 MB file, listed again by the catalog that listed it."""
    with tempfile.TemporaryDirectory(prefix="remem-bench-") as folder:
        root = Path(folder)
        turns = [_file_of(chunk, 1, _CWD) for chunk in _turns(fmt, BIG_LOG_BYTES)]
        spare = turns[-SPARE_BATCHES:]
        path = _file_path(root / "corpus", fmt, 1, _CWD)
        path.parent.mkdir(parents=True)
        path.write_bytes(b"".join(turns[:-SPARE_BATCHES]))
        catalog = _catalog(root / "home", root / "corpus", fmt)
        catalog.listing()

        def append_next() -> None:
            with open(path, "ab") as handle:
                handle.write(spare.pop(0))

        yield relist_contenders(catalog, path, append_next, root)


def _benchmarks(fmt: str, name: str) -> list[Benchmark]:
    files = "transcripts" if fmt == "claude-code" else "rollouts"
    return [
        Benchmark(
            name=f"sessions.{name}-list-cold",
            note=f"{_SESSIONS} {name} {files} of ~100 KB, empty index; baseline: orjson-parse every line",
            target=1.5,
            budget=Budget(iterations=3, warmup=1),
            setup=lambda: _list_cold(fmt),
        ),
        Benchmark(
            name=f"sessions.{name}-tree-cold",
            note=f"the tree of a {_WORKSPACE_SESSIONS}-session workspace among {_SESSIONS} {name} {files}, "
            f"empty index; baseline: a cold listing of just those {_WORKSPACE_SESSIONS}",
            target=2.0,
            budget=Budget(iterations=3, warmup=1),
            setup=lambda: _tree_cold(fmt),
        ),
        Benchmark(
            name=f"sessions.{name}-relist-after-append",
            note=f"one turn appended to a ~50 MB {name} file; baseline: orjson-parse the appended lines "
            "(orjson+commit: and one WAL commit of a row the size of the file's index row)",
            target=3.0,
            budget=RELIST_BUDGET,
            setup=lambda: _relist(fmt),
        ),
    ]


_REWINDS = 5_000


@contextmanager
def _rewound() -> Iterator[Contenders]:
    """One transcript rewound `_REWINDS` times to its first answer, each rewind a prompt and
    its answer: as many in-file branches, each a short path beside a long file."""
    records = [prompt("p0", None, "first question"), say("a0", "p0", "first answer")]
    for n in range(1, _REWINDS + 1):
        records += [prompt(f"p{n}", "a0", f"question {n}"), say(f"a{n}", f"p{n}", f"answer {n}")]
    data = jsonl(*records)
    name = "0b3c6f0e-1111-4222-8333-944445555666.jsonl"

    def read() -> object:
        return claude_code.read_transcript(data, name)

    yield Contenders(
        remem=repeat(read), baseline=repeat(lambda: [orjson.loads(x) for x in data.splitlines()])
    )


BENCHMARKS = [
    *_benchmarks("claude-code", "claude-code"),
    *_benchmarks("codex", "codex"),
    Benchmark(
        name="sessions.claude-code-rewinds",
        note=f"read a Claude Code transcript rewound {_REWINDS} times (as many in-file branches); "
        "baseline: orjson-parse every line (no target: it measured its square before)",
        target=None,
        budget=Budget(iterations=5, warmup=1),
        setup=_rewound,
    ),
]
