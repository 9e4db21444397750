"""Every validation rule: a valid case, an invalid case, and the exact range it reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from remem.daemon.memory import validation
from remem.daemon.memory.canonical import canonicalize
from remem.daemon.memory.diagnostics import Diagnostic, Severity
from remem.daemon.memory.index import render_index
from remem.daemon.memory.lint import lint_paths, lint_workspace_folder
from remem.daemon.memory.validation import (
    likely_secrets,
    parse_record,
    validate_global,
    validate_index,
    validate_record,
    validate_workspace,
)

from ..yaml_bombs import BILLION_LAUGHS, ERROR_BYTES_MAX, FIRST_ALIAS_COLUMN, FIRST_ALIAS_LINE

VALID = "---\nname: prefer-uv\ndescription: Use uv instead of pip\ntype: feedback\n---\nBecause it is fast.\n"


def only(diagnostics: list[Diagnostic], code: str) -> Diagnostic:
    matching = [d for d in diagnostics if d.code == f"remem/{code}"]
    assert len(matching) == 1, [d.code for d in diagnostics]
    return matching[0]


def span(d: Diagnostic) -> tuple[int, int, int, int]:
    r = d.range
    return (r.start.line, r.start.character, r.end.line, r.end.character)


def record(
    name: str = "prefer-uv",
    description: str = "Use uv",
    type_: str = "feedback",
    body: str = "Because it is fast.\n",
) -> str:
    return f"---\nname: {name}\ndescription: {description}\ntype: {type_}\n---\n{body}"


def test_valid_record_has_no_problems_and_parses_fields() -> None:
    parsed = parse_record(VALID, "prefer-uv.md")
    assert parsed.diagnostics == []
    assert parsed.record is not None
    assert parsed.record.model_dump() == {
        "name": "prefer-uv",
        "description": "Use uv instead of pip",
        "type": "feedback",
        "content": "Because it is fast.\n",
    }


@pytest.mark.parametrize(
    ("text", "code", "where"),
    [
        ("no front matter\n", "front-matter-missing", (0, 0, 0, 15)),
        ("", "front-matter-missing", (0, 0, 0, 0)),
        ("---\nname: a\n", "front-matter-unterminated", (1, 0, 1, 7)),
        ("---\nname: a\n\tdescription: b\n---\nx\n", "front-matter-tab", (2, 0, 2, 1)),
        ("---\nname: [a\n---\nx\n", "front-matter-syntax", (1, 6, 1, 7)),  # the `[` never closed
        ("---\n- a\n---\nx\n", "front-matter-not-mapping", (1, 0, 1, 3)),
    ],
)
def test_front_matter_structure(text: str, code: str, where: tuple[int, int, int, int]) -> None:
    assert span(only(validate_record(text, "a.md"), code)) == where


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        (
            "---\ntype: project\nname: a\ndescription: A fact\nBody.\n",
            "add a `---` line after `description: A fact` (line 4)",
            3,
        ),
        ("---\nname: c\n", "add a `---` line after `name: c` (line 2)", 1),
        ("---\nname: c\n  continued\nBody.\n", "add a `---` line after `continued` (line 3)", 2),
        # A comment or blank line is the front matter's own: the scan goes on past it.
        (
            "---\nname: cm\n# why: kept for audits\ndescription: d\ntype: project\nBody.\n",
            "add a `---` line after `type: project` (line 5)",
            4,
        ),
        (
            "---\nname: bl\n\ndescription: d\ntype: project\nBody.\n",
            "add a `---` line after `type: project` (line 5)",
            4,
        ),
        # Once the three keys are seen, a `Key: value` or indented line is the body's.
        (
            "---\nname: nt\ndescription: d\ntype: project\nNote: read the RFC first.\n",
            "add a `---` line after `type: project` (line 4)",
            3,
        ),
        (
            "---\nname: cb\ndescription: d\ntype: project\n    pip install uv\n",
            "add a `---` line after `type: project` (line 4)",
            3,
        ),
        # A blank line ends a value on its key's line: an indented line after it is the body's,
        # a key missing or not.
        (
            "---\nname: ib\ntype: project\n\n    pip install uv\nBody.\n",
            "add a `---` line after `type: project` (line 3)",
            2,
        ),
        # ... unless the last one's value lies below it.
        (
            "---\nname: bk\ntype: project\ndescription: >\n  folded\nBody.\n",
            "add a `---` line after `folded` (line 5)",
            4,
        ),
        # Another key is the front matter's only when one of the three follows it.
        (
            "---\nname: un\ntags: a\ndescription: d\ntype: project\nBody.\n",
            "add a `---` line after `type: project` (line 5)",
            4,
        ),
        (
            "---\nname: un\ndescription: d\nNote: a\nBody.\n",
            "add a `---` line after `description: d` (line 3)",
            2,
        ),
        (
            "---\n",
            "below the `---` line write `name:`, `description:` and `type:` lines, then a closing `---` line",
            0,
        ),
    ],
)
def test_a_front_matter_never_closed_is_told_where_its_closing_line_goes(
    text: str, message: str, line: int
) -> None:
    [problem] = validate_record(text, "a.md")
    assert problem.code == "remem/front-matter-unterminated" and problem.range.start.line == line
    assert problem.message == f"the front matter is never closed; {message}"


def test_a_billion_laughs_front_matter_is_one_small_error_at_its_first_alias() -> None:
    problems = validate_record(f"---\n{BILLION_LAUGHS}---\nbody\n", "a.md")
    alias = only(problems, "front-matter-alias")
    assert span(alias) == (FIRST_ALIAS_LINE, FIRST_ALIAS_COLUMN, FIRST_ALIAS_LINE, FIRST_ALIAS_COLUMN + 1)
    assert "aliases are not allowed" in alias.message
    assert [d.code for d in problems] == ["remem/front-matter-alias"]
    assert sum(len(d.message) for d in problems) < ERROR_BYTES_MAX


def test_second_front_matter_block() -> None:
    text = record(body="\n---\nextra: 1\n---\nbody\n")
    assert span(only(validate_record(text, "prefer-uv.md"), "front-matter-duplicate")) == (6, 0, 6, 3)


def test_unknown_and_duplicate_keys_point_at_the_key() -> None:
    text = "---\nname: a\ndescription: d\ntype: project\ntags: x\nname: b\n---\nbody\n"
    problems = validate_record(text, "a.md")
    assert span(only(problems, "unknown-key")) == (4, 0, 4, 4)
    assert "tags" in only(problems, "unknown-key").message
    assert span(only(problems, "duplicate-key")) == (5, 0, 5, 4)


def test_missing_keys_are_each_reported() -> None:
    problems = validate_record("---\nname: a\n---\nbody\n", "a.md")
    missing = sorted(d.message for d in problems if d.code == "remem/missing-key")
    assert len(missing) == 2
    assert "`description`" in missing[0] and "`type`" in missing[1]
    assert all(span(d) == (0, 0, 0, 3) for d in problems if d.code == "remem/missing-key")


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("name: 42", "a number"),
        ("name: true", "a boolean"),
        ("name: [a]", "a list"),
        ("name: {a: 1}", "a mapping"),
        ("name:", "has no value"),
    ],
)
def test_non_string_values(line: str, fragment: str) -> None:
    text = f"---\n{line}\ndescription: d\ntype: project\n---\nbody\n"
    problem = only(validate_record(text, "a.md"), "non-string-value")
    assert fragment in problem.message
    assert span(problem)[:2] == (1, 6) or fragment == "has no value"


@pytest.mark.parametrize("line", ["description:", "description:   ", 'description: ""'])
def test_a_description_with_nothing_after_it_is_empty(line: str) -> None:
    text = f"---\nname: a\n{line}\ntype: project\n---\nbody\n"
    [problem] = validate_record(text, "a.md")
    assert problem.code == "remem/description-empty"
    assert problem.message == "the description is empty; say in one line when this memory applies"


def test_quoted_scalars_are_strings() -> None:
    text = "---\nname: \"a\"\ndescription: 'yes'\ntype: project\n---\nbody\n"
    assert validate_record(text, "a.md") == []


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("Prefer-UV", "lowercase; use `prefer-uv`"),
        ("prefer_uv", "contains `_`"),
        ("-prefer", "start and end"),
        ("prefer-", "start and end"),
        ("a" * 65, "65 characters"),
        ('""', "empty"),
    ],
)
def test_invalid_names_say_which_rule(name: str, fragment: str) -> None:
    problem = only(validate_record(record(name=name), None), "name-invalid")
    assert fragment in problem.message
    assert span(problem)[:2] == (1, 6)


def test_longest_valid_name_and_single_character_name() -> None:
    assert validate_record(record(name="a" * 64), None) == []
    assert validate_record(record(name="a"), "a.md") == []


def test_reserved_name() -> None:
    problem = only(validate_record(record(name="memory"), "memory.md"), "name-reserved")
    assert span(problem) == (1, 6, 1, 12)


def test_name_must_match_file_stem() -> None:
    problem = only(validate_record(record(name="prefer-uv"), "other.md"), "name-mismatch")
    assert span(problem) == (1, 6, 1, 15)
    assert "`prefer-uv.md`" in problem.message and "name: other" in problem.message


@pytest.mark.parametrize(
    ("description", "code", "where"),
    [
        ('""', "description-empty", (2, 13, 2, 15)),
        ('"   "', "description-empty", (2, 13, 2, 18)),
        ("x" * 201, "description-too-long", (2, 13, 2, 214)),
        ("|\n  one\n  two", "description-multiline", (2, 13, 4, 5)),
        ("first\n  second", "description-multiline", (2, 13, 3, 8)),
    ],
)
def test_descriptions(description: str, code: str, where: tuple[int, int, int, int]) -> None:
    problem = only(validate_record(record(description=description), "prefer-uv.md"), code)
    assert span(problem) == where


def test_description_of_exactly_200_characters_is_valid() -> None:
    assert validate_record(record(description="x" * 200), "prefer-uv.md") == []


def test_bad_type_lists_valid_ones_and_casing_is_explained() -> None:
    wrong = only(validate_record(record(type_="note"), "prefer-uv.md"), "type-invalid")
    assert all(t in wrong.message for t in ("`feedback`", "`project`", "`reference`"))
    assert span(wrong) == (3, 6, 3, 10)
    casing = only(validate_record(record(type_="Project"), "prefer-uv.md"), "type-invalid")
    assert "use `project`" in casing.message


def test_empty_body() -> None:
    problem = only(validate_record(record(body="  \n\n"), "prefer-uv.md"), "body-empty")
    assert span(problem) == (4, 0, 5, 0)


def test_body_size_limit_points_at_the_overflow() -> None:
    assert validate_record(record(body="x" * 8191 + "\n"), "prefer-uv.md") == []
    problem = only(validate_record(record(body="x" * 8192 + "\n"), "prefer-uv.md"), "body-too-large")
    assert span(problem) == (5, 8192, 6, 0)


@pytest.mark.parametrize(
    ("body", "overflow"),
    [
        ("x" * 9000 + "\n", 8192),  # one byte a character: the limit is the offset
        ("é" * 4096 + "\n", 4096),  # two bytes a character: the final newline is over
        ("é" * 5000 + "\n", 4096),
        ("a" + "é" * 5000 + "\n", 4096),  # the last whole character within the limit
        ("\ufeff" * 3 + "x" * 9000 + "\n", 8195),  # U+FEFF is not counted: canonical form drops it
    ],
)
def test_the_body_overflow_is_the_first_character_past_the_limit(body: str, overflow: int) -> None:
    problem = only(validate_record(record(body=body), "prefer-uv.md"), "body-too-large")
    assert span(problem)[:2] == (5, overflow)


@pytest.mark.parametrize(
    "body",
    [
        "x" * 9000 + "\n",
        "é" * 5000 + "\n\n\n",  # trailing blank lines are not counted: canonical form drops them
        "\ufeff" * 2 + "é" * 5000,  # leading U+FEFFs dropped, a final newline added
        "line\r\n" * 2000,  # CRLF becomes LF
        "a\ufeffb" * 3000 + "\n",
    ],
)
def test_an_over_size_body_is_measured_in_canonical_bytes(body: str) -> None:
    """The body is judged in place (never copied): its size is still its canonical form's."""
    size = len(canonicalize(body).encode("utf-8"))
    problem = only(validate_record(record(body=body), "prefer-uv.md"), "body-too-large")
    assert f"the body is {size} bytes; the limit is 8192" in problem.message


