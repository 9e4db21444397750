"""The module-scoped fixtures of a module that consolidates from the editor (`test_consolidate*`):
the fake model server, a home configured for it, and the real language server with the daemon
it starts, as the editor drives it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import pytest_asyncio

from remem.daemon.home import Home
from tests.consolidation.conftest import Source, configure, write_source
from tests.fake_openai import FakeOpenAI
from tests.lsp.live import SAFETY_NET, Editor, session_root, start_editor, stop_editor


def consolidating(folder: str) -> tuple[Any, Any, Any]:
    """The fixtures `fake`, `home` (in a temporary folder named `folder`) and `editor`, for a
    module to bind at its top level."""

    @pytest.fixture(scope="module", name="fake")
    def fake() -> Iterator[FakeOpenAI]:
        with FakeOpenAI(api_key="sk-test") as server:
            yield server

    @pytest.fixture(scope="module", name="home")
    def home(fake: FakeOpenAI, tmp_path_factory: pytest.TempPathFactory) -> Home:
        home = Home(tmp_path_factory.mktemp(folder) / "home")
        configure(home, fake, session_root(home), timeout_seconds=60)
        with home.settings_file.open("a") as settings:
            settings.write(SAFETY_NET)
        return home

    @pytest_asyncio.fixture(scope="module", loop_scope="module", name="editor")
    async def editor(home: Home) -> AsyncIterator[Editor]:
        editor = await start_editor(home)
        yield editor
        await stop_editor(editor)

    return fake, home, editor


def source(home: Home, seed: int) -> Source:
    return write_source(session_root(home), str(home.root.parent / "project"), seed=seed)
