"""Quick fixes end to end: each fix's edit, applied to the text, makes its diagnostic go away."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from remem.daemon.memory.index import render_index
from remem.daemon.memory.validation import parse_record

from .editor import (
    apply_edits,
    change,
    close,
    codes,
    edits_for,
    module_client,
    open_document,
    own_home,
    record,
    until,
    workspace_folder,
)
from .live import stopping_daemon

HOME = own_home("remem-lsp-actions-")
client = module_client(HOME)
pytestmark = pytest.mark.asyncio(loop_scope="module")


stop_the_daemon = stopping_daemon(HOME)


async def code_actions(
    client: LanguageClient, uri: str, *wanted: str, only: list[str] | None = None
) -> list[types.CodeAction]:
    """The actions offered for the document's current diagnostics with the `wanted` codes."""
    await until(lambda: set(wanted) <= set(codes(client, uri)))
    diagnostics = [d for d in client.diagnostics[uri] if f"{d.source}/{d.code}" in wanted]
    where = diagnostics[0].range if diagnostics else types.Range(types.Position(0, 0), types.Position(0, 0))
    params = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=where,
        context=types.CodeActionContext(diagnostics=diagnostics, only=only),
    )
    return list(await client.text_document_code_action_async(params) or [])


def fixing(actions: list[types.CodeAction], code: str) -> list[types.CodeAction]:
    return [a for a in actions if any(f"{d.source}/{d.code}" == code for d in a.diagnostics or [])]


async def apply_fix(
    client: LanguageClient, uri: str, text: str, action: types.CodeAction, version: int
) -> str:
    assert action.edit is not None and action.kind == types.CodeActionKind.QuickFix
    fixed = apply_edits(text, edits_for(action.edit, uri))
    change(client, uri, fixed, version)
    return fixed