def test_global_size_limit_counts_utf8_bytes() -> None:
    assert validate_global("é" * 12287 + "\n") == []
    problem = only(validate_global("é" * 12288 + "\n"), "global-too-large")
    assert span(problem) == (0, 12288, 1, 0)


@pytest.mark.parametrize(
    ("text", "code", "severity", "where"),
    [
        ("\ufeffhello\n", "bom", Severity.WARNING, (0, 0, 0, 1)),
        ("a\r\nb\r\n", "line-endings", Severity.WARNING, (0, 1, 1, 0)),
        ("a\x00b\n", "control-character", Severity.ERROR, (0, 1, 0, 2)),
        ("a\x85b\n", "control-character", Severity.ERROR, (0, 1, 0, 2)),
        ("hello", "trailing-newline", Severity.WARNING, (0, 4, 0, 5)),
        ("hello\n\n\n", "trailing-newline", Severity.WARNING, (1, 0, 3, 0)),
    ],
)
def test_non_canonical_text(
    text: str, code: str, severity: Severity, where: tuple[int, int, int, int]
) -> None:
    problem = only(validate_global(text), code)
    assert problem.severity is severity
    assert span(problem) == where


def test_tab_and_empty_global_are_canonical() -> None:
    assert validate_global("a\tb\n") == []
    assert validate_global("") == []


