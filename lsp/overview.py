"""`remem/memoryOverview`: Global, one workspace's records and its recent receipts, with health.

One daemon call (`memory/overview`): the daemon judges the memory files and joins the
workspace's newest reviews with their sessions' titles. It judges the files as the editor has
them: the text of every open memory document, unsaved edits included, goes with the call and
stands in for its file, as in live validation.
"""

from __future__ import annotations

from pathlib import Path

from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.protocol.overview import MemoryOverview
from remem.daemon.protocol.rpc import OverviewParams

from .documents import open_documents
from .server import RememServer


async def memory_overview(ls: RememServer, cwd: str) -> MemoryOverview:
    key = WorkspaceId.from_cwd(cwd).key
    global_file = ls.home.global_file
    params = OverviewParams(
        cwd=cwd,
        globalText=_open_texts(ls, global_file.parent).get(global_file.name),
        workspaceTexts=_open_texts(ls, ls.home.workspaces / key),
    )
    return await ls.link.api.memory_overview(params)


def _open_texts(ls: RememServer, folder: Path) -> dict[str, str]:
    """The texts the editor has open in `folder`, by file name: what the user sees."""
    return {path.name: doc.source for path, doc in open_documents(ls).items() if path.parent == folder}
