"""Fixtures for modules that test against one consolidated home through a live editor.

A module that asks for `editor` without defining its own gets a server on a home holding one
session a real consolidation reviewed (`receipted.consolidated`), shared by the module's tests.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from tests.lsp.live import Editor, start_editor, stop_editor
from tests.lsp.receipted import Receipted, consolidated, new_home


@pytest.fixture(scope="module")
def reviewed(request: pytest.FixtureRequest) -> Receipted:
    module = request.module.__name__.rsplit(".", 1)[-1]
    return consolidated(new_home(f"remem-lsp-{module}-"))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def editor(reviewed: Receipted) -> AsyncIterator[Editor]:
    editor = await start_editor(reviewed.home)
    yield editor
    await stop_editor(editor)
