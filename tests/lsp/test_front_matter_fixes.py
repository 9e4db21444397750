"""Front-matter advice the review found missing or wrong: a value that is no string gets the fix
its neighbours get, an unclosed `"` is shown closed, and a front matter with nothing after its
keys is offered its closing line. Each fixed text is what `remem memory validate` accepts too."""

from __future__ import annotations

import re

import pytest
from pytest_lsp import LanguageClient

from remem.daemon.memory.validation import parse_record

from .editor import change, codes, module_client, open_document, own_home, record, until, workspace_folder
from .live import stopping_daemon
from .test_code_actions import apply_fix, code_actions, fixing

HOME = own_home("remem-lsp-fm-fixes-")
client = module_client(HOME)
pytestmark = pytest.mark.asyncio(loop_scope="module")
stop_the_daemon = stopping_daemon(HOME)

NON_STRING = "remem/non-string-value"
BODY = "Use uv, not pip.\n"
NON_STRINGS = [
    # case, file, text, the fix's title, preferred, the text it makes
    # No value: the body's first line, as `description:` alone gets.
    ("description-null", "dn.md", record("dn", description="null", body=BODY),
     "Use the body's first line as the description", False,
     record("dn", description="Use uv, not pip.", body=BODY)),
    ("description-tilde", "dt.md", record("dt", description="~", body=BODY),
     "Use the body's first line as the description", False,
     record("dt", description="Use uv, not pip.", body=BODY)),
    # The file's name, as a name missing or invalid gets.
    ("name-bare", "prefer-uv.md", "---\nname:\ndescription: A fact\ntype: project\n---\nBody.\n",
     "Set the name to `prefer-uv` (the file name)", True, record("prefer-uv")),
    ("name-null", "nn.md", record("null"), "Set the name to `nn` (the file name)", True, record("nn")),
    # Quoted, `3` would mismatch `n3.md`, a new error.
    ("name-number", "n3.md", record("3"), "Set the name to `n3` (the file name)", True, record("n3")),
    # In `3.md` the file's name written bare would be the number again: it is quoted.
    ("name-number-file", "3.md", record("3"),
     "Set `name: '3'` (the file name, in quotes so that it reads as text)", True, record("'3'")),
    # Quoted, `3` or `[a]` would still be no type: the types, as `type: yes` gets.
    ("type-number", "t3.md", record("t3", type="3"), "Set the type to `project`", False, record("t3")),
    ("type-list", "tl.md", record("tl", type="[a]"), "Set the type to `feedback`", False,
     record("tl", type="feedback")),
    ("type-bare", "tb.md", record("tb", type="").replace("type: \n", "type:\n"),
     "Set the type to `reference`", False, record("tb", type="reference")),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "name", "text", "title", "preferred", "fixed"), NON_STRINGS, ids=[c[0] for c in NON_STRINGS]
)
async def test_a_value_that_is_no_string_gets_the_fix_its_neighbours_get(
    client: LanguageClient, case: str, name: str, text: str, title: str, preferred: bool, fixed: str
) -> None:
    uri = open_document(client, workspace_folder(HOME, case) / name, text)
    actions = fixing(await code_actions(client, uri, NON_STRING), NON_STRING)
    [action] = [a for a in actions if a.title == title]
    assert bool(action.is_preferred) is preferred
    assert await apply_fix(client, uri, text, action, 2) == fixed
    await until(lambda: codes(client, uri) == [])
    assert parse_record(fixed, name).diagnostics == []


async def test_a_type_that_is_no_string_is_told_the_types_not_to_be_quoted(client: LanguageClient) -> None:
    """Quoted, `[a]` would still be no type: the advice was to quote it."""
    uri = open_document(client, workspace_folder(HOME, "type-told") / "tt.md", record("tt", type="[a]"))
    await until(lambda: codes(client, uri) == [NON_STRING])
    [error] = client.diagnostics[uri]
    assert error.message.startswith("`type` must be a string, not a list; use one of `feedback` (")
    assert "quotes" not in error.message


async def test_a_name_that_is_no_string_is_told_the_file_name_as_its_fix_sets(client: LanguageClient) -> None:
    """Quoted, `3` would differ from the file's name `n3.md`: the advice was to quote it."""
    uri = open_document(client, workspace_folder(HOME, "name-told") / "n3.md", record("3"))
    await until(lambda: codes(client, uri) == [NON_STRING])
    [error] = client.diagnostics[uri]
    assert error.message == "`name` must be a string, not a number; set the name to `n3` (the file name)"
    actions = fixing(await code_actions(client, uri, NON_STRING), NON_STRING)
    assert [a.title for a in actions] == ["Set the name to `n3` (the file name)"]


async def test_no_fix_quotes_a_name_into_one_the_file_name_refuses(client: LanguageClient) -> None:
    uri = open_document(client, workspace_folder(HOME, "name-quoted") / "q7.md", record("7"))
    actions = fixing(await code_actions(client, uri, NON_STRING), NON_STRING)
    assert [a.title for a in actions] == ["Set the name to `q7` (the file name)"]


@pytest.mark.parametrize(
    ("lines", "meant"),
    [
        (('description: "unclosed',), "unclosed"),
        (('description: "Use uv: not pip',), "Use uv: not pip"),
        (('description: "Builds live in C:\\qa',), "Builds live in C:\\qa"),
        (('description: "say \\"hi\\" first',), 'say "hi" first'),
        (('description: "it', "  goes on"), "it goes on"),
    ],
    ids=["plain", "colon", "backslash", "escaped-quote", "continued"],
)
async def test_a_double_quote_never_closed_is_shown_closed_reading_back_as_meant(
    client: LanguageClient, lines: tuple[str, ...], meant: str
) -> None:
    """The advice kept the stray `"` as text: `description: "\\"unclosed"`."""
    folder = workspace_folder(HOME, "unclosed-quote")
    text = "\n".join(("---", "name: uq", *lines, "type: project", "---", "Body.", ""))
    uri = open_document(client, folder / "uq.md", text)
    await until(lambda: codes(client, uri) == ["remem/front-matter-syntax"])
    [error] = client.diagnostics[uri]
    [shown] = re.findall(r"`(description: [^`]*)`", error.message)
    fixed = record("uq", description=shown.removeprefix("description: "))
    change(client, uri, fixed, 2)
    await until(lambda: codes(client, uri) == [])
    read_back = parse_record(fixed, "uq.md").record
    assert read_back is not None and read_back.description == meant


@pytest.mark.parametrize("end", ["\n", ""], ids=["line-break", "no-line-break"])
async def test_a_front_matter_with_nothing_after_its_keys_is_offered_its_closing_line(
    client: LanguageClient, end: str
) -> None:
    """Closed, the record has no body: no new error, since it had none before either."""
    text = "---\nname: bare\ndescription: A fact\ntype: project" + end
    uri = open_document(client, workspace_folder(HOME, f"no-body-{len(end)}") / "bare.md", text)
    code = "remem/front-matter-unterminated"
    [action] = fixing(await code_actions(client, uri, code), code)
    assert action.title == "Close the front matter with a `---` line after line 4" and action.is_preferred
    fixed = await apply_fix(client, uri, text, action, 2)
    assert fixed == record("bare", body="")
    await until(lambda: codes(client, uri) == ["remem/body-empty"])
    assert [d.code for d in parse_record(fixed, "bare.md").diagnostics] == ["remem/body-empty"]