NO_NAME = "---\ndescription: A fact\ntype: project\n---\nBody.\n"
NO_TYPE = "---\nname: t\ndescription: A fact\n---\nBody.\n"
NO_DESCRIPTION = "---\nname: d\ntype: project\n---\n# Use uv\nMore.\n"
KEY_CASE = "---\nname: k\ndescription: A fact\nType: project\n---\nBody.\n"
UNCLOSED = "---\n{}description: A fact\ntype: project\n{}"  # its `name:` lines, its body
CASES = [
    # name, file, text, code, the fix's title, preferred, the text it makes
    ("control", "ctl.md", record("ctl", body="Be\x07 brief\x1b.\n"), "remem/control-character",
     "Delete every control character", True, record("ctl", body="Be brief.\n")),
    ("missing-name", "prefer-uv.md", NO_NAME, "remem/missing-key",
     "Add `name: prefer-uv`", True, record("prefer-uv")),
    ("missing-type", "t.md", NO_TYPE, "remem/missing-key",
     "Add `type: reference`", False, record("t", type="reference")),
    ("missing-description", "d.md", NO_DESCRIPTION, "remem/missing-key",
     "Add `description: Use uv`", False, record("d", description="Use uv", body="# Use uv\nMore.\n")),
    ("key-casing", "k.md", KEY_CASE, "remem/unknown-key",
     "Rename the key to `type`", True, record("k")),
    ("key-spelling", "s.md", record("s").replace("description:", "descripton:"), "remem/unknown-key",
     "Rename the key to `description`", False, record("s")),
    ("quote", "q.md", record("q", description="42"), "remem/non-string-value",
     'Quote the value: "42"', True, record("q", description='"42"')),
    # `type: yes` quoted would still be no type: the types are offered instead.
    ("type-not-a-string", "y.md", record("y", type="yes"), "remem/non-string-value",
     "Set the type to `project`", False, record("y")),
    ("type-casing", "c.md", record("c", type="Project"), "remem/type-invalid",
     "Change the type to `project`", True, record("c")),
    # The user's note after the value stays (it was dropped with the line).
    ("type-casing-noted", "n.md", record("n", type="Project  # what it is about"), "remem/type-invalid",
     "Change the type to `project`", True, record("n", type="project  # what it is about")),
    ("type-unknown", "u.md", record("u", type="projet"), "remem/type-invalid",
     "Set the type to `feedback`", False, record("u", type="feedback")),
    ("name-casing", "prefer-uv.md", record("Prefer-UV"), "remem/name-invalid",
     "Change the name to `prefer-uv`", True, record("prefer-uv")),
    ("name-slug", "prefer-uv.md", record("Prefer UV!"), "remem/name-invalid",
     "Change the name to `prefer-uv`", True, record("prefer-uv")),  # the file's name too
    # Lower-casing `Dupe` would mismatch `dup2.md`: the file's name is the preferred fix.
    ("name-invalid-from-file", "dup2.md", record("Dupe"), "remem/name-invalid",
     "Set the name to `dup2` (the file name)", True, record("dup2")),
    # An accent is folded, not dropped: `ödd` is `odd`, not `dd`.
    ("name-folded", "odd.md", record("\u00f6dd"), "remem/name-invalid",
     "Change the name to `odd`", True, record("odd")),
    ("name-from-file", "first.md", record("second"), "remem/name-mismatch",
     "Set the name to `first` (the file name)", False, record("first")),
    # Text YAML took as a comment is kept, quoted with the rest (decision 0504); an emoji before
    # it counts two UTF-16 units in the editor's columns.
    ("comment-kept", "h.md", record("h", description="Run #tests before commit"),
     "remem/front-matter-comment",
     'Quote the description to keep its text after `#`: "Run #tests before commit"', True,
     record("h", description='"Run #tests before commit"')),
    ("comment-kept-wide", "w.md", record("w", description="Ship \U0001F680 #now  "),
     "remem/front-matter-comment",
     'Quote the description to keep its text after `#`: "Ship \U0001F680 #now"', True,
     record("w", description='"Ship \U0001F680 #now"  ')),
    # YAML reads it all as a comment: quoted, the text is the description.
    ("description-all-comment", "ac.md", record("ac", description="#tests first"),
     "remem/description-empty", 'Quote the description to keep its text after `#`: "#tests first"', True,
     record("ac", description='"#tests first"')),
    ("description-bare", "bare.md", record("bare", description="", body="Use uv, not pip.\n"),
     "remem/description-empty", "Use the body's first line as the description", False,
     record("bare", description="Use uv, not pip.", body="Use uv, not pip.\n")),
    ("unterminated", "open.md", record("open").replace("---\nBody", "Body"),
     "remem/front-matter-unterminated", "Close the front matter with a `---` line after line 4", True,
     record("open")),
    # The closing line goes after `type:`: a comment or blank line in the front matter is its
    # own, and a body that begins `Note: …` or indented (code) is the body's.
    ("unterminated-comment", "cm.md", UNCLOSED.format("name: cm\n# why: kept for audits\n", "Body.\n"),
     "remem/front-matter-unterminated", "Close the front matter with a `---` line after line 5", True,
     record("cm").replace("\ndescription", "\n# why: kept for audits\ndescription")),
    ("unterminated-blank", "bl.md", UNCLOSED.format("name: bl\n\n", "Body.\n"),
     "remem/front-matter-unterminated", "Close the front matter with a `---` line after line 5", True,
     record("bl").replace("\ndescription", "\n\ndescription")),
    ("unterminated-note", "nt.md", UNCLOSED.format("name: nt\n", "Note: read the RFC first.\n"),
     "remem/front-matter-unterminated", "Close the front matter with a `---` line after line 4", True,
     record("nt", body="Note: read the RFC first.\n")),
    ("unterminated-code", "cb.md", UNCLOSED.format("name: cb\n", "    pip install uv\n"),
     "remem/front-matter-unterminated", "Close the front matter with a `---` line after line 4", True,
     record("cb", body="    pip install uv\n")),
    ("description-from-body", "e.md", record("e", description='""', body="Use uv, not pip.\n"),
     "remem/description-empty", "Use the body's first line as the description", False,
     record("e", description="Use uv, not pip.", body="Use uv, not pip.\n")),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "name", "text", "code", "title", "preferred", "fixed"), CASES, ids=[c[0] for c in CASES]
)
async def test_the_fix_clears_its_diagnostic(
    client: LanguageClient,
    case: str,
    name: str,
    text: str,
    code: str,
    title: str,
    preferred: bool,
    fixed: str,
) -> None:
    uri = open_document(client, workspace_folder(HOME, case) / name, text)
    actions = fixing(await code_actions(client, uri, code), code)
    [action] = [a for a in actions if a.title == title]
    assert bool(action.is_preferred) is preferred
    assert await apply_fix(client, uri, text, action, 2) == fixed
    await until(lambda: code not in codes(client, uri))
    assert codes(client, uri) == []


