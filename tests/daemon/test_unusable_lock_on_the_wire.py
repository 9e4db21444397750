"""A lock file in the way is HOME_UNUSABLE with the lock's `path` and `reason`: a client says it as
it says a LockUnusable met in its own process (the MCP server names the lock file, never the home)."""

from __future__ import annotations

from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.protocol.rpc import HOME_UNUSABLE, RpcError

from .helpers import calls

RECORD = {"name": "one", "description": "d", "type": "feedback", "content": "x\n"}


@pytest.mark.parametrize("kind", ["folder", "symlink"])
def test_an_unusable_agent_lock_travels_with_its_path_and_reason(
    home: Home, tmp_path: Path, kind: str
) -> None:
    cwd = {"cwd": str(tmp_path / "project")}
    [loaded] = calls(home, [("agents/context", cwd)])
    lock = home.locks / f"agent-ws-{WorkspaceId.from_cwd(cwd['cwd']).key}.lock"
    lock.unlink(missing_ok=True)
    if kind == "folder":
        lock.mkdir()
    else:
        lock.symlink_to(tmp_path / "elsewhere.lock")
    update = {"observed": loaded["observed"], "changes": [{"action": "put", "record": RECORD}], **cwd}
    [refused] = calls(home, [("agents/update", {**update, "agent": {"session": "s1"}})])
    assert isinstance(refused, RpcError) and refused.code == HOME_UNUSABLE, refused
    assert refused.message.startswith(f"{lock} cannot be used as a lock file"), refused.message
    assert refused.data == {
        "path": str(lock),
        "reason": "a folder or a symlink stands there",
        "refused": False,
    }
