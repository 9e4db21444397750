"""What an agent loads at every step: Global text, the workspace index, how to read a record.

Two renderings of the same content: `render_context` for a harness that reads record files
itself (`remem memory context`), and `render_agent_context` for agents served over MCP, who
read records through a tool and must never see a path. Either shows as much of the index as an
agent reads of a `MEMORY.md` (`lines_seen`), and only as much as keeps the whole text within
what a harness shows; the records left out are named, to be read by name (decisions 0533, 0538).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..protocol.memory import Record
from .identity import WorkspaceId
from .index import entry_names, lines_seen, render_index
from .store import MemoryStore

AGENT_READING = (
    "Read a record's full text with the `memory_read` tool (give its name) or the resource "
    "remem://workspace/<name> when its description is relevant to the task. Change memory only "
    "with the `memory_update` tool."
)
# Claude Code (2.1.337) keeps a tool result over 50 000 characters out of the conversation (its
# default result-size limit): the model sees a 2 000-character preview and a file path. UTF-8
# bytes are never fewer than the UTF-16 units it counts, so an answer within this is shown whole.
AGENT_CONTEXT_MAX_BYTES = 48_000
LEFT_OUT = (
    "\nThis index leaves out {count} record(s), to keep this answer within what agents are shown: "
    "{names}. Read any of them {how} when its name suggests it matters.\n"
)
AGENT_READS_ONE = "with `memory_read`"
FILE_READS_ONE = "(its file is <name>.md, in the folder below)"


def render_context(store: MemoryStore, workspace: WorkspaceId) -> str:
    """Fail loudly (MemoryInvalid) on invalid memory rather than hide part of it from the agent.

    The index is rendered from the records themselves, so a stale `MEMORY.md` on disk never
    misleads the agent; it is cut as the MCP agent's is, its records left out named.
    """
    global_memory = store.read_global()
    snapshot = store.read_workspace(workspace)
    reading = (
        f"Each record is the file {store.folder(workspace)}/<name>.md; read it when its description "
        "is relevant to the task."
    )
    title = f"for {workspace.cwd}"
    return _fit(global_memory.content, snapshot.records, title, reading, FILE_READS_ONE)[0]


def render_agent_context(global_content: str, records: Iterable[Record]) -> str:
    """The same context for an MCP agent: no folder, no path, records read through the server."""
    return fit_agent_context(global_content, records)[0]


def fit_agent_context(global_content: str, records: Iterable[Record]) -> tuple[str, list[str]]:
    """The MCP agent's context and the records its index leaves out (`_fit`)."""
    return _fit(global_content, records, "of this project", AGENT_READING, AGENT_READS_ONE)


def _fit(
    global_content: str, records: Iterable[Record], title: str, reading: str, how: str
) -> tuple[str, list[str]]:
    """A context and the records its index leaves out: those past the lines an agent reads of
    an index, and more, from the end, while the text is over `AGENT_CONTEXT_MAX_BYTES`. Global
    is never cut: at most 24 KiB, it always fits. `how`: how to read a record left out."""
    index = render_index(records)
    # Lines as `lines_seen` counts them: a description's U+2028 is no line break of the index.
    lines = [f"{line}\n" for line in index.removesuffix("\n").split("\n")]
    cut = lines_seen(index)
    while True:
        left_out = entry_names(lines[cut:])
        shown = "".join(lines[:cut]) + _left_out(left_out, how)
        text = compose_context(global_content, shown, title, reading)
        if cut == 0 or len(text.encode("utf-8")) <= AGENT_CONTEXT_MAX_BYTES:
            return text, left_out
        cut -= 1


def _left_out(names: list[str], how: str) -> str:
    if not names:
        return ""
    return LEFT_OUT.format(count=len(names), names=", ".join(f"`{name}`" for name in names), how=how)


def compose_context(global_content: str, index: str, workspace_title: str, reading: str) -> str:
    global_text = global_content.rstrip("\n") or "(no global memory yet)"
    return f"# Global memory\n\n{global_text}\n\n# Workspace memory {workspace_title}\n\n{index}\n{reading}\n"