async def test_one_fix_makes_the_text_canonical(client: LanguageClient) -> None:
    text = "\ufeff" + record("crlf").replace("\n", "\r\n") + "\r\n\r\n"
    uri = open_document(client, workspace_folder(HOME, "canonical") / "crlf.md", text)
    wanted = ("remem/bom", "remem/line-endings", "remem/trailing-newline")
    [action] = await code_actions(client, uri, *wanted)
    assert action.is_preferred and sorted(f"{d.source}/{d.code}" for d in action.diagnostics or []) == sorted(
        wanted
    )
    assert await apply_fix(client, uri, text, action, 2) == record("crlf")
    await until(lambda: codes(client, uri) == [])


async def test_the_line_endings_warning_covers_the_first_line_break(client: LanguageClient) -> None:
    """It covered a CRLF's CR alone, `0:3-0:4` on `---\\r\\n`: past the line's end, which an
    editor clamps to an empty range, so nothing was underlined."""
    text = record("crlf-range").replace("\n", "\r\n")
    uri = open_document(client, workspace_folder(HOME, "crlf-range") / "crlf-range.md", text)
    [action] = await code_actions(client, uri, "remem/line-endings")
    [warning] = action.diagnostics or []
    where = warning.range
    assert (where.start.line, where.start.character, where.end.line, where.end.character) == (0, 3, 1, 0)
    assert await apply_fix(client, uri, text, action, 2) == record("crlf-range")
    await until(lambda: codes(client, uri) == [])


async def test_tabs_then_a_multiline_description_are_fixed_in_turn(client: LanguageClient) -> None:
    text = "---\nname: tab\ndescription: Use uv\n\tfor environments\ntype: project\n---\nBody.\n"
    uri = open_document(client, workspace_folder(HOME, "tabs") / "tab.md", text)
    [action] = await code_actions(client, uri, "remem/front-matter-tab")
    text = await apply_fix(client, uri, text, action, 2)
    assert "\t" not in text
    await until(lambda: codes(client, uri) == ["remem/description-multiline"])
    [action] = await code_actions(client, uri, "remem/description-multiline")
    assert action.title == "Join the description into one line" and action.is_preferred
    assert await apply_fix(client, uri, text, action, 3) == record(
        "tab", description="Use uv for environments"
    )
    await until(lambda: codes(client, uri) == [])


async def test_a_key_tabbed_in_is_taken_back_to_the_margin(client: LanguageClient) -> None:
    """Two spaces there would make `description` a key inside `name`'s value: still no YAML."""
    text = "---\nname: tabbed\n\tdescription: d\n\ttype: project\n---\nBody.\n"
    uri = open_document(client, workspace_folder(HOME, "tabs-keys") / "tabbed.md", text)
    [action] = await code_actions(client, uri, "remem/front-matter-tab")
    assert action.title == "Take the keys tabbed in back to the margin" and action.is_preferred
    assert await apply_fix(client, uri, text, action, 2) == record("tabbed", description="d")
    await until(lambda: codes(client, uri) == [])


@pytest.mark.parametrize(
    "front",
    ["{name: flowing, type: feedback}\n", "  name: flowing\n  type: feedback\n"],
    ids=["flow", "indented"],
)
async def test_no_key_is_added_where_a_line_of_its_own_would_break_the_front_matter(
    client: LanguageClient, front: str
) -> None:
    text = f"---\n{front}---\nUse flow style.\n"
    uri = open_document(client, workspace_folder(HOME, "flowing") / "flowing.md", text)
    assert await code_actions(client, uri, "remem/missing-key") == []


async def test_a_long_description_is_shortened_and_kept_whole_in_the_body(client: LanguageClient) -> None:
    long = " ".join(f"word{n}" for n in range(60))  # 409 characters
    text = record("long", description=long)
    uri = open_document(client, workspace_folder(HOME, "long") / "long.md", text)
    [action] = await code_actions(client, uri, "remem/description-too-long")
    assert action.title.startswith("Shorten the description to 200 characters and move the full text")
    fixed = parse_record(await apply_fix(client, uri, text, action, 2), "long.md").record
    await until(lambda: codes(client, uri) == [])
    assert fixed is not None and len(fixed.description) <= 200 and fixed.description.endswith("…")
    assert long.startswith(fixed.description[:-1]) and fixed.content == f"{long}\n\nBody.\n"


