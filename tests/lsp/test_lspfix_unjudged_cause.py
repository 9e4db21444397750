"""The cause an unjudged folder is told by is where the judgement failed, not a guess from modes.

It was the first path from the home down whose mode `os.access` refused: a `workspaces` folder
that can be passed through but not listed (`chmod 311`) took the blame for a workspace under it
that was refused, and root, whom `os.access` lets through, never met a refused folder at all.

Permissions bind root too here: run as root, the server is started without the capabilities
that let root past them (`CAP_DAC_OVERRIDE`, `CAP_DAC_READ_SEARCH`), and these tests are skipped,
saying why, only where root may not give them up or its server holds them still.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from remem.daemon.home import Home

from .editor import RECORD
from .piped_server import Server, initialize

TEXT = RECORD.format(name="note-a", description="a note", type="project", body="Body.\n")
_PR_CAPBSET_DROP, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_RAISE, _PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 2, 4
_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH = 1, 2
PAST_PERMISSIONS = (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH)
PAST_MASK = sum(1 << capability for capability in PAST_PERMISSIONS)
_LINUX_CAPABILITY_VERSION_3 = 0x20080522


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


_LIBC = ctypes.CDLL(None, use_errno=True)


def _prctl(*arguments: int) -> None:
    if _LIBC.prctl(*arguments, *[0] * (5 - len(arguments))) != 0:
        raise OSError(ctypes.get_errno(), f"prctl{arguments}")


def set_inheritable(change: Callable[[int], int]) -> None:
    """This process's inheritable capabilities set to `change` of them (the first 32, which
    hold both of root's ways past permissions)."""
    header, data = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    if _LIBC.capget(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capget")
    data[0].inheritable = change(data[0].inheritable)
    if _LIBC.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset")


def raise_ambient(capability: int) -> None:
    _prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_RAISE, capability)


def _bound_by_permissions() -> None:
    """In the server's process before it starts: root's way past permissions dropped from every
    set the program it runs takes capabilities from. Root's program is permitted what the
    bounding set holds, and besides what the inheritable and the ambient sets hold, so where
    the runner's hold them (older Docker, some CI) the bounding set alone let them through."""
    _prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL)
    set_inheritable(lambda held: held & ~PAST_MASK)
    for capability in PAST_PERMISSIONS:
        _prctl(_PR_CAPBSET_DROP, capability)


def effective(pid: int) -> int:
    """The effective capabilities of the process `pid`, as its status tells."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("CapEff:")).split()[1], 16)


@pytest.fixture
def bound_server(tmp_path: Path) -> Iterator[Server]:
    """`remem lsp` over pipes, before `initialize`, that permissions bind even when run as root."""
    home = Home(tmp_path / "home")
    log = tmp_path / "server.log"
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "lsp"]
    privileged = os.geteuid() == 0
    try:
        with log.open("wb") as stderr:
            process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                preexec_fn=_bound_by_permissions if privileged else None,
            )
    except subprocess.SubprocessError as error:  # root without CAP_SETPCAP, in some containers
        pytest.skip(f"run as root, which cannot give up its way past permissions here: {error}")
    try:
        if privileged and (held := effective(process.pid) & PAST_MASK):
            pytest.skip(f"run as root, whose server holds its way past permissions still (CapEff {held:#x})")
        yield Server(process, log)
    finally:
        process.kill()
        process.wait()


@contextmanager
def modes(*set_to: tuple[Path, int]) -> Iterator[None]:
    """Each path given its mode for the test, and back to what it was after (so that it can be
    cleaned up, as any user)."""
    before = [(path, path.stat().st_mode) for path, _ in set_to]
    for path, mode in set_to:
        path.chmod(mode)
    try:
        yield
    finally:
        for path, mode in reversed(before):
            path.chmod(mode)


def _open(talked: Server, uri: str) -> None:
    document = {"uri": uri, "languageId": "markdown", "version": 1, "text": TEXT}
    talked.send({"method": "textDocument/didOpen", "params": {"textDocument": document}})


def _judged(talked: Server, uris: list[str]) -> dict[str, list[str]]:
    """The messages last published to each of `uris`, once every open before is judged."""
    talked.send(
        {"id": 1, "method": "textDocument/documentSymbol", "params": {"textDocument": {"uri": uris[0]}}}
    )
    talked.answer(1)
    heard = [m["params"] for m in talked.heard if m.get("method") == "textDocument/publishDiagnostics"]
    return {
        uri: [d["message"] for d in [p for p in heard if p["uri"] == uri][-1]["diagnostics"]] for uri in uris
    }


@pytest.fixture
def workspaces(tmp_path: Path) -> Path:
    """The home's `workspaces`, holding the workspaces `p1` and `p2`, each with a record."""
    folder = Home(tmp_path / "home").workspaces
    for name in ("p1", "p2"):
        (folder / name).mkdir(parents=True)
        (folder / name / "note-a.md").write_text(TEXT)
    return folder


def test_a_folder_passed_through_though_not_listed_is_not_the_cause_of_what_fails_under_it(
    bound_server: Server, workspaces: Path
) -> None:
    uris = [(workspaces / name / "note-a.md").as_uri() for name in ("p1", "p2")]
    with modes((workspaces, 0o311), (workspaces / "p1", 0), (workspaces / "p2", 0)):
        initialize(bound_server)
        for uri in uris:
            _open(bound_server, uri)
        said = _judged(bound_server, uris)
    for name, uri in zip(("p1", "p2"), uris, strict=True):
        [warning] = said[uri]
        assert f"(Permission denied: {workspaces / name})" in warning, warning
    popups = bound_server.popups()  # two folders refused: two causes
    assert len(popups) == 2, popups
    for name in ("p1", "p2"):
        assert any(f"(Permission denied: {workspaces / name})" in popup for popup in popups), popups


def test_a_folder_that_cannot_be_passed_through_is_one_cause_for_everything_under_it(
    bound_server: Server, workspaces: Path
) -> None:
    uris = [(workspaces / name / "note-a.md").as_uri() for name in ("p1", "p2")]
    with modes((workspaces, 0o600)):  # listed, never searched
        initialize(bound_server)
        for uri in uris:
            _open(bound_server, uri)
        said = _judged(bound_server, uris)
    for uri in uris:
        [warning] = said[uri]
        assert f"(Permission denied: {workspaces})" in warning, warning
    [popup] = bound_server.popups()
    assert f"(Permission denied: {workspaces})" in popup, popup
