"""Claude Code sessions whose working folder's name is not plain ASCII, as the real CLI files them.

Claude Code names a session's project folder after its cwd with every UTF-16 code unit but
`[A-Za-z0-9]` turned into `-` (an emoji, two code units, is two), truncated past 200 of them
with a hash appended. A workspace's listing reads only the folders its cwd can have produced:
counted as Python counts characters, a cwd holding an emoji produced another name, so its
sessions were listed nowhere but in the root's whole listing. remem must list them for the
workspace, and its fork must be one `claude --resume` continues with the inherited prefix.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli

from .claude import ClaudeCode, ClaudeRun
from .fake_anthropic import FakeAnthropic, text
from .requests import comparable

pytestmark = pytest.mark.slow


@dataclass
class Workspace:
    cc: ClaudeCode
    parent: ClaudeRun
    second: list[Any]  # the messages the parent sent the model with its second prompt


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


def _workspace(root: Path, fake: FakeAnthropic, cwd: Path) -> Workspace:
    cc = ClaudeCode(root, fake)
    cc.cwd = cwd
    cwd.mkdir(parents=True)
    fake.reply(text("first answer"))
    parent = cc.run("first question")
    fake.reply(text("second answer"))
    cc.run("second question", resume=parent.session_id)
    return Workspace(cc, parent, fake.requests[-1]["messages"])


@pytest.fixture(scope="module", params=["short", "truncated"])
def workspace(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, fake: FakeAnthropic
) -> Workspace:
    root = tmp_path_factory.mktemp("cwd-names").resolve()
    named = root / "wörk dir 😀 ü"
    # Past 200 code units, with the emoji early so that counting it once shifts the first 200.
    cwd = named if request.param == "short" else named / ("x" * 120) / ("y" * 120)
    return _workspace(root, fake, cwd)


def sessions(home: Path, root: Path, *args: str) -> dict[str, Any]:
    done = CliRunner().invoke(cli, ["--home", str(home), "sessions", *args, "--root", str(root), "--json"])
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_a_workspace_whose_cwd_has_an_emoji_lists_and_forks_its_claude_code_session(
    workspace: Workspace, fake: FakeAnthropic, tmp_path: Path
) -> None:
    cc, parent = workspace.cc, workspace.parent
    folder = parent.transcript.parent.name
    assert "😀" not in folder and "dir----" in folder  # the emoji is two dashes in the folder name
    home, root = tmp_path / "home", cc.projects
    listed = sessions(home, root, "list", "--cwd", str(cc.cwd))
    assert [s["id"] for s in listed["sessions"]] == [parent.session_id] and listed["errors"] == []
    assert listed["sessions"][0]["cwd"] == str(cc.cwd)
    turns = sessions(home, root, "turns", parent.session_id)["turns"]
    assert [t["user"] for t in turns] == ["first question", "second question"]
    parent_bytes = parent.transcript.read_bytes()

    made = sessions(
        home, root, "fork", parent.session_id, "--op-id", "op-cwd", "--at", str(turns[0]["endSeq"])
    )
    assert made["cwd"] == str(cc.cwd)
    assert [s["id"] for s in sessions(home, root, "list", "--cwd", str(cc.cwd))["sessions"]] == [
        parent.session_id,
        made["child"],
    ]
    fake.reply(text("child answer"))
    child = cc.run("child question", resume=made["child"])
    sent = fake.requests[-1]["messages"]
    assert child.session_id == made["child"] and child.transcript.parent == parent.transcript.parent
    assert comparable(sent, "child question") == comparable(workspace.second, "second question")
    assert parent.transcript.read_bytes() == parent_bytes