# What follows the closing `---`: nothing (the file ends on it), its line break only, a body, and
# a body after a blank line. Each way the moved text is the body's first paragraph, and the file
# ends in one line break (not a blank line, a new warning).
AFTER_CLOSING = [
    ("closing-at-eof", "", "\n"),
    ("closing-line-at-eof", "\n", "\n"),
    ("body", "\nBody.\n", "\n\nBody.\n"),
    ("blank-then-body", "\n\nBody.\n", "\n\nBody.\n"),
]


@pytest.mark.parametrize(("shape", "after", "rest"), AFTER_CLOSING, ids=[a[0] for a in AFTER_CLOSING])
async def test_a_description_moved_to_the_body_is_its_first_paragraph_and_adds_no_problem(
    client: LanguageClient, shape: str, after: str, rest: str
) -> None:
    long = " ".join(f"word{n}" for n in range(60))
    text = record("moved", description=long, body="").removesuffix("\n") + after
    uri = open_document(client, workspace_folder(HOME, shape) / "moved.md", text)
    [action] = await code_actions(client, uri, "remem/description-too-long")
    fixed = parse_record(await apply_fix(client, uri, text, action, 2), "moved.md")
    assert fixed.diagnostics == [] and fixed.record is not None
    assert fixed.record.content == long + rest
    await until(lambda: codes(client, uri) == [])


# Quoted whole, a description cut at its ` #` would be over the limit: quoting alone would make
# the record invalid (decision 0504, amended).
OVER_BEFORE = " ".join(f"step{n}" for n in range(20))  # 129 characters
OVER_LINE = OVER_BEFORE + " #" + " ".join(f"why{n}" for n in range(30))  # 300 characters


async def test_a_comment_kept_over_the_limit_is_quoted_shortened_and_kept_whole_in_the_body(
    client: LanguageClient,
) -> None:
    text = record("over", description=OVER_LINE)
    uri = open_document(client, workspace_folder(HOME, "comment-over") / "over.md", text)
    [action] = fixing(
        await code_actions(client, uri, "remem/front-matter-comment"), "remem/front-matter-comment"
    )
    assert action.title == (
        "Quote the description shortened to 200 characters and move its full text, "
        "the part after `#` too, to the body"
    )
    assert not action.is_preferred  # it rewrites what the user wrote: theirs to choose
    fixed = parse_record(await apply_fix(client, uri, text, action, 2), "over.md")
    assert fixed.diagnostics == [] and fixed.record is not None
    assert len(fixed.record.description) <= 200 and OVER_LINE.startswith(fixed.record.description[:-1])
    assert fixed.record.content == f"{OVER_LINE}\n\nBody.\n"
    await until(lambda: codes(client, uri) == [])


async def test_no_fix_keeps_a_comment_over_the_limit_where_the_body_has_no_room(
    client: LanguageClient,
) -> None:
    body = "x" * (8 * 1024 - 100) + "\n"
    text = record("full", description=OVER_LINE, body=body)
    uri = open_document(client, workspace_folder(HOME, "comment-full") / "full.md", text)
    assert (
        fixing(await code_actions(client, uri, "remem/front-matter-comment"), "remem/front-matter-comment")
        == []
    )


async def test_a_file_renamed_to_its_record_name_clears_the_mismatch(client: LanguageClient) -> None:
    folder = workspace_folder(HOME, "rename")
    text = record("wanted")
    (folder / "typo.md").write_text(text)
    uri = open_document(client, folder / "typo.md", text)
    actions = fixing(await code_actions(client, uri, "remem/name-mismatch"), "remem/name-mismatch")
    [rename] = [a for a in actions if a.title == "Rename the file to `wanted.md` (the name)"]
    [operation] = rename.edit.document_changes if rename.edit and rename.edit.document_changes else []
    assert isinstance(operation, types.RenameFile) and operation.old_uri == uri and not rename.is_preferred
    assert operation.new_uri == (folder / "wanted.md").as_uri()
    (folder / "typo.md").rename(folder / "wanted.md")  # what the editor does with the edit
    close(client, uri)
    renamed = open_document(client, folder / "wanted.md", text)
    await until(lambda: renamed in client.diagnostics and codes(client, renamed) == [])
    assert uri not in client.diagnostics or codes(client, uri) == []