def test_ranges_count_utf16_code_units() -> None:
    problem = only(validate_global("😀\x01\n"), "control-character")
    assert span(problem) == (0, 2, 0, 3)


def test_every_problem_is_reported_at_once() -> None:
    text = "\ufeff---\r\nname: Bad_Name\r\ndescription: ''\r\ntype: nope\r\nextra: 1\r\n---\r\n\r\n"
    codes = {d.code for d in validate_record(text, "x.md")}
    assert codes == {
        "remem/bom",
        "remem/line-endings",
        "remem/trailing-newline",
        "remem/name-invalid",
        "remem/description-empty",
        "remem/type-invalid",
        "remem/unknown-key",
        "remem/body-empty",
    }


def test_workspace_duplicate_names_ignore_case() -> None:
    files = {"a.md": record(name="a"), "b.md": record(name="a")}
    parsed, _ = validate_workspace(files)
    assert only(parsed["a.md"].diagnostics, "name-duplicate").message.count("b.md") == 1
    assert only(parsed["b.md"].diagnostics, "name-duplicate").message.count("a.md") == 1
    assert parsed["a.md"].record is None


def test_workspace_record_limit() -> None:
    files = {f"r{i}.md": record(name=f"r{i}") for i in range(201)}
    parsed, _ = validate_workspace(files)
    assert all(any(d.code == "remem/too-many-records" for d in p.diagnostics) for p in parsed.values())
    parsed, _ = validate_workspace(dict(list(files.items())[:200]))
    assert all(p.diagnostics == [] for p in parsed.values())


