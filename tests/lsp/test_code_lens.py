"""Code lenses end to end: transcripts of generated sessions, and provenance from a real receipt."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from urllib.parse import quote

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient

from remem.daemon.home import Home
from remem.daemon.sessions.models import SessionEvent
from remem.daemon.sessions.paths import Encoding, session_log_path
from remem.daemon.sessions.reader import read_session
from remem.daemon.sessions.transcript import render_transcript
from remem.daemon.sessions.writer import choose_encoding, ensure_session_dirs, json_line
from remem.daemon.sessions.zstd_frames import encode_frame
from remem.lsp.features.code_lens import _turn_ends
from tests import waiting
from tests.sessions.factory import SessionSpec, build_session, write_session

from .editor import begin, change, end, open_document, record
from .receipted import NAME, Receipted, consolidated, new_home, without_daemon

HOME = new_home("remem-lsp-lens-")
DEGRADED = new_home("remem-lsp-lens-degraded-")
ENV = {**os.environ, "DSH_HOME": str(HOME.root.parent / "no-dsh-home")}  # never list a real ~/.dsh
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def receipted() -> Iterator[Receipted]:
    prepared = consolidated(HOME)
    without_daemon(prepared, DEGRADED)
    yield prepared
    subprocess.run([*prepared.command, "daemon", "stop"], capture_output=True, timeout=60)


def server(home: Home) -> ClientServerConfig:
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "lsp"]
    return ClientServerConfig(server_command=command, server_env=ENV)


@pytest_lsp.fixture(scope="module", config=server(HOME))
async def client(lsp_client: LanguageClient, receipted: Receipted):  # type: ignore[no-untyped-def]
    await begin(lsp_client)
    yield
    await end(lsp_client)


@pytest_lsp.fixture(scope="module", config=server(DEGRADED))
async def degraded(lsp_client: LanguageClient, receipted: Receipted):  # type: ignore[no-untyped-def]
    await begin(lsp_client)
    yield
    await end(lsp_client)


async def lenses(client: LanguageClient, uri: str) -> list[types.CodeLens]:
    params = types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    return list(await client.text_document_code_lens_async(params) or [])


def shown(found: list[types.CodeLens]) -> list[tuple[int, str, str, object]]:
    return [
        (
            lens.range.start.line,
            lens.command.title,
            lens.command.command,
            (lens.command.arguments or [None])[0],
        )
        for lens in found
        if lens.command is not None
    ]


def transcript_uri(session: str) -> str:
    """As the extension forms it: the id, then the title its tab shows."""
    return f"remem-session:/{quote(session, safe='')}/{quote('Fix the parser · after turn 2', safe='')}.md"


def with_open_turn(receipted: Receipted) -> tuple[str, str]:
    """A session whose third turn never ended, and its transcript.

    The transcript shows that turn `interrupted` (as a crash left it), but it has no `turn/end`
    in the log, so it cannot be branched from: only the daemon's turns say so."""
    draft = build_session(SessionSpec(seed=7, turns=2, cwd=receipted.cwd))
    last = draft.events[-1]
    draft.batches.append(
        [SessionEvent(type="turn/start", seq=last.seq + 1, time=last.time + 1, data={"turn": 3})]
    )
    path = write_session(receipted.root, draft)
    return draft.header.id, render_transcript(read_session(path))


async def test_a_transcript_offers_consolidation_and_branches_at_finished_turns(
    client: LanguageClient, receipted: Receipted
) -> None:
    session, markdown = with_open_turn(receipted)
    uri = open_document(client, transcript_uri(session), markdown)
    consolidate = (0, "Consolidate this session", "remem.consolidateSession", {"session": session})
    # A text the server did not hand out: which conversation it shows is unknown, so no branch.
    assert shown(await lenses(client, uri)) == [consolidate]
    answer = await client.protocol.send_request_async("remem/transcript", {"id": session})
    assert answer.markdown == markdown and answer.revision
    lines = markdown.splitlines()
    # A turn's lens sits right after it: above the next turn's heading.
    after = [n for n, line in enumerate(lines) if line.startswith(("## Turn 2 — ", "## Turn 3 — "))]
    assert len(after) == 2 and lines[after[1]].startswith("## Turn 3 — interrupted")
    # Each branch carries the revision the text was read at: the fork is refused once it changed.
    assert shown(await lenses(client, uri)) == [
        consolidate,
        *(
            (
                n,
                f"Branch after turn {t}",
                "remem.branchFromTurn",
                {"session": session, "turn": t, "expectedRevision": answer.revision},
            )
            for n, t in zip(after, (1, 2), strict=True)
        ),
    ]


