"""remem's MCP server (`remem mcp`) as the real Claude Code and Codex CLIs use it (docs/agents.md).

Each harness is registered as docs/agents.md says — Claude Code with ``claude mcp add``, Codex
with ``[mcp_servers.remem]`` in ``config.toml`` — and run headless against a scripted fake
model that calls remem's tools by the names the harness advertised. What the harness sent the
model next (the tool's result) and what landed in the test's remem home are checked.

The server runs with ``--no-daemon`` in a fresh home per test (``REMEM_HOME`` in the server's
environment, set through the harness's own registration), so no daemon outlives a test.

What each harness needs:
- Claude Code (`claude -p`): ``--allowedTools mcp__remem__<tool>`` (or ``mcp__remem`` for all of
  them), else the call is refused as not granted. It names the tools ``mcp__remem__<tool>`` and by
  default defers them behind its ToolSearch (listed by name in a system message, not in
  ``tools``); a direct call still reaches the server. ``ENABLE_TOOL_SEARCH=false`` sends the
  schemas in ``tools``, exactly as remem declares them.
- Codex (`codex exec`): advertises one ``namespace`` tool ``mcp__remem`` holding the four
  functions; the model calls ``memory_context`` with ``namespace: mcp__remem``. ``codex exec``
  sends the first request without waiting for MCP servers still starting, so remem's tools can be
  missing from it (remem takes over a second to answer ``initialize``): ``required = true`` makes
  Codex wait. `codex exec` never asks for approval, and outside ``--sandbox
  danger-full-access`` (the helper's default) a tool not marked read-only needs it:
  memory_update is refused unless ``[mcp_servers.remem.tools.memory_update]`` has
  ``approval_mode = "approve"``.
- Both give the model a tool's structured content, not its text, when it declares an output
  schema: memory_update's outcome and credential warnings are in it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from remem.agents.server import INSTRUCTIONS
from remem.agents.tools import TOOLS
from remem.daemon.cli import cli
from remem.daemon.home import Home

from .claude import ClaudeCode
from .codex import Codex
from .fake_anthropic import FakeAnthropic, tool_uses
from .fake_anthropic import text as say
from .fake_responses import FakeResponses, FunctionCalls, function_calls
from .fake_responses import text as answer
from .toolchain import RUN_TIMEOUT

pytestmark = pytest.mark.slow

REMEM = Path(sys.executable).with_name("remem")  # the console script docs/agents.md registers
NAMES = sorted(tool.name for tool in TOOLS)
SEEDED = {
    "action": "put",
    "record": {
        "name": "prefer-uv",
        "description": "Use uv, not pip",
        "type": "feedback",
        "content": "The user installs with uv-zebra-42.\n",
    },
}
INDEX_LINE = "- [prefer-uv](prefer-uv.md) — Use uv, not pip"
NEW = {
    "name": "run-tests",
    "description": "How this project runs its tests",
    "type": "project",
    "content": "Run `pytest -q`; marker giraffe-7.\n",
}
COMMITTED = {  # memory_update's structured content, as the model gets it
    "scope": "workspace",
    "changes": 1,
    "message": "Committed 1 change(s) to this project's memory.",
    "warnings": [],
}
LEAKY = {
    "name": "deploy",
    "description": "How to deploy",
    "type": "project",
    "content": "How to deploy.\n\nexport API_KEY=abc123def456\n",
}


# -- the remem home, through the remem CLI ------------------------------------------------------


def _remem(home: Home, *args: str) -> str:
    done = CliRunner().invoke(cli, ["--home", str(home.root), "--no-daemon", *args], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    return done.stdout


def _show(home: Home, project: Path) -> dict[str, Any]:
    return json.loads(_remem(home, "memory", "show", "--cwd", str(project), "--json"))


def _seed(home: Home, project: Path, tmp_path: Path) -> None:
    """One record in `project`'s memory, committed by `remem memory apply`."""
    revision = _show(home, project)["workspace"]["revision"]
    changes = tmp_path / "seed.json"
    changes.write_text(json.dumps([SEEDED]))
    _remem(
        home,
        "memory",
        "apply",
        "--cwd",
        str(project),
        "--expected-revision",
        revision,
        "--changes",
        str(changes),
    )