def test_index_in_sync_and_out_of_sync() -> None:
    files = {"a.md": record(name="a", type_="project"), "b.md": record(name="b")}
    parsed, _ = validate_workspace(files)
    good = render_index([p.record for p in parsed.values() if p.record])
    assert validate_workspace(files, good)[1] == []
    edited = good.replace("- [a]", "- [A]")
    problem = only(validate_workspace(files, edited)[1], "index-out-of-sync")
    line = edited.split("\n").index(next(x for x in edited.split("\n") if "[A]" in x))
    assert span(problem)[0] == line


def test_index_budget_is_a_warning() -> None:
    text = "".join(f"- line {i}\n" for i in range(201))
    problem = only(validate_index(text, None), "index-budget")
    assert problem.severity is Severity.WARNING


def test_past_the_index_budget_the_records_agents_miss_are_named_where_the_cut_falls() -> None:
    files = {
        f"r{n:03d}.md": record(name=f"r{n:03d}", type_=("feedback", "project")[n % 2]) for n in range(200)
    }
    parsed, _ = validate_workspace(files)
    text = render_index([p.record for p in parsed.values() if p.record])
    problem = only(validate_index(text, text), "index-budget")
    unseen = [line for line in text.split("\n")[200:] if line.startswith("- [")]
    first = unseen[0].split("]")[0].removeprefix("- [")
    assert f"so they do not see {len(unseen)} records, from `{first}` on" in problem.message
    assert span(problem)[0] == 200, "on the first line agents do not read"