async def test_a_session_with_no_turns_yet_offers_consolidation_and_no_error(
    client: LanguageClient, receipted: Receipted
) -> None:
    # A session just started: its log holds only its header, its transcript no section at all.
    header = build_session(SessionSpec(seed=21, turns=0, cwd=receipted.cwd)).header
    session = header.id
    encoding = choose_encoding(receipted.root, None)  # a root of mixed encodings is refused
    log = session_log_path(receipted.root, header.cwd, session, encoding)
    ensure_session_dirs(log)
    line = json_line(header.to_record())
    log.write_bytes(encode_frame(line) if encoding is Encoding.ZSTD else line)
    await listed(client, session, receipted.cwd)
    answer = await client.protocol.send_request_async("remem/transcript", {"id": session})
    assert "_No turns yet._" in answer.markdown and "\n## " not in answer.markdown
    uri = open_document(client, transcript_uri(session), answer.markdown)
    consolidate = (0, "Consolidate this session", "remem.consolidateSession", {"session": session})
    assert shown(await lenses(client, uri)) == [consolidate]


def with_turn_numbers(receipted: Receipted, seed: int, numbers: dict[int, int | None]) -> str:
    """A two-turn session (both finished) whose log numbers its turns otherwise: `numbers` maps a
    turn to the number its `turn/start` gives, None for none at all."""
    draft = build_session(SessionSpec(seed=seed, turns=2, cwd=receipted.cwd))
    for event in (e for batch in draft.batches for e in batch):
        if event.type == "turn/start" and event.data["turn"] in numbers:
            number = numbers[event.data["turn"]]
            if number is None:
                del event.data["turn"]
            else:
                event.data["turn"] = number
    write_session(receipted.root, draft)
    return draft.header.id


async def listed(client: LanguageClient, session: str, cwd: str) -> None:
    """Once the daemon lists `session`, just written: until its watcher reports a new log, it
    answers from the listing it kept."""
    deadline = time.monotonic() + waiting.SECONDS
    while not any(
        node.id == session
        for node in (await client.protocol.send_request_async("remem/sessionTree", {"cwd": cwd})).nodes
    ):
        assert time.monotonic() < deadline, f"the daemon never listed {session}"
        await asyncio.sleep(waiting.POLL_SECONDS)


async def shown_transcript(client: LanguageClient, session: str) -> tuple[list[str], list[tuple[int, str]]]:
    """The transcript's lines as the server hands it out, and its branch lenses (line, title)."""
    answer = await client.protocol.send_request_async("remem/transcript", {"id": session})
    uri = open_document(client, transcript_uri(session), answer.markdown)
    branches = [
        (line, title) for line, title, _, _ in shown(await lenses(client, uri)) if title.startswith("Branch")
    ]
    return answer.markdown.split("\n"), branches  # as LSP counts lines


async def test_a_turn_number_the_log_repeats_gets_no_branch_and_is_refused(
    client: LanguageClient, receipted: Receipted
) -> None:
    session = with_turn_numbers(receipted, seed=71, numbers={2: 1})
    await listed(client, session, receipted.cwd)
    lines, branches = await shown_transcript(client, session)
    assert sum(line.startswith("## Turn 1 — ") for line in lines) == 2
    assert branches == []  # "turn 1" names two turns: a lens would fork at the first of them
    arguments = {"session": session, "turn": 1, "confirmed": True}
    with pytest.raises(JsonRpcException) as raised:
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="remem.lsp.fork", arguments=[arguments])
        )
    assert raised.value.code == -32602 and "has 2 turns numbered 1" in raised.value.message


async def test_a_turn_the_log_numbers_not_is_branched_as_the_sessions_turns_number_it(
    client: LanguageClient, receipted: Receipted
) -> None:
    session = with_turn_numbers(receipted, seed=72, numbers={2: None})
    await listed(client, session, receipted.cwd)
    turns = await client.protocol.send_request_async("remem/sessionTurns", {"id": session})
    assert [(row.turn, row.forkable) for row in turns.turns] == [(1, True), (2, True)]
    lines, branches = await shown_transcript(client, session)
    [second] = [n for n, line in enumerate(lines) if line.startswith("## Turn ? — ")]
    # The second turn's lens sits on the last line, as `remem sessions turns` numbers it.
    assert branches == [(second, "Branch after turn 1"), (len(lines) - 1, "Branch after turn 2")]


