"""Language-server benchmarks: a keystroke's `didChange` until its `publishDiagnostics` arrives.

remem's server (`remem lsp`) and a bare pygls server whose handler publishes an empty list run
as processes on stdio and get the same document and the same edits through the same client, so
the difference is what validating the document costs the editor. The edits alternate between
two valid texts of the same size.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO, Any

from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.record import BODY_MAX_BYTES, GLOBAL_MAX_BYTES, RECORDS_MAX, render_record
from remem.daemon.memory.stamps import RACY_NS
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.memory import PutChange, Record

from . import corpus
from .harness import Benchmark, Budget, Call, Contenders, Prepare

_RECORD = "release-checklist"
_CWD = "/home/dev/projects/bench"

# The baseline: pygls's own server answering each change with an empty list of diagnostics.
_EMPTY_SERVER = """
from lsprotocol import types
from pygls.lsp.server import LanguageServer
server = LanguageServer("empty", "1")
@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def changed(ls, params):
    ls.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(
            uri=params.text_document.uri, version=params.text_document.version, diagnostics=[]
        )
    )
server.start_io()
"""


class _Editor:
    """A minimal LSP client on a server's stdio: framed JSON-RPC, blocking reads."""

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self._out: IO[bytes] = self.process.stdin
        self._in: IO[bytes] = self.process.stdout
        self._version = 1
        hello = {"processId": os.getpid(), "rootUri": None, "capabilities": {}}
        answer = self.request(1, "initialize", hello)
        if "result" not in answer:
            raise RuntimeError(f"{command[-1]} did not initialize: {answer}")
        self.notify("initialized", {})

    def open(self, uri: str, text: str) -> None:
        item = {"uri": uri, "languageId": "markdown", "version": self._version, "text": text}
        self.notify("textDocument/didOpen", {"textDocument": item})

    def change(self, uri: str, text: str) -> Call:
        """The timed call: send the whole new text, wait for the diagnostics of that version
        (earlier ones, like those of opening the document, may still be on their way)."""
        self._version += 1
        params = {"textDocument": {"uri": uri, "version": self._version}, "contentChanges": [{"text": text}]}

        def keystroke() -> object:
            self.notify("textDocument/didChange", params)
            while True:
                message = self._read()
                diagnostics = message.get("method") == "textDocument/publishDiagnostics"
                if diagnostics and message["params"].get("version") == params["textDocument"]["version"]:
                    return message

        return keystroke

    def request(self, id_: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._send({"jsonrpc": "2.0", "id": id_, "method": method, "params": params})
        while True:
            message = self._read()
            if message.get("id") == id_ and "method" not in message:
                return message

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def close(self) -> None:
        self.request(2, "shutdown", {})
        self.notify("exit", {})
        self._out.close()
        self.process.wait(timeout=30)

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        self._out.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        self._out.flush()

    def _read(self) -> dict[str, Any]:
        length = 0
        while (line := self._in.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("ascii").partition(":")
            if name.lower() == "content-length":
                length = int(value)
        if length == 0:
            raise RuntimeError("the server closed its output")
        message: dict[str, Any] = json.loads(self._in.read(length))
        if message.get("method") in ("window/workDoneProgress/create", "client/registerCapability"):
            self._send({"jsonrpc": "2.0", "id": message["id"], "result": None})  # servers wait for these
        return message


@contextmanager
def _round_trips(texts: tuple[str, str], place: Callable[[Home], Path]) -> Iterator[Contenders]:
    """`place(home)` writes the document's first version, `texts[0]`, and returns its path."""
    with tempfile.TemporaryDirectory(prefix="remem-bench-") as folder, ExitStack() as stack:
        home = Home(Path(folder, "home")).ensure_layout()
        uri = place(home).as_uri()
        # As in an editor, the memory files were written a while ago: settled, so cacheable.
        time.sleep(RACY_NS / 1e9)
        env = {**os.environ, "REMEM_HOME": str(home.root), "DSH_HOME": str(Path(folder, "no-dsh"))}
        # Typing follows a window's load, by which time its daemon runs: started here, not by the
        # server on connecting, whose start-up would otherwise share the CPU with the timed calls.
        daemon = [sys.executable, "-m", "remem.daemon", "daemon"]
        stack.callback(lambda: subprocess.run([*daemon, "stop"], env=env, capture_output=True, timeout=60))
        subprocess.run([*daemon, "start"], env=env, capture_output=True, timeout=60, check=True)
        remem_command = [sys.executable, "-m", "remem.daemon", "lsp"]
        editors = [_Editor(remem_command, env), _Editor([sys.executable, "-c", _EMPTY_SERVER], env)]
        for editor in editors:
            stack.callback(editor.close)
            editor.open(uri, texts[0])

        def edits(editor: _Editor) -> Prepare:
            return lambda iteration: editor.change(uri, _keystroke(texts[(iteration + 1) % 2], iteration))

        yield Contenders(remem=edits(editors[0]), baseline=edits(editors[1]))


def _keystroke(text: str, iteration: int) -> str:
    """`text` with its last word replaced by the iteration's number: a text of the same size that
    no earlier edit sent, as with real typing (the server may keep what it parsed before)."""
    word = text.rstrip("\n").rsplit(" ", 1)[1]
    assert word.isascii() and len(word) >= 6, "the corpus text must end in a word to type over"
    return f"{text[: -len(word) - 1]}{iteration % 10 ** len(word):0{len(word)}d}\n"


def _global(home: Home, text: str) -> Path:
    home.global_file.write_text(text, encoding="utf-8")
    return home.global_file


def _committed(home: Home, record: Record, *siblings: Record) -> Path:
    """`record` committed, with `siblings` in the same commit; its path."""
    store = MemoryStore(home)
    workspace = WorkspaceId.from_cwd(_CWD)
    puts = [PutChange(action="put", record=r) for r in (*siblings, record)]
    store.commit_workspace(workspace, store.read_workspace(workspace).revision, puts)
    return store.folder(workspace) / f"{record.name}.md"


@contextmanager
def _global_round_trip() -> Iterator[Contenders]:
    texts = (corpus.markdown(GLOBAL_MAX_BYTES), corpus.markdown(GLOBAL_MAX_BYTES, start=1))
    with _round_trips(texts, lambda home: _global(home, texts[0])) as contenders:
        yield contenders


@contextmanager
def _record_round_trip() -> Iterator[Contenders]:
    first, second = (corpus.record(_RECORD, corpus.markdown(BODY_MAX_BYTES, start=s)) for s in (0, 1))
    texts = (render_record(first), render_record(second))
    with _round_trips(texts, lambda home: _committed(home, first)) as contenders:
        yield contenders


@contextmanager
def _full_workspace_round_trip() -> Iterator[Contenders]:
    """The 8 KiB record among siblings up to the workspace's limit: each keystroke re-judges a
    folder of `RECORDS_MAX` records (duplicate names, the index in sync)."""
    first, second = (corpus.record(_RECORD, corpus.markdown(BODY_MAX_BYTES, start=s)) for s in (0, 1))
    siblings = [
        corpus.record(f"note-{n:03d}", corpus.markdown(1024, start=n)) for n in range(RECORDS_MAX - 1)
    ]
    texts = (render_record(first), render_record(second))
    with _round_trips(texts, lambda home: _committed(home, first, *siblings)) as contenders:
        yield contenders


def _placed(home: Home, name: str, text: str) -> Path:
    """A record file written as is, next to a committed valid sibling: errors included."""
    path = _committed(home, corpus.record("sibling", corpus.markdown(1024))).with_name(f"{name}.md")
    path.write_text(text, encoding="utf-8")
    return path


def _broken(record: Record) -> str:
    """The record's text with three errors a person makes: a capitalised type, a title for a
    name, a description over two lines."""
    text = render_record(record).replace("type: project", "type: Project", 1)
    return text.replace(f"name: {record.name}", "name: Release Checklist", 1).replace(
        "description: ", "description: |\n  first line\n  ", 1
    )


@contextmanager
def _record_errors_round_trip() -> Iterator[Contenders]:
    texts = tuple(_broken(corpus.record(_RECORD, corpus.markdown(BODY_MAX_BYTES, start=s))) for s in (0, 1))
    with _round_trips((texts[0], texts[1]), lambda home: _placed(home, _RECORD, texts[0])) as contenders:
        yield contenders


@contextmanager
def _global_1m_round_trip() -> Iterator[Contenders]:
    texts = (corpus.markdown(_MIB), corpus.markdown(_MIB, start=1))
    with _round_trips(texts, lambda home: _global(home, texts[0])) as contenders:
        yield contenders


@contextmanager
def _record_1m_round_trip() -> Iterator[Contenders]:
    texts = tuple(render_record(corpus.record(_RECORD, corpus.markdown(_MIB, start=s))) for s in (0, 1))
    with _round_trips((texts[0], texts[1]), lambda home: _placed(home, _RECORD, texts[0])) as contenders:
        yield contenders


_MIB = 1 << 20
_NOTE = "a didChange of the whole text until the server's publishDiagnostics for it, over stdio; baseline: "
BENCHMARKS = [
    Benchmark(
        name="lsp.diagnostics-global-24k",
        note=_NOTE + "a pygls server publishing an empty list, same client and edits (GLOBAL.md, 24 KiB)",
        target=1.5,
        budget=Budget(iterations=400, warmup=40),
        setup=_global_round_trip,
    ),
    Benchmark(
        name="lsp.diagnostics-record-8k",
        note=_NOTE + "the same empty-list server (a record with an 8 KiB body)",
        target=1.5,
        budget=Budget(iterations=400, warmup=40),
        setup=_record_round_trip,
    ),
    Benchmark(
        name="lsp.diagnostics-record-200",
        note=_NOTE + "the same empty-list server (the 8 KiB record in a workspace of 200 records, "
        "the limit: the typed record is judged against the folder's last reading)",
        target=1.5,
        budget=Budget(iterations=400, warmup=40),
        setup=_full_workspace_round_trip,
    ),
    Benchmark(
        name="lsp.diagnostics-record-errors",
        note=_NOTE + "the same empty-list server (the 8 KiB record with a capitalised type, a name "
        "that is not a slug and a two-line description: three errors on every keystroke)",
        target=1.5,
        budget=Budget(iterations=400, warmup=40),
        setup=_record_errors_round_trip,
    ),
    Benchmark(
        name="lsp.diagnostics-global-1m",
        note=_NOTE + "the same empty-list server (GLOBAL.md of 1 MiB: over its size limit)",
        target=1.5,
        budget=Budget(iterations=60, warmup=6),
        setup=_global_1m_round_trip,
    ),
    Benchmark(
        name="lsp.diagnostics-record-1m",
        note=_NOTE + "the same empty-list server (a record with a 1 MiB body: over its size limit)",
        target=1.5,
        budget=Budget(iterations=60, warmup=6),
        setup=_record_1m_round_trip,
    ),
]