def test_a_likely_credential_is_a_warning_on_its_exact_span_for_people(tmp_path: Path) -> None:
    text = record(body="Deploy with:\n  export GITHUB_TOKEN=ghp_0123456789abcdefghijABCDEFGHIJ012345\n")
    (tmp_path / "prefer-uv.md").write_text(text)
    found = only(lint_workspace_folder(tmp_path)["prefer-uv.md"], "likely-secret")
    assert found.severity is Severity.WARNING and "(github-token)" in found.message
    assert span(found) == (6, 22, 6, 62)
    # The store's own judgement is unchanged: a warning for people, and the record still loads.
    assert validate_record(text, "prefer-uv.md") == []
    global_file = tmp_path / "GLOBAL.md"
    global_file.write_text("Prefer terse answers.\npassword: hunter2hunter2\n")
    [report] = lint_paths([global_file])
    assert span(only(report.diagnostics, "likely-secret")) == (1, 10, 1, 24)


def test_a_save_kept_beside_its_file_is_a_warning_naming_it(tmp_path: Path) -> None:
    """A hand save that met a commit is kept as `<name>.unmerged-<time>` (swap.py); the store
    reads none of those, so the file's own diagnostics are where a person learns of it."""
    (tmp_path / "prefer-uv.md").write_text(record())
    (tmp_path / "prefer-uv.md.unmerged-1700000000000000000").write_text("Saved by hand.\n")
    (tmp_path / "prefer-uv-two.md.unmerged-1").write_text("another file's save\n")
    found = only(lint_workspace_folder(tmp_path)["prefer-uv.md"], "unmerged-save")
    assert found.severity is Severity.WARNING and span(found) == (0, 0, 0, 0)
    assert "prefer-uv.md.unmerged-1700000000000000000" in found.message
    global_file = tmp_path / "GLOBAL.md"
    global_file.write_text("Prefer terse answers.\n")
    assert lint_paths([global_file])[0].diagnostics == []
    (tmp_path / "GLOBAL.md.unmerged-2").write_text("Saved by hand.\n")
    [report] = lint_paths([global_file])
    assert "GLOBAL.md.unmerged-2" in only(report.diagnostics, "unmerged-save").message


def test_a_kept_save_whose_record_was_deleted_is_a_warning_on_the_index(tmp_path: Path) -> None:
    (tmp_path / "prefer-uv.md").write_text(record())
    parsed, _ = validate_workspace({"prefer-uv.md": record()})
    (tmp_path / "MEMORY.md").write_text(render_index([p.record for p in parsed.values() if p.record]))
    (tmp_path / "prefer-uv.md.unmerged-1").write_text("kept beside its record\n")
    assert lint_workspace_folder(tmp_path)["MEMORY.md"] == []
    (tmp_path / "gone.md.unmerged-2").write_text("Lines only this copy holds.\n")
    found = only(lint_workspace_folder(tmp_path)["MEMORY.md"], "unmerged-save")
    assert found.severity is Severity.WARNING
    assert "kept as gone.md.unmerged-2, and gone.md has been deleted since" in found.message


@pytest.mark.parametrize(
    "body", ["The token lives in $GITHUB_TOKEN.\n", "Rotate the password before the secret expires.\n"]
)
def test_naming_a_secret_is_not_a_warning(body: str) -> None:
    assert likely_secrets(record(body=body)) == []


