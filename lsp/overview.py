"""`remem/memoryOverview`: Global, one workspace's records and its recent receipts, with health.

One daemon call (`memory/overview`): the daemon judges the memory files and joins the
workspace's newest reviews with their sessions' titles. It judges the files as the editor has
them: the text of every open memory document, unsaved edits included, goes with the call and
stands in for its file, as in live validation.

A message to the daemon is at most `MAX_MESSAGE_BYTES`, and JSON escapes each non-ASCII
character (up to 6 bytes for one of UTF-8's 2): a long open record made the call too large to
send, and the view failed on every refresh. The texts that do not fit, the longest first, stay
out of the call; the daemon judges their files as saved.
"""

from __future__ import annotations

import json
from pathlib import Path

from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.protocol.overview import MemoryOverview
from remem.daemon.protocol.rpc import MAX_MESSAGE_BYTES, OverviewParams

from .documents import open_documents
from .server import RememServer

# What a message to the daemon holds beside the texts: its envelope, method and keys (the cwd,
# escaped, is counted apart).
_ENVELOPE_BYTES = 1024


async def memory_overview(ls: RememServer, cwd: str) -> MemoryOverview:
    global_file = ls.home.global_file
    folder = ls.home.workspaces / WorkspaceId.from_cwd(cwd).key
    documents = open_documents(ls).items()
    opened = {path: doc.source for path, doc in documents if path.parent == folder or path == global_file}
    sent = _fitting(opened, MAX_MESSAGE_BYTES - _ENVELOPE_BYTES - len(json.dumps(cwd)))
    params = OverviewParams(
        cwd=cwd,
        globalText=sent.get(global_file),
        workspaceTexts={path.name: text for path, text in sent.items() if path.parent == folder},
    )
    return await ls.link.api.memory_overview(params)


def _fitting(texts: dict[Path, str], room: int) -> dict[Path, str]:
    """The texts whose JSON fits in `room` bytes together, the shortest first."""
    sizes = {path: len(json.dumps(path.name)) + len(json.dumps(text)) + 2 for path, text in texts.items()}
    sent: dict[Path, str] = {}
    for path in sorted(texts, key=sizes.__getitem__):
        room -= sizes[path]
        if room < 0:
            break
        sent[path] = texts[path]
    return sent