def _records(home: Home, project: Path) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in _show(home, project)["workspace"]["records"]}


def _audit_clients(home: Home) -> list[str]:
    return [
        json.loads(p.read_text())["agent"].get("client", "") for p in home.root.glob("memory/audit/*.json")
    ]


def _server_args() -> list[str]:
    if not REMEM.exists():
        pytest.skip(f"no remem console script at {REMEM} (pip install -e .)")
    return ["--no-daemon", "mcp"]


# -- Claude Code -----------------------------------------------------------------------------------


@dataclass
class Claude:
    cc: ClaudeCode
    fake: FakeAnthropic
    home: Home

    def register(self) -> None:
        """`claude mcp add` as docs/agents.md says (local scope), with the test's home and no daemon."""
        add = [str(self.cc.executable), "mcp", "add", "remem", "-e", f"REMEM_HOME={self.home.root}", "--"]
        done = self._run([*add, str(REMEM), *_server_args()])
        assert done.returncode == 0, done.stderr + done.stdout

    def run(self, prompt: str, *allowed: str, env: dict[str, str] | None = None) -> dict[str, Any]:
        args = [str(self.cc.executable), "-p", prompt, "--output-format", "json", "--allowedTools", *allowed]
        # Claude Code asks the model without waiting for its MCP servers unless told to: on a
        # loaded machine the first request offered no remem tool (docs/agents.md).
        done = self._run(args, {"MCP_CONNECTION_NONBLOCKING": "false", **(env or {})})
        assert done.returncode == 0, done.stderr[-2000:] + done.stdout[-2000:]
        assert done.stderr == "", done.stderr
        return dict(json.loads(done.stdout))

    def _run(self, args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            args,
            cwd=self.cc.cwd,
            env={**self.cc.env(), **(env or {})},
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
        )


@pytest.fixture
def claude(home: Home, tmp_path: Path) -> Iterator[Claude]:
    with FakeAnthropic() as fake:
        runner = Claude(ClaudeCode(tmp_path / "claude", fake), fake, home)
        runner.register()
        yield runner