def test_past_its_budget_a_text_is_judged_only_up_to_the_limit() -> None:
    """Decision 0225: the verdict of an over-size file costs the same whatever its length."""
    secret = "password: hunter2hunter2\n"
    head = "a\x01b\n" + secret
    long_global = head + "x" * 30_000 + "\n" + secret + "\x02\n"
    global_problems = validate_global(long_global, secrets=True)
    assert [d.code for d in global_problems] == [
        "remem/control-character",
        "remem/global-too-large",
        "remem/likely-secret",
    ]
    assert [span(d)[0] for d in global_problems] == [0, 2, 1]  # both at the head, none past the limit
    assert f"GLOBAL.md is {len(long_global)} bytes; the limit is 24576" in global_problems[1].message
    parsed = parse_record(
        record(body=head + "x" * 9_000 + "\n" + secret + "\x02\n"), "prefer-uv.md", secrets=True
    )
    assert [(d.code, span(d)[0]) for d in parsed.diagnostics] == [
        ("remem/control-character", 5),
        ("remem/body-too-large", 7),
        ("remem/likely-secret", 6),
    ]
    # Within the budget the whole text is judged, as before.
    within = parse_record(
        record(body=head + "x" * 100 + "\n" + secret + "\x02\n"), "prefer-uv.md", secrets=True
    )
    assert [(d.code, span(d)[0]) for d in within.diagnostics] == [
        ("remem/control-character", 5),
        ("remem/control-character", 9),
        ("remem/likely-secret", 6),
        ("remem/likely-secret", 8),
    ]


@pytest.mark.parametrize(
    "text",
    [
        record(name="Prefer UV", type_="Feedback"),
        "\ufeff" + record(description="|\n  two\n  lines").replace("\n", "\r\n"),
        record(name="other-name", body="Body.\n" * 50),
    ],
)
def test_the_kept_front_matter_verdict_is_the_one_judged_afresh(text: str) -> None:
    """The fields' verdict is kept by the text up to the front matter's end and the file name."""
    validation._judged_fields.cache_clear()
    fresh = parse_record(text, "prefer-uv.md")
    kept = parse_record(text, "prefer-uv.md")
    assert (kept.diagnostics, kept.fields, kept.name_span) == (
        fresh.diagnostics,
        fresh.fields,
        fresh.name_span,
    )


def test_the_kept_front_matter_verdict_depends_on_the_file_name() -> None:
    text = record(name="other-name")
    assert "remem/name-mismatch" in [d.code for d in parse_record(text, "prefer-uv.md").diagnostics]
    assert parse_record(text, "other-name.md").diagnostics == []


@pytest.mark.parametrize(
    ("file_name", "offered"),
    [("other.md", " or set `name: other`"), ("Upper.md", ""), ("memory.md", ""), ("a_b.md", "")],
)
def test_a_name_differing_from_its_file_offers_the_file_name_only_when_it_is_a_name(
    file_name: str, offered: str
) -> None:
    """`A.md` holding `name: a`: setting `name: A` would break the name rules in turn."""
    message = only(validate_record(VALID, file_name), "name-mismatch").message
    assert message == (
        f"the name `prefer-uv` differs from the file name `{file_name}`; rename the file to "
        f"`prefer-uv.md`{offered}"
    )


def test_while_a_record_is_not_utf8_the_index_is_not_judged(tmp_path: Path) -> None:
    """Its text read with U+FFFD parses to a record the store would never render: judging the
    index against it said MEMORY.md was out of sync, and offered to write that record in."""
    (tmp_path / "prefer-uv.md").write_text(record())
    parsed, _ = validate_workspace({"prefer-uv.md": record()})
    (tmp_path / "MEMORY.md").write_text(render_index([p.record for p in parsed.values() if p.record]))
    assert lint_workspace_folder(tmp_path)["MEMORY.md"] == []
    (tmp_path / "latin.md").write_bytes(record("latin", description="caf\xe9").encode("latin-1"))
    found = lint_workspace_folder(tmp_path)
    assert [d.code for d in found["latin.md"]] == ["remem/encoding"] and found["MEMORY.md"] == []


def test_an_upper_case_name_says_at_once_what_the_file_must_then_be_called() -> None:
    """`Upper.md` holding `name: Prefer-UV`: once told to lower-case the name, the next check
    said the file's name differs; both are said the first time."""
    text = record("Prefer-UV")
    said = {
        f: only(validate_record(text, f), "name-invalid").message
        for f in ("Upper.md", "dup2.md", "prefer-uv.md")
    }
    assert said == {
        "Upper.md": "names are lowercase; use `prefer-uv`, and rename the file `Upper.md` to `prefer-uv.md`",
        "dup2.md": "names are lowercase; use `prefer-uv`, and rename the file `dup2.md` to `prefer-uv.md` "
        "(or set `name: dup2`)",
        "prefer-uv.md": "names are lowercase; use `prefer-uv`",
    }
