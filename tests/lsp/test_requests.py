"""The custom requests end to end: the real server, the daemon it starts, real sessions and memory.

The home holds one session that a real consolidation reviewed (a committed receipt that put the
record `prefer-uv`), so every answer is checked against data the daemon and the store wrote.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import quote, unquote

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from remem.daemon.sessions.projection import Projection
from remem.lsp.features.requests import HISTORY_LIMIT
from tests.lsp.editor import close, codes, open_document, record, until
from tests.lsp.live import Editor
from tests.lsp.receipted import NAME, Receipted
from tests.memory.factory import put
from tests.sessions.factory import SessionSpec, build_session, fork_session, write_session

pytestmark = pytest.mark.asyncio(loop_scope="module")
NODE_KEYS = {
    "id",
    "title",
    "kind",
    "forkTurn",
    "createdAt",
    "live",
    "archived",
    "flags",
    "review",
    "format",  # the harness that wrote it: the tree's badge
    "problems",  # lines its reader skipped or flagged: the tree's problem badge
    "defaultTitle",  # a fork still titled as forking titled it: named by its own prompt instead
    "parent",
    "depth",
}


async def test_the_session_tree_is_the_daemons_flat_tree(editor: Editor, reviewed: Receipted) -> None:
    [node] = (await editor.request("remem/sessionTree", {"cwd": reviewed.cwd}))["nodes"]
    assert set(node) == NODE_KEYS
    assert (node["id"], node["title"], node["kind"]) == (reviewed.session, reviewed.title, "root")
    assert node["format"] == "dsh"
    assert (node["parent"], node["depth"], node["live"], node["archived"]) == (None, 0, False, False)
    assert node["review"]["state"] == "consolidated"
    assert "searched" not in await editor.request("remem/sessionTree", {"cwd": reviewed.cwd})


async def test_a_fork_carries_the_first_line_of_its_own_first_prompt(
    editor: Editor, reviewed: Receipted, tmp_path: Path
) -> None:
    cwd = str(tmp_path / "branched")
    parent = build_session(SessionSpec(seed=31, turns=3, cwd=cwd))
    child = fork_session(parent, SessionSpec(seed=32, turns=2, cwd=cwd), after_turn=2)
    write_session(reviewed.root, parent)
    write_session(reviewed.root, child)
    own = next(t for t in Projection().fold(child.events).turns if t.turn > 2)
    expected = own.user.strip().splitlines()[0][:80]
    nodes = {n["id"]: n for n in (await editor.request("remem/sessionTree", {"cwd": cwd}))["nodes"]}
    assert nodes[str(child.header.id)]["ownPrompt"] == expected
    assert "ownPrompt" not in nodes[str(parent.header.id)]  # only forks need telling apart


async def test_a_cold_listing_tells_how_far_indexing_is(
    editor: Editor, reviewed: Receipted, tmp_path: Path
) -> None:
    cwd = str(tmp_path / "many")
    for seed in range(40):
        write_session(reviewed.root, build_session(SessionSpec(seed=100 + seed, turns=2, cwd=cwd)))
    editor.heard.clear()
    nodes = (await editor.request("remem/sessionTree", {"cwd": cwd}))["nodes"]
    assert len(nodes) == 40
    await until(lambda: any(n["done"] == n["total"] for n in editor.notes("remem/sessionsProgress")))
    notes = [n for n in editor.notes("remem/sessionsProgress") if n["cwd"] == cwd]
    assert notes[-1] == {"cwd": cwd, "done": 40, "total": 40}
    assert [n["done"] for n in notes] == sorted(n["done"] for n in notes)
    editor.heard.clear()
    await editor.request("remem/sessionTree", {"cwd": cwd})  # warm: nothing to index
    assert editor.notes("remem/sessionsProgress") == []


async def test_the_overview_judges_open_records_with_their_unsaved_text(
    editor: Editor, reviewed: Receipted
) -> None:
    saved = reviewed.record.read_text()
    uri = open_document(editor.client, reviewed.record, saved.replace("type: feedback", "type: Feedback"))
    try:
        edited = await editor.request("remem/memoryOverview", {"cwd": reviewed.cwd})
        [row] = [r for r in edited["records"] if r["name"] == NAME]
        assert (row["type"], row["valid"], row["problems"]) == ("Feedback", False, 1)
    finally:
        close(editor.client, uri)
    [row] = [r for r in (await editor.request("remem/memoryOverview", {"cwd": reviewed.cwd}))["records"]]
    assert (row["type"], row["valid"]) == ("feedback", True) and reviewed.record.read_text() == saved


async def test_an_empty_tree_says_where_remem_looked(editor: Editor, reviewed: Receipted) -> None:
    elsewhere = await editor.request("remem/sessionTree", {"cwd": str(Path(reviewed.cwd).parent / "other")})
    assert elsewhere["nodes"] == []
    searched = {entry["path"]: entry["exists"] for entry in elsewhere["searched"]}
    assert searched[str(reviewed.root)] is True
    assert searched[str(reviewed.home.sessions)] is True  # remem's own root, where its branches go
    assert str(reviewed.home.memory) not in searched
    assert elsewhere["settingsFile"] == str(reviewed.home.settings_file)


async def test_a_tree_drawn_on_the_last_valid_settings_says_why(editor: Editor, reviewed: Receipted) -> None:
    """While settings.yml is invalid the daemon draws the tree by its last valid settings, and the
    answer says what is wrong with the file, which the view shows above the tree (decision 0363)."""
    valid = reviewed.home.settings_file.read_text()
    assert "settingsProblems" not in await editor.request("remem/sessionTree", {"cwd": reviewed.cwd})
    reviewed.home.settings_file.write_text(valid + "sesions:\n  roots: []\n")
    try:
        tree = await editor.request("remem/sessionTree", {"cwd": reviewed.cwd})
    finally:
        reviewed.home.settings_file.write_text(valid)
    assert [n["id"] for n in tree["nodes"]] == [reviewed.session]  # the roots it ran on
    [problem] = tree["settingsProblems"]
    assert problem.startswith(f"{reviewed.home.settings_file}:") and "sesions: unknown key" in problem
    assert tree["settingsFile"] == str(reviewed.home.settings_file)
    again = await editor.request("remem/sessionTree", {"cwd": reviewed.cwd})
    assert "settingsProblems" not in again and "settingsFile" not in again


async def test_turns_say_which_can_be_branched(editor: Editor, reviewed: Receipted) -> None:
    turns = (await editor.request("remem/sessionTurns", {"id": reviewed.session}))["turns"]
    assert [t["turn"] for t in turns] == [1, 2, 3]
    assert all(set(t) == {"turn", "startSeq", "endSeq", "status", "user", "forkable"} for t in turns)
    assert all(t["forkable"] and t["endSeq"] > t["startSeq"] for t in turns)


async def test_a_transcript_comes_with_its_document_uri(editor: Editor, reviewed: Receipted) -> None:
    answer = await editor.request("remem/transcript", {"id": reviewed.session})
    assert answer["uri"] == f"remem-session:/{quote(reviewed.session, safe='')}.md"
    assert [line for line in answer["markdown"].splitlines() if line.startswith("## Turn ")][2].startswith(
        "## Turn 3 — "
    )


async def test_a_transcript_is_headed_by_the_name_the_editor_shows_it_by(
    editor: Editor, reviewed: Receipted
) -> None:
    named = await editor.request(
        "remem/transcript", {"id": reviewed.session, "title": "After turn 2 · Retry it"}
    )
    plain = await editor.request("remem/transcript", {"id": reviewed.session})
    assert named["markdown"].splitlines()[0] == "# After turn 2 · Retry it"
    assert plain["markdown"].splitlines()[0] != named["markdown"].splitlines()[0]
    # Only the heading differs: the body is the session's, whatever it is called.
    assert named["markdown"].splitlines()[1:] == plain["markdown"].splitlines()[1:]


async def test_the_memory_overview_judges_every_file(editor: Editor, reviewed: Receipted) -> None:
    folder = reviewed.folder
    (folder / "broken.md").write_text(record("Broken", type="nope"))
    reviewed.home.global_file.write_text("x" * 30_000 + "\n")
    try:
        overview = await editor.request("remem/memoryOverview", {"cwd": reviewed.cwd})
    finally:
        (folder / "broken.md").unlink()
        reviewed.home.global_file.write_text("Be brief.\n")
    assert overview["global"] == {"path": str(reviewed.home.global_file), "valid": False, "problems": 1}
    assert overview["workspace"] == {
        "key": WorkspaceId.from_cwd(reviewed.cwd).key,
        "folder": str(folder),
        "index": str(folder / "MEMORY.md"),
    }
    broken, kept = overview["records"]
    assert (kept["name"], kept["description"], kept["type"]) == (NAME, f"About {NAME}", "feedback")
    assert (kept["path"], kept["valid"]) == (str(reviewed.record), True)
    assert (broken["name"], broken["type"], broken["valid"]) == ("Broken", "nope", False)
    assert (broken["problems"], kept["problems"]) == (2, 0)  # the name's case, and the type
    [receipt] = overview["receipts"]
    assert receipt["review"] == reviewed.review and receipt["status"] == "committed"
    assert (receipt["session"], receipt["title"], receipt["changes"]) == (reviewed.session, reviewed.title, 1)
    assert Path(receipt["path"]).is_file() and receipt["updatedAt"].endswith("Z")
    fresh = await editor.request("remem/memoryOverview", {"cwd": str(Path(reviewed.cwd).parent / "new")})
    assert fresh["records"] == [] and fresh["receipts"] == []
    assert fresh["workspace"]["folder"] is None and fresh["workspace"]["index"] is None


async def test_a_receipt_is_read_as_written(editor: Editor, reviewed: Receipted) -> None:
    # Another review beside it: the one asked for is the one answered.
    other = reviewed.review[::-1]
    written = (reviewed.home.reviews / f"{reviewed.review}.md").read_text()
    (reviewed.home.reviews / f"{other}.md").write_text(written.replace(reviewed.review, other))
    for review in (reviewed.review, other):
        answer = await editor.request("remem/receipt", {"review": review})
        path = reviewed.home.reviews / f"{review}.md"
        summary = answer.pop("summary")
        assert answer == {
            "review": review,
            "status": "committed",
            "session": reviewed.session,
            "title": reviewed.title,
            "path": str(path),
            "text": path.read_text(),
        }
        assert summary.startswith(f"# Review of “{reviewed.title}”\n\n**committed** · 1 change to memory · ")
        assert "`fake` / `fake-model`, attempt 1: committed." in summary
        # The machine fields come after the summary, exactly as the file has them.
        front = path.read_text().split("---\n")[1]
        assert summary.index("## What changed") < summary.index("## Machine fields")
        assert summary.endswith(f"```yaml\n{front}```\n")


async def test_a_receipts_evidence_links_to_the_turns_of_its_transcript(
    editor: Editor, reviewed: Receipted
) -> None:
    summary = (await editor.request("remem/receipt", {"review": reviewed.review}))["summary"]
    rendered = summary.split("## Machine fields")[0]
    [changed] = [line for line in rendered.splitlines() if line.startswith("- ")]
    assert changed.startswith(f"- Added {NAME} (feedback) — evidence: [turn 1](")
    links = re.findall(r"\[turn (\d+)\]\(([^)]+)\)", changed)
    assert links
    transcript = (await editor.request("remem/transcript", {"id": reviewed.session}))["markdown"].splitlines()
    for turn, uri in links:
        # The link runs the extension's command that opens the transcript at the turn, its tab
        # named by the title; the transcript has that turn.
        command, _, query = uri.partition("?")
        assert command == "command:remem.openTranscript", uri
        assert json.loads(unquote(query)) == [
            {"session": reviewed.session, "turn": int(turn), "label": reviewed.title}
        ]
        assert any(line.startswith(f"## Turn {turn} — ") for line in transcript)


async def test_memory_history_and_the_files_an_entry_left(editor: Editor, reviewed: Receipted) -> None:
    whole = await editor.request("remem/memoryHistory", {"cwd": reviewed.cwd})
    [entry] = whole["entries"]
    assert (entry["actor"]["kind"], entry["actor"]["review"]) == ("consolidation", reviewed.review)
    assert entry["stat"]["added"] == [NAME] and entry["parent"] is None
    for name, expected in ((NAME, [entry]), ("other", [])):
        answer = await editor.request("remem/memoryHistory", {"cwd": reviewed.cwd, "record": name})
        assert answer["entries"] == expected
    at = await editor.request("remem/memoryAt", {"entry": entry["id"][:12]})
    assert at["files"] == {f"{NAME}.md": reviewed.record.read_text()} and at["entry"]["id"] == entry["id"]


async def test_a_records_history_reaches_past_the_newest_entries_of_its_workspace(
    editor: Editor, tmp_path: Path
) -> None:
    """The history view of one record asked for the workspace's newest entries, then kept the
    record's: a record last changed before them read "no history yet"."""
    cwd = str(tmp_path)
    store = MemoryStore(editor.home)
    workspace = WorkspaceId.from_cwd(cwd)
    old = store.commit_workspace(workspace, store.read_workspace(workspace).revision, [put("old")])
    for n in range(HISTORY_LIMIT):
        store.commit_workspace(
            workspace, store.read_workspace(workspace).revision, [put("busy", f"Take {n}.\n")]
        )
    answer = await editor.request("remem/memoryHistory", {"cwd": cwd, "record": "old"})
    assert [e["id"] for e in answer["entries"]] == [old.history]