async def test_no_rename_is_offered_onto_an_existing_record(client: LanguageClient) -> None:
    folder = workspace_folder(HOME, "taken")
    (folder / "wanted.md").write_text(record("wanted"))
    uri = open_document(client, folder / "typo.md", record("wanted", description="Other"))
    actions = fixing(await code_actions(client, uri, "remem/name-mismatch"), "remem/name-mismatch")
    assert [a.title for a in actions] == ["Set the name to `typo` (the file name)"]


async def test_memory_md_is_replaced_by_the_index_or_regenerated_by_the_daemon(
    client: LanguageClient,
) -> None:
    folder = workspace_folder(HOME, "index")
    (folder / "alpha.md").write_text(record("alpha", type="feedback"))
    beta = open_document(client, folder / "beta.md", record("beta", description="Unsaved"))
    text = "- stale\n"
    uri = open_document(client, folder / "MEMORY.md", text)
    replace, regenerate = await code_actions(client, uri, "remem/index-out-of-sync")
    assert replace.is_preferred and replace.title == "Replace with what the records render to"
    assert regenerate.edit is None and regenerate.command is not None
    assert (regenerate.command.command, list(regenerate.command.arguments or [])) == (
        "remem.lsp.regenerateIndex",
        [{"uri": uri}],
    )
    fixed = await apply_fix(client, uri, text, replace, 2)
    records = [parse_record(record(n, **kw), f"{n}.md").record for n, kw in
               (("alpha", {"type": "feedback"}), ("beta", {"description": "Unsaved"}))]  # fmt: skip
    assert fixed == render_index([r for r in records if r is not None]) and "Unsaved" in fixed
    await until(lambda: codes(client, uri) == [] and codes(client, beta) == [])


@pytest.mark.parametrize(
    ("file", "written", "slug"), [("My Note.md", "My Note", "my-note"), ("\u00f6dd.md", "\u00f6dd", "odd")]
)
async def test_a_file_named_no_valid_name_gets_the_slug_then_the_file_renamed_to_it(
    client: LanguageClient, file: str, written: str, slug: str
) -> None:
    """No name can equal such a file's, so the slug is offered, not preferred, as before
    29482c3d, which offered nothing: the mismatch it leaves is fixed by renaming the file."""
    folder = workspace_folder(HOME, f"unnamed-{slug}")
    (folder / file).write_text(record(written))
    uri = open_document(client, folder / file, record(written))
    [action] = fixing(await code_actions(client, uri, "remem/name-invalid"), "remem/name-invalid")
    assert action.title == f"Change the name to `{slug}`" and not action.is_preferred
    assert await apply_fix(client, uri, record(written), action, 2) == record(slug)
    actions = fixing(await code_actions(client, uri, "remem/name-mismatch"), "remem/name-mismatch")
    assert f"Rename the file to `{slug}.md` (the name)" in [a.title for a in actions]


async def test_rules_without_a_safe_fix_get_none(client: LanguageClient) -> None:
    folder = workspace_folder(HOME, "unsafe")
    (folder / "dup.md").write_text(record("same"))
    empty = open_document(
        client, folder / "empty.md", "---\nname: empty\ndescription: d\ntype: project\n---\n"
    )
    assert fixing(await code_actions(client, empty, "remem/body-empty"), "remem/body-empty") == []
    twin = open_document(client, folder / "same.md", record("same"))
    assert fixing(await code_actions(client, twin, "remem/name-duplicate"), "remem/name-duplicate") == []


async def test_the_front_matter_is_not_closed_where_that_would_make_another_error(
    client: LanguageClient,
) -> None:
    """`tags:` is the front matter's, `type:` follows it; closed there, it is an unknown key."""
    text = "---\nname: tags\ntags: a\ndescription: A fact\ntype: project\nBody.\n"
    uri = open_document(client, workspace_folder(HOME, "unclosed-unsafe") / "tags.md", text)
    actions = await code_actions(client, uri, "remem/front-matter-unterminated")
    assert fixing(actions, "remem/front-matter-unterminated") == []
    [problem] = client.diagnostics[uri]
    assert problem.message.endswith("add a `---` line after `type: project` (line 5)")


