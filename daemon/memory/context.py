"""What an agent loads at every step: Global text, the workspace index, where records live."""

from __future__ import annotations

from .identity import WorkspaceId
from .index import render_index
from .store import MemoryStore


def render_context(store: MemoryStore, workspace: WorkspaceId) -> str:
    """Fail loudly (MemoryInvalid) on invalid memory rather than hide part of it from the agent.

    The index is rendered from the records themselves, so a stale `MEMORY.md` on disk never
    misleads the agent.
    """
    global_memory = store.read_global()
    snapshot = store.read_workspace(workspace)
    folder = store.folder(workspace)
    global_text = global_memory.content.rstrip("\n") or "(no global memory yet)"
    return (
        "# Global memory\n\n"
        f"{global_text}\n\n"
        f"# Workspace memory for {workspace.cwd}\n\n"
        f"{render_index(snapshot.records)}\n"
        f"Each record is the file {folder}/<name>.md; read it when its description is "
        "relevant to the task.\n"
    )