async def test_an_undo_decided_on_an_older_state_is_a_conflict(editor: Editor, tmp_path: Path) -> None:
    """The editor sends the revision the user decided on: a change made meanwhile (an agent's)
    is not undone unseen."""
    cwd = str(tmp_path)
    store = MemoryStore(editor.home)
    workspace = WorkspaceId.from_cwd(cwd)
    first = store.commit_workspace(workspace, store.read_workspace(workspace).revision, [put("first")])
    seen = store.commit_workspace(workspace, first.revision, [put("second")])
    meanwhile = store.commit_workspace(workspace, seen.revision, [put("third")])
    assert first.history is not None
    stale = {"entry": first.history, "expectedRevision": seen.revision}
    answer = await editor.request("remem/revertMemory", stale)
    assert (answer["status"], answer["revision"]) == ("conflict", meanwhile.revision)
    assert {r.name for r in store.read_workspace(workspace).records} == {"first", "second", "third"}


async def test_the_editor_undoes_a_scopes_first_change(editor: Editor, tmp_path: Path) -> None:
    """The first entry has no parent to revert to: `before` brings back the empty state."""
    cwd = str(tmp_path)
    store = MemoryStore(editor.home)
    workspace = WorkspaceId.from_cwd(cwd)
    first = store.commit_workspace(workspace, store.read_workspace(workspace).revision, [put("first")])
    undo = {"entry": first.history, "before": True, "expectedRevision": first.revision}
    answer = await editor.request("remem/revertMemory", undo)
    assert answer["status"] == "committed" and store.read_workspace(workspace).records == []