async def test_consolidation_is_offered_where_the_workspace_is_known(client: LanguageClient) -> None:
    known = workspace_folder(HOME, "known", with_info=True)
    uri = open_document(client, known / "fact.md", record("fact"))
    await until(lambda: uri in client.diagnostics)
    [action] = await code_actions(client, uri)
    assert action.kind == types.CodeActionKind.Source and action.command is not None
    assert action.command.command == "remem.lsp.consolidate"
    assert list(action.command.arguments or []) == [{"cwd": os.path.abspath("/projects/known")}]
    assert await code_actions(client, uri, only=[types.CodeActionKind.QuickFix]) == []
    unknown = open_document(client, workspace_folder(HOME, "unknown") / "fact.md", record("fact"))
    await until(lambda: unknown in client.diagnostics)
    assert await code_actions(client, unknown) == []
    global_uri = open_document(client, HOME.global_file, "Be brief.\n")
    await until(lambda: global_uri in client.diagnostics)
    assert await code_actions(client, global_uri) == []


async def test_files_outside_the_memory_folder_get_no_actions(client: LanguageClient, tmp_path: Path) -> None:
    uri = open_document(client, tmp_path / "notes.md", record("x", type="Project"))
    params = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(types.Position(3, 0), types.Position(3, 5)),
        context=types.CodeActionContext(diagnostics=[]),
    )
    assert not await client.text_document_code_action_async(params)


@pytest.mark.parametrize(
    "separator", ["\u2028", "\x0c", "\x85"], ids=["line-separator", "form-feed", "next-line"]
)
async def test_an_edit_after_a_character_python_breaks_lines_at_lands_where_the_editor_made_it(
    client: LanguageClient, separator: str
) -> None:
    """LSP breaks lines only at CR and LF: an incremental edit below a U+2028, a form feed or a
    U+0085 must change the line the editor changed. The server's copy once drifted there, and
    the fix that makes the text canonical wrote the drifted text over the user's edit."""
    text = record("sep", body=f"Use the{separator}separator.\nline2\nline3\n") + "\n"
    uri = open_document(client, workspace_folder(HOME, "separators") / "sep.md", text)
    line = text.split("\n").index("line2")
    edit = types.TextDocumentContentChangePartial(
        range=types.Range(types.Position(line, 0), types.Position(line, len("line2"))), text="Second line"
    )
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2), content_changes=[edit]
        )
    )
    edited = text.replace("\nline2\n", "\nSecond line\n")
    [action] = fixing(await code_actions(client, uri, "remem/trailing-newline"), "remem/trailing-newline")
    assert await apply_fix(client, uri, edited, action, 3) == edited.removesuffix("\n")


async def test_a_mis_cased_key_is_renamed_not_added_again(client: LanguageClient) -> None:
    """`Name: casekey` and no `name:`: renaming the key keeps its value; adding a `name:` beside
    it left the unknown key, and was offered as preferred too."""
    text = "---\nName: casekey\ndescription: A fact\ntype: project\n---\nBody.\n"
    uri = open_document(client, workspace_folder(HOME, "casekey") / "casekey.md", text)
    titles = [a.title for a in await code_actions(client, uri, "remem/missing-key", "remem/unknown-key")]
    assert titles == ["Rename the key to `name`"]


async def test_an_edit_past_the_end_of_the_last_line_lands_at_its_end(client: LanguageClient) -> None:
    """LSP takes a character past a line's length for the line's end: pygls took it for the
    last character of a line without a line break, and inserted there ("BodXy")."""
    text = record("eol", body="Body")
    uri = open_document(client, workspace_folder(HOME, "eol") / "eol.md", text)
    at = types.Position(5, 10)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangePartial(range=types.Range(at, at), text="X")],
        )
    )
    [action] = fixing(await code_actions(client, uri, "remem/trailing-newline"), "remem/trailing-newline")
    assert action.edit is not None
    [whole] = edits_for(action.edit, uri)
    assert whole.new_text == record("eol", body="BodyX\n")


async def test_no_rename_is_offered_to_a_name_no_record_may_have(client: LanguageClient) -> None:
    """A name-mismatch diagnostic from before the name was edited to one that is no valid name:
    renaming the file to `Fix Me.md` would make a file no record can live in."""
    folder = workspace_folder(HOME, "stale")
    uri = open_document(client, folder / "typo.md", record("wanted"))
    await until(lambda: "remem/name-mismatch" in codes(client, uri))
    stale = [d for d in client.diagnostics[uri] if d.code == "name-mismatch"]
    change(client, uri, record("Fix Me"), 2)
    params = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=stale[0].range,
        context=types.CodeActionContext(diagnostics=stale),
    )
    actions = await client.text_document_code_action_async(params) or []
    assert [a.title for a in actions if a.title.startswith("Rename the file")] == []
