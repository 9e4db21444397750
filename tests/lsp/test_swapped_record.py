"""A sibling record swapped for a FIFO while the server validates its folder is never waited on.

A record's folder is judged with every sibling read from disk. A FIFO renamed over a sibling
between the lint cache's look at it and its read held the server's main thread for good: no
diagnostics, no answer to anything after. The real server runs here with a hook loaded at its
start (`sitecustomize`, in this server's process only) that renames the FIFO over the sibling
just after the first `stat` or `lstat` of it has seen the regular file: the instant of the race,
every time. The test lets a waiting reader through after a while (`tests.fifo.released`), so a
server that waits fails the test rather than hanging it.
"""

from __future__ import annotations

import os
import sys

import pytest
import pytest_lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.fifo import released
from tests.scratch import hooked_pythonpath

from .editor import begin, codes, end, make_client, open_document, own_home, record, until, workspace_folder
from .live import stopping_daemon

HOME = own_home("remem-lsp-swapped-")
FOLDER = workspace_folder(HOME, "swapped")
SIBLING = FOLDER / "beta.md"
STAGED = HOME.root / "staged-fifo"  # renamed over the sibling at the instant of the race
SWAP_ENV = "REMEM_TEST_SWAP_AFTER_LOOK"
HOOK = """
import os, sys

_path, _staged = os.environ["REMEM_TEST_SWAP_AFTER_LOOK"].split(os.pathsep)
_done = []


def _after_look(look):
    def hooked(name, *args, **kwargs):
        found = look(name, *args, **kwargs)
        if not _done and "lsp" in sys.argv[1:] and isinstance(name, str) and name == _path:
            _done.append(True)
            os.rename(_staged, _path)
        return found

    return hooked


os.stat, os.lstat = _after_look(os.stat), _after_look(os.lstat)
"""


def _server_env() -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": hooked_pythonpath(HOOK, "remem-lsp-swap-hook-"),
        SWAP_ENV: os.pathsep.join([str(SIBLING), str(STAGED)]),
    }


SERVER = [sys.executable, "-m", "remem.daemon", "--home", str(HOME.root), "lsp"]


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=SERVER, server_env=_server_env(), client_factory=make_client)
)
async def client(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    await begin(lsp_client)
    yield
    await end(lsp_client)


stop_the_daemon = stopping_daemon(HOME)


@pytest.mark.asyncio
async def test_a_sibling_swapped_for_a_fifo_as_it_is_read_is_not_waited_on(client: LanguageClient) -> None:
    (FOLDER / "alpha.md").write_text(record("alpha"))
    SIBLING.write_text(record("beta"))
    os.mkfifo(STAGED)
    with released(SIBLING) as fifo:
        uri = open_document(client, FOLDER / "alpha.md", record("alpha", description="Typed"))
        await until(lambda: uri in client.diagnostics)
        assert not fifo.waited, "the server opened the FIFO and waited on it for a writer"
    assert not STAGED.exists() and SIBLING.is_fifo(), "swapped at the instant of the race"
    assert codes(client, uri) == []
    # The server still answers, and the sibling, opened now, is what it is: a FIFO.
    beta = open_document(client, SIBLING, record("beta"))
    await until(lambda: codes(client, beta) == ["remem/not-a-regular-file"])