async def test_a_transcript_text_is_known_by_the_revision_it_was_last_read_at() -> None:
    from remem.lsp.transcripts import ShownTranscripts

    shown_texts = ShownTranscripts(sessions=2, texts=2)
    assert shown_texts.record("s1", "# A\n", "r1") is True  # news: an open transcript's lenses may change
    assert shown_texts.record("s1", "# A\n", "r1") is False
    assert shown_texts.revision("s1", "# A\r\n") == "r1"  # line ends as an editor may have them
    assert shown_texts.record("s1", "# A\n", "r2") is True  # read again after a change it does not show
    assert shown_texts.revision("s1", "# A\n") == "r2" and shown_texts.revision("s2", "# A\n") is None
    shown_texts.record("s1", "# B\n", "r3")
    shown_texts.record("s1", "# C\n", "r4")  # a few texts per session are kept
    assert shown_texts.revision("s1", "# A\n") is None and shown_texts.revision("s1", "# B\n") == "r3"
    shown_texts.record("s2", "# A\n", "x")
    shown_texts.record("s3", "# A\n", "y")  # of the sessions asked about last
    assert shown_texts.revision("s1", "# B\n") is None and shown_texts.revision("s3", "# A\n") == "y"


async def test_a_transcript_of_no_known_session_gets_no_lenses(client: LanguageClient) -> None:
    uri = open_document(client, transcript_uri("session-gone"), "# Gone\n\n## Turn 1 — completed — x\n")
    assert await lenses(client, uri) == []


async def test_a_record_written_by_a_review_shows_where_it_came_from(
    client: LanguageClient, receipted: Receipted
) -> None:
    text = receipted.record.read_text()
    uri = open_document(client, receipted.record, text)
    receipt = str(receipted.home.reviews / f"{receipted.review}.md")
    expected = [
        (0, f"from {receipted.title}, turns 1–2 · review {receipted.review[:12]}", "remem.openTranscript",
         {"session": receipted.session, "turn": 1, "label": receipted.title}),
        (0, "Receipt", "remem.showReceipt", {"review": receipted.review, "path": receipt}),
    ]  # fmt: skip
    assert shown(await lenses(client, uri)) == expected
    change(client, uri, text.replace("Use uv for everything.", "Use uv, or pip when offline."), 2)
    assert await lenses(client, uri) == []  # edited by hand: the review no longer speaks for it
    change(client, uri, text.replace("type: feedback", "type: project"), 3)
    assert await lenses(client, uri) == []
    change(client, uri, text, 4)
    assert shown(await lenses(client, uri)) == expected


async def test_records_no_review_wrote_and_other_files_get_no_lenses(
    client: LanguageClient, receipted: Receipted
) -> None:
    by_hand = open_document(client, receipted.folder / "by-hand.md", record("by-hand"))
    assert await lenses(client, by_hand) == []
    index = open_document(
        client, receipted.folder / "MEMORY.md", (receipted.folder / "MEMORY.md").read_text()
    )
    assert await lenses(client, index) == []
    elsewhere = open_document(client, receipted.home.root.parent / f"{NAME}.md", receipted.record.read_text())
    assert await lenses(client, elsewhere) == []


async def test_without_a_daemon_provenance_names_events_and_transcripts_get_nothing(
    degraded: LanguageClient, receipted: Receipted
) -> None:
    record = DEGRADED.workspaces / receipted.folder.name / f"{NAME}.md"
    uri = open_document(degraded, record, record.read_text())
    [(line, title, command, argument)] = shown(await lenses(degraded, uri))
    assert title.startswith(f"from session {receipted.session}, events ") and "turns" not in title
    assert title.endswith(f" · review {receipted.review[:12]}") and command == "remem.showReceipt"
    markdown = render_transcript(read_session(receipted.log))
    assert await lenses(degraded, open_document(degraded, transcript_uri(receipted.session), markdown)) == []


async def test_the_last_turns_lens_sits_on_the_last_line() -> None:
    lines = ["# Title", "## Turn 1 — completed — t", "a", "## Turn 2 — completed — t", "b", ""]
    assert _turn_ends(lines) == [(1, 3), (2, 5)]
    assert _turn_ends(["# Title", "", "_No turns yet._", ""]) == []
    assert _turn_ends([""]) == []


async def test_the_last_turns_lens_sits_above_an_abandoned_branch_not_inside_it() -> None:
    lines = [
        "# Title", "## Turn 1 — completed — t", "a", "## Turn 2 — completed — t", "b",
        "## Abandoned branch after turn 1 (leaf `x`)", "### Abandoned turn 2 — completed", "c", "",
    ]  # fmt: skip
    assert _turn_ends(lines) == [(1, 3), (2, 5)]