def _tool_result(request: dict[str, Any], tool_use_id: str) -> dict[str, Any]:
    """The ``tool_result`` block answering `tool_use_id` in the request's last (user) message."""
    [block] = [
        b
        for b in request["messages"][-1]["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result" and b["tool_use_id"] == tool_use_id
    ]
    return dict(block)


def _result_text(block: dict[str, Any]) -> str:
    content = block["content"]
    if isinstance(content, str):
        return content
    return "".join(part["text"] for part in content if part.get("type") == "text")


def test_claude_code_calls_memory_context_and_gets_the_projects_memory(
    claude: Claude,
    home: Home,
    tmp_path: Path,
) -> None:
    _seed(home, claude.cc.cwd, tmp_path)
    claude.fake.reply(tool_uses(("mcp__remem__memory_context", {})), say("memory loaded"))
    result = claude.run("load memory", "mcp__remem__memory_context")
    first, second = claude.fake.requests
    assert all(f"mcp__remem__{name}" in json.dumps(first) for name in NAMES)  # offered (deferred)
    assert f"## remem\\n{INSTRUCTIONS}" in json.dumps(first)  # the server's instructions
    block = _tool_result(second, "toolu_fake_1_0")
    text = _result_text(block)
    assert not block.get("is_error"), text
    assert "# Workspace memory of this project" in text and INDEX_LINE in text
    assert "`memory_read` tool" in text
    assert str(home.root) not in text and str(claude.cc.cwd) not in text  # no paths reach the agent
    assert result["result"] == "memory loaded" and result["permission_denials"] == []


def test_claude_code_refuses_an_mcp_tool_it_was_not_allowed(claude: Claude) -> None:
    claude.fake.reply(tool_uses(("mcp__remem__memory_context", {})), say("refused"))
    result = claude.run("load memory", "Read")
    block = _tool_result(claude.fake.requests[1], "toolu_fake_1_0")
    assert block["is_error"] and "permission" in _result_text(block)
    assert [d["tool_name"] for d in result["permission_denials"]] == ["mcp__remem__memory_context"]


def test_claude_code_records_memory_with_memory_update(
    claude: Claude,
    home: Home,
    tmp_path: Path,
) -> None:
    _seed(home, claude.cc.cwd, tmp_path)
    update = {"changes": [{"action": "put", "record": NEW}]}
    claude.fake.reply(
        tool_uses(("mcp__remem__memory_context", {})),
        tool_uses(("mcp__remem__memory_update", update)),
        say("remembered"),
    )
    # Tool search off: the schemas go in `tools`, as remem declares them; `mcp__remem` allows all.
    claude.run("remember how tests run", "mcp__remem", env={"ENABLE_TOOL_SEARCH": "false"})
    first, _, third = claude.fake.requests
    offered = {t["name"]: t["input_schema"] for t in first["tools"] if t["name"].startswith("mcp__remem__")}
    assert offered == {f"mcp__remem__{tool.name}": tool.input_schema for tool in TOOLS}
    block = _tool_result(third, "toolu_fake_2_0")
    assert not block.get("is_error"), _result_text(block)
    # Claude Code gives the model the structured content, not the text, of a tool with an
    # output schema.
    assert json.loads(_result_text(block)) == COMMITTED
    records = _records(home, claude.cc.cwd)
    assert set(records) == {"prefer-uv", "run-tests"}
    assert {k: records["run-tests"][k] for k in NEW} == NEW
    [client] = _audit_clients(home)
    assert client.startswith("claude-code/")


def test_claude_code_shows_the_model_memory_updates_credential_warning(
    claude: Claude,
    home: Home,
) -> None:
    update = {"changes": [{"action": "put", "record": LEAKY}]}
    claude.fake.reply(
        tool_uses(("mcp__remem__memory_context", {})),
        tool_uses(("mcp__remem__memory_update", update)),
        say("remembered"),
    )
    claude.run("remember how to deploy", "mcp__remem")
    block = _tool_result(claude.fake.requests[2], "toolu_fake_2_0")
    assert "deploy" in _records(home, claude.cc.cwd)  # committed, whatever the model is told
    assert "looks like a credential" in _result_text(block)


# -- Codex -----------------------------------------------------------------------------------------

NAMESPACE = "mcp__remem"


def mcp_calls(*calls: tuple[str, dict[str, Any]]) -> FunctionCalls:
    return function_calls(*calls, namespace=NAMESPACE)


def _register_codex(cx: Codex, home: Home) -> None:
    """docs/agents.md's ``[mcp_servers.remem]``, with the test's home and no daemon, plus
    ``required = true`` so that `codex exec` waits for the server before asking the model."""
    args = json.dumps(_server_args())  # no --cwd: Codex starts it in the folder it works in
    table = (
        f"\n[mcp_servers.remem]\ncommand = {json.dumps(str(REMEM))}\nargs = {args}\n"
        f"env = {{ REMEM_HOME = {json.dumps(str(home.root))} }}\nrequired = true\n"
    )
    _append_config(cx, table)


def _approve_updates(cx: Codex) -> None:
    """Let memory_update (not read-only) run without asking, whatever the sandbox."""
    _append_config(cx, '\n[mcp_servers.remem.tools.memory_update]\napproval_mode = "approve"\n')


def _append_config(cx: Codex, toml: str) -> None:
    config = cx.codex_home / "config.toml"
    config.write_text(config.read_text() + toml)


@pytest.fixture
def codex(home: Home, tmp_path: Path) -> Iterator[tuple[Codex, FakeResponses]]:
    with FakeResponses() as fake:
        cx = Codex(tmp_path / "codex", fake)
        _register_codex(cx, home)
        yield cx, fake


def _offered(request: dict[str, Any]) -> dict[str, dict[str, Any]]:
    [namespace] = [t for t in request["tools"] if t.get("type") == "namespace" and t["name"] == NAMESPACE]
    return {t["name"]: t for t in namespace["tools"]}


def _output(request: dict[str, Any], call_id: str) -> str:
    """The text of the ``function_call_output`` answering `call_id` (Codex prefixes a wall time)."""
    [item] = [i for i in request["input"] if i["type"] == "function_call_output" and i["call_id"] == call_id]
    output = item["output"]
    if isinstance(output, str):
        return output
    return "\n".join(part["text"] for part in output if part.get("type") == "input_text")


def test_codex_calls_memory_context_and_gets_the_projects_memory(
    codex: tuple[Codex, FakeResponses],
    home: Home,
    tmp_path: Path,
) -> None:
    cx, fake = codex
    _seed(home, cx.cwd, tmp_path)
    fake.reply(mcp_calls(("memory_context", {})), answer("memory loaded"))
    run = cx.exec("--sandbox", "read-only", "load memory")  # a read-only tool needs no approval
    first, second = fake.requests
    [namespace] = [t for t in first["tools"] if t.get("name") == NAMESPACE]
    assert namespace["type"] == "namespace" and namespace["description"] == INSTRUCTIONS
    offered = _offered(first)
    assert sorted(offered) == NAMES
    assert offered["memory_read"]["parameters"]["required"] == ["name"]
    text = _output(second, "call_fake_1_0")
    assert "# Workspace memory of this project" in text and INDEX_LINE in text, text
    assert "unsupported call" not in text and str(home.root) not in text
    assert "mcp: remem/memory_context (completed)" in run.stderr


def test_codex_records_memory_with_memory_update(
    codex: tuple[Codex, FakeResponses],
    home: Home,
    tmp_path: Path,
) -> None:
    cx, fake = codex
    _seed(home, cx.cwd, tmp_path)
    update = {"changes": [{"action": "put", "record": NEW}]}
    fake.reply(mcp_calls(("memory_context", {})), mcp_calls(("memory_update", update)), answer("remembered"))
    _approve_updates(cx)
    cx.exec("--sandbox", "workspace-write", "remember how tests run")
    text = _output(fake.requests[2], "call_fake_2_0")
    # Codex, too, gives the model the structured content of a tool with an output schema.
    assert json.loads(text.split("Output:", 1)[1]) == COMMITTED, text
    records = _records(home, cx.cwd)
    assert set(records) == {"prefer-uv", "run-tests"}
    assert {k: records["run-tests"][k] for k in NEW} == NEW
    [client] = _audit_clients(home)
    assert client.startswith("codex-mcp-client/")


def test_codex_exec_refuses_memory_update_in_a_sandbox_unless_approved_in_config(
    codex: tuple[Codex, FakeResponses],
    home: Home,
) -> None:
    """`codex exec` never asks (its approval policy is always ``never``), and a tool not marked
    read-only needs approval outside ``danger-full-access``: refused, nothing written."""
    cx, fake = codex
    update = {"changes": [{"action": "put", "record": NEW}]}
    fake.reply(mcp_calls(("memory_context", {})), mcp_calls(("memory_update", update)), answer("refused"))
    cx.exec("--sandbox", "workspace-write", "remember how tests run")
    assert "requires approval" in _output(fake.requests[2], "call_fake_2_0")
    assert _records(home, cx.cwd) == {} and _audit_clients(home) == []


def test_codex_shows_the_model_memory_updates_credential_warning(
    codex: tuple[Codex, FakeResponses],
    home: Home,
) -> None:
    cx, fake = codex
    update = {"changes": [{"action": "put", "record": LEAKY}]}
    fake.reply(mcp_calls(("memory_context", {})), mcp_calls(("memory_update", update)), answer("remembered"))
    cx.exec("remember how to deploy")
    assert "deploy" in _records(home, cx.cwd)  # committed, whatever the model is told
    assert "looks like a credential" in _output(fake.requests[2], "call_fake_2_0")
