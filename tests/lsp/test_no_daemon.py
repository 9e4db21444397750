"""`remem --no-daemon lsp` starts no daemon and joins none: it validates, and every request the
daemon would serve is refused once, saying the server was started without it (decision 0507)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient, client_capabilities
from pytest_lsp.client import register_lsp_features

from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths
from tests.scratch import process_folder

from .editor import answer_lens_refreshes, until
from .live import environment, stop_daemon

pytestmark = pytest.mark.asyncio(loop_scope="module")
UNAVAILABLE = -32020


@pytest.fixture(scope="module")
def home() -> Home:
    return Home(process_folder("remem-lsp-no-daemon-") / "home")  # fresh: not even made


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(home: Home) -> AsyncIterator[LanguageClient]:
    client = LanguageClient()
    register_lsp_features(client)
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "--no-daemon", "lsp"]
    await client.start_io(*command, env=environment(home))
    answer_lens_refreshes(client)  # what a server that joined a daemon anyway would ask
    await client.initialize_session(
        types.InitializeParams(capabilities=client_capabilities("visual-studio-code"))
    )
    yield client
    try:
        await client.shutdown_session()
    finally:
        await client.stop()
        if home.state.is_dir():  # a daemon the server should not have started is not left running
            stop_daemon(home)


async def test_a_daemon_request_is_refused_and_no_daemon_starts(client: LanguageClient, home: Home) -> None:
    with pytest.raises(JsonRpcException) as raised:
        await client.protocol.send_request_async("remem/sessionTree", {"cwd": "/projects/demo"})
    assert raised.value.code == UNAVAILABLE
    assert raised.value.message == (
        "the remem daemon's features are off: started with --no-daemon (or REMEM_NO_DAEMON=1), this "
        "language server uses no daemon. Memory files are still validated; for sessions, "
        "consolidation and the Memory view, restart the server with neither: the Remem extension "
        "passes neither itself (it drops REMEM_NO_DAEMON from the editor's environment), so look at "
        "what runs it: the script remem.command names, or another editor's server command and environment"
    )  # not "unset REMEM_NO_DAEMON where the editor starts": the extension never passed it on
    await until(lambda: client.messages)
    [shown] = client.messages
    assert shown.type == types.MessageType.Warning and shown.message == f"remem: {raised.value.message}"

    paths = DaemonPaths(home, layout=False)
    made = [p for p in (paths.status, paths.lock, paths.spawn_lock, paths.log) if p.exists()]
    assert made == [] and not paths.socket.exists()


async def test_memory_files_are_still_validated(client: LanguageClient, home: Home) -> None:
    uri = home.global_file.as_uri()
    item = types.TextDocumentItem(uri=uri, language_id="markdown", version=1, text="x" * 30_000 + "\n")
    client.text_document_did_open(types.DidOpenTextDocumentParams(item))
    await until(lambda: client.diagnostics.get(uri))
    assert [d.code for d in client.diagnostics[uri]] == ["global-too-large"]
    assert not DaemonPaths(home, layout=False).status.exists()