async def test_settings_name_the_route(editor: Editor, reviewed: Receipted) -> None:
    settings = await editor.request("remem/settings", {})
    assert (settings["provider"], settings["model"], settings["apiKeyEnv"]) == (
        "fake",
        "fake-model",
        "REMEM_TEST_MODEL_KEY",
    )
    assert {"fake", "deepseek", "openai", "ollama"} <= set(settings["providers"])
    assert settings["revision"].startswith("sha256:")
    assert (settings["keyReady"], settings["keyProblem"]) == (True, None)  # the test's key is set
    assert settings["settingsFile"].endswith("settings.yml")
    # Global memory needs no workspace: the editor opens it, and its history, with no folder open.
    assert settings["globalFile"] == str(reviewed.home.global_file)


@pytest.mark.parametrize(
    ("method", "params", "says"),
    [
        ("remem/sessionTree", {"cwd": "relative/path"}, "`cwd`: Value error, must be an absolute path"),
        ("remem/sessionTree", {}, "`cwd`: Field required"),
        ("remem/sessionTurns", {"id": "s", "extra": 1}, "`extra`: unknown key"),
        ("remem/receipt", {"review": "../../etc/passwd"}, "`review`: String should match pattern"),
        ("remem/receipt", {"review": f"../{'0' * 64}"}, "`review`: String should match pattern"),
        ("remem/receipt", {"review": "0" * 64}, f"no review {'0' * 64}"),
        ("remem/settings", {"provider": "x"}, "`provider`: unknown key"),
        ("remem/transcript", {"id": "session-that-is-not-there"}, "session-that-is-not-there"),
        ("remem/transcript", {"id": "s", "title": ""}, "`title`: String should have at least 1 character"),
        ("remem/memoryAt", {"entry": "../HEAD"}, "`entry`: String should match pattern"),
        ("remem/memoryAt", {"entry": "0123456789"}, "names no history entry"),
        ("remem/memoryHistory", {"cwd": "relative"}, "`cwd`: Value error, must be an absolute path"),
        ("remem/revertMemory", {"entry": "abc"}, "`entry`: String should match pattern"),
        ("remem/revertMemory", {"entry": "abcdef0", "expectedRevision": "x"}, "`expectedRevision`: String"),
    ],
)
async def test_bad_params_get_a_specific_error(editor: Editor, method: str, params: dict, says: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(JsonRpcException) as raised:
        await editor.request(method, params)
    assert says in raised.value.message


async def test_a_lone_surrogate_is_read_as_the_replacement_character_by_every_feature(
    editor: Editor, reviewed: Receipted
) -> None:
    """An editor can send a lone surrogate (JSON "\\ud800"): diagnostics judged it as U+FFFD, but
    hover, lenses, code actions and the Memory view encoded the raw text and failed."""
    client = editor.client
    text = record("sur", description="x \ud800 y")
    document = types.TextDocumentIdentifier(open_document(client, reviewed.folder / "sur.md", text))
    index = types.TextDocumentIdentifier(open_document(client, reviewed.folder / "MEMORY.md", ""))
    try:
        await until(lambda: "remem/index-out-of-sync" in codes(client, index.uri))
        hover = await client.text_document_hover_async(types.HoverParams(document, types.Position(1, 2)))
        assert hover is not None and isinstance(hover.contents, types.MarkupContent)
        assert "x \ufffd y" in hover.contents.value
        lenses = await client.text_document_code_lens_async(types.CodeLensParams(document))
        assert not lenses  # no review wrote it
        stale = client.diagnostics[index.uri]
        context = types.CodeActionContext(diagnostics=stale)
        actions = await client.text_document_code_action_async(
            types.CodeActionParams(index, stale[0].range, context)
        )
        assert actions, "the index is offered its fix"
        overview = await editor.request("remem/memoryOverview", {"cwd": reviewed.cwd})
        [row] = [r for r in overview["records"] if r["name"] == "sur"]
        assert row["description"] == "x \ufffd y"
    finally:
        close(client, document.uri)
        close(client, index.uri)


async def test_an_open_text_too_large_to_send_is_judged_as_saved(editor: Editor, reviewed: Receipted) -> None:
    """JSON escapes each "é" as 6 bytes: a 1.4 MB record (under the 4 MiB file cap) made the
    overview's call to the daemon too large to send, and the view failed on every refresh."""
    path = reviewed.folder / "long.md"
    path.write_text(record("long"))
    uri = open_document(editor.client, path, record("long", description="Unsaved", body="é" * 700_000))
    try:
        overview = await editor.request("remem/memoryOverview", {"cwd": reviewed.cwd})
    finally:
        close(editor.client, uri)
        path.unlink()
    [row] = [r for r in overview["records"] if r["name"] == "long"]
    assert (row["description"], row["valid"]) == ("A fact", True)


async def test_a_request_too_large_for_the_daemon_is_refused_as_such(editor: Editor) -> None:
    with pytest.raises(JsonRpcException) as refused:
        await editor.request("remem/sessionTurns", {"id": "é" * 700_000})
    assert refused.value.code == -32602
    assert refused.value.message.endswith(
        "is more than a message to the remem daemon may hold (4194304 bytes); nothing was sent"
    )
