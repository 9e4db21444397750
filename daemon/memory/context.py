"""What an agent loads at every step: Global text, the workspace index, how to read a record.

Two renderings of the same content: `render_context` for a harness that reads record files
itself (`remem memory context`), and `render_agent_context` for agents served over MCP, who
read records through a tool and must never see a path.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..protocol.memory import Record
from .identity import WorkspaceId
from .index import render_index
from .store import MemoryStore

AGENT_READING = (
    "Read a record's full text with the `memory_read` tool (give its name) or the resource "
    "remem://workspace/<name> when its description is relevant to the task. Change memory only "
    "with the `memory_update` tool."
)


def render_context(store: MemoryStore, workspace: WorkspaceId) -> str:
    """Fail loudly (MemoryInvalid) on invalid memory rather than hide part of it from the agent.

    The index is rendered from the records themselves, so a stale `MEMORY.md` on disk never
    misleads the agent.
    """
    global_memory = store.read_global()
    snapshot = store.read_workspace(workspace)
    reading = (
        f"Each record is the file {store.folder(workspace)}/<name>.md; read it when its description "
        "is relevant to the task."
    )
    return compose_context(global_memory.content, snapshot.records, f"for {workspace.cwd}", reading)


def render_agent_context(global_content: str, records: Iterable[Record]) -> str:
    """The same context for an MCP agent: no folder, no path, records read through the server."""
    return compose_context(global_content, records, "of this project", AGENT_READING)


def compose_context(
    global_content: str, records: Iterable[Record], workspace_title: str, reading: str
) -> str:
    global_text = global_content.rstrip("\n") or "(no global memory yet)"
    return (
        "# Global memory\n\n"
        f"{global_text}\n\n"
        f"# Workspace memory {workspace_title}\n\n"
        f"{render_index(records)}\n"
        f"{reading}\n"
    )
