"""Pure validation of memory files: records, `GLOBAL.md`, `MEMORY.md` and whole workspaces.

Every function returns all problems at once, each with a stable code, a severity, a message that
says how to fix it and an exact range, so the CLI and the language server show the same thing.
Nothing here touches the file system.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import yaml

from .. import credentials, safe_yaml
from ..protocol.memory import Record
from .canonical import BOM, canonical_problems, canonicalize
from .diagnostics import Diagnostic, Range, Severity, TextPositions, diagnostic, has_errors
from .index import entry_names, lines_seen, render_index
from .record import (
    BODY_MAX_BYTES,
    DESCRIPTION_MAX,
    FIELDS,
    FRONT_MATTER_MAX_BYTES,
    GLOBAL_MAX_BYTES,
    INDEX_MAX_BYTES,
    INDEX_MAX_LINES,
    NAME_MAX,
    RECORDS_MAX,
    RESERVED_NAMES,
    TYPE_MEANINGS,
    RecordType,
    record_name_of,
)

_DELIMITER = r"---[ \t]*(?:\r\n|\r|\n|\Z)"
_OPENING = re.compile(_DELIMITER)
_SECOND_BLOCK = re.compile(r"\s*---[ \t]*(?:\r\n|\r|\n)")
_NOT_BLANK = re.compile(r"\S")  # `\s` is `str.isspace()`'s whitespace
_TAB_INDENT = re.compile(r"^[ ]*\t", re.MULTILINE)
_CLOSING = re.compile(r"(?<=[\r\n])" + _DELIMITER)  # at a line start, whatever the line break
_NAME = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?")
_STR_TAG = "tag:yaml.org,2002:str"
_NULL_TAG = "tag:yaml.org,2002:null"
_KINDS = {
    "int": "a number",
    "float": "a number",
    "bool": "a boolean",
    "seq": "a list",
    "map": "a mapping",
    "timestamp": "a date",
}
_TYPES = frozenset(t.value for t in RecordType)
_VALID_TYPES = ", ".join(f"`{t.value}` ({TYPE_MEANINGS[t]})" for t in RecordType)


@dataclass
class ParsedRecord:
    """A record file's validation result; `record` is set only when there are no errors."""

    record: Record | None
    diagnostics: list[Diagnostic]
    name_span: tuple[int, int] | None = None  # offsets; turned into a range only on a problem
    positions: TextPositions | None = None
    fields: dict[str, str] = field(default_factory=dict)


@dataclass
class _FrontMatter:
    start: int  # offset of the first front-matter line
    end: int  # offset just past the last front-matter line
    body_start: int


def validate_global(
    text: str, positions: TextPositions | None = None, *, secrets: bool = False
) -> list[Diagnostic]:
    """Problems of a `GLOBAL.md` text: canonical form and the 24 KiB budget (and with `secrets`,
    the likely credentials). Past the budget only the size is reported (decision 0225)."""
    positions = positions or TextPositions(text)
    found = _over_budget(text, GLOBAL_MAX_BYTES, len(positions.utf8))
    end = len(text) if found is None else found[0]
    problems = canonical_problems(text, positions, end)
    if found is not None:
        over, size = found
        problems.append(
            diagnostic(
                "global-too-large",
                Severity.ERROR,
                f"GLOBAL.md is {size} bytes; the limit is {GLOBAL_MAX_BYTES} bytes. Move "
                "project-specific facts into workspace records or shorten it (from here on is over)",
                positions.range(over, len(text)),
            )
        )
    if secrets:
        problems += likely_secrets(text, positions, end)
    return problems


def parse_record(text: str, file_name: str | None = None, *, secrets: bool = False) -> ParsedRecord:
    """Validate one record file; `file_name` (e.g. `prefer-uv.md`) enables the name check and
    `secrets` the likely-credential warnings. Past the body's budget only the size is reported."""
    positions = TextPositions(text)
    problems: list[Diagnostic] = []
    parsed = ParsedRecord(None, problems)
    front = _find_front_matter(text, positions, problems)
    end = len(text)
    if front is not None:
        _check_fields(text, front, positions, file_name, parsed)
        end = _body_problems(text, front, positions, problems)
    problems[:0] = canonical_problems(text, positions, end)
    if secrets:
        problems += likely_secrets(text, positions, end)
    if front is not None and not has_errors(problems) and len(parsed.fields) == len(FIELDS):
        parsed.record = Record(**parsed.fields, content=canonicalize(text[front.body_start :]))
    return parsed


def validate_record(text: str, file_name: str | None = None) -> list[Diagnostic]:
    return parse_record(text, file_name).diagnostics


def likely_secrets(
    text: str, positions: TextPositions | None = None, end: int | None = None
) -> list[Diagnostic]:
    """A warning on each likely credential (DESIGN §9): memory is loaded into every agent session.

    For people (the editor, `remem memory validate`, an agent's update), never on the store's
    read path: a warning changes nothing there, and scanning costs more than the other rules.
    Only `text[:end]` is scanned: past a file's budget the store refuses it whole."""
    positions = positions or TextPositions(text)
    scanned = (text, positions.utf8) if end is None or end >= len(text) else (text[:end], None)
    return [
        diagnostic(
            "likely-secret",
            Severity.WARNING,
            f"this looks like a credential ({found.kind}); every agent session loads memory, so remove "
            "it and say where the secret lives instead (an environment variable, a vault)",
            positions.range(found.start, found.end),
        )
        for found in credentials.find(*scanned)
    ]


def validate_index(text: str, expected: str | None) -> list[Diagnostic]:
    """Problems of `MEMORY.md`; `expected` is what the records render to (None: unknown)."""
    # A keystroke in a record judges the same MEMORY.md against the same rendering again; a
    # text past the index's budget is not kept, so the cache stays small.
    judge = _kept_index_problems if len(text) <= INDEX_MAX_BYTES else _index_problems
    return list(judge(text, expected))


def _index_problems(text: str, expected: str | None) -> tuple[Diagnostic, ...]:
    positions = TextPositions(text)
    problems = canonical_problems(text, positions)
    canonical = canonicalize(text)
    lines = canonical.count("\n")
    size = len(canonical.encode("utf-8"))
    if lines > INDEX_MAX_LINES or size > INDEX_MAX_BYTES:
        cut, unseen = _past_the_budget(canonical)
        problems.append(
            diagnostic(
                "index-budget",
                Severity.WARNING,
                f"MEMORY.md has {lines} lines and {size} bytes; agents truncate it past "
                f"{INDEX_MAX_LINES} lines or {INDEX_MAX_BYTES} bytes, so {unseen}. Merge or delete records",
                positions.line_range(min(cut, len(positions.line_starts) - 1)),
            )
        )
    if expected is not None and canonical != expected:
        line = _first_different_line(canonical, expected)
        problems.append(
            diagnostic(
                "index-out-of-sync",
                Severity.WARNING,
                "MEMORY.md differs from what the records render to (it is generated; hand edits "
                f"are lost). First difference at line {line + 1}: regenerate it",
                positions.line_range(min(line, len(positions.line_starts) - 1)),
            )
        )
    return tuple(problems)


_kept_index_problems = functools.lru_cache(maxsize=16)(_index_problems)


def _past_the_budget(canonical: str) -> tuple[int, str]:
    """The first line an agent does not read (0-based), and which records it therefore misses."""
    cut = lines_seen(canonical)
    missed = entry_names(canonical.split("\n")[cut:])
    if not missed:
        return cut, f"what follows line {cut} is not seen"
    if len(missed) == 1:
        return cut, f"they do not see `{missed[0]}`"
    return cut, f"they do not see {len(missed)} records, from `{missed[0]}` on"


def validate_workspace(
    files: dict[str, str],
    index_text: str | None = None,
    parse: Callable[[str, str], ParsedRecord] = parse_record,
    unread: bool = False,
) -> tuple[dict[str, ParsedRecord], list[Diagnostic]]:
    """Validate every record of a workspace together; return per-file results and the index's.

    `files` maps record file names to their text. Workspace-wide rules (case-insensitive
    duplicate names, the record limit, `MEMORY.md` in sync) are added to the per-file results.
    `parse` stands in for `parse_record` (a cache of it); its results are changed in place.
    `unread`: a record's bytes could not be read as text (not UTF-8, too large), so what the
    index should say is unknown, as while any record is invalid.
    """
    parsed = {name: parse(text, name) for name, text in files.items()}
    check_duplicates(parsed)
    if len(files) > RECORDS_MAX:
        for name, result in parsed.items():
            result.diagnostics.append(too_many(len(files), files[name]))
    index_problems: list[Diagnostic] = []
    if index_text is not None:
        records = [p.record for p in parsed.values() if p.record is not None]
        all_valid = len(records) == len(parsed) and not unread
        index_problems = validate_index(index_text, render_index(records) if all_valid else None)
    return parsed, index_problems


def too_many(count: int, text: str) -> Diagnostic:
    return diagnostic(
        "too-many-records",
        Severity.ERROR,
        f"the workspace has {count} records; the limit is {RECORDS_MAX}. Merge or delete some",
        TextPositions(text).line_range(0),
    )


def check_duplicates(parsed: dict[str, ParsedRecord]) -> None:
    seen: dict[str, str] = {}
    for file_name in sorted(parsed):
        name = parsed[file_name].fields.get("name")
        if name is None:
            continue
        folded = name.casefold()
        if folded in seen:
            for owner, other in ((file_name, seen[folded]), (seen[folded], file_name)):
                _add_duplicate(parsed[owner], name, other)
        else:
            seen[folded] = file_name


def _add_duplicate(result: ParsedRecord, name: str, other_file: str) -> None:
    assert result.name_span is not None and result.positions is not None  # a parsed name has its span
    result.record = None
    result.diagnostics.append(
        Diagnostic(
            code="remem/name-duplicate",
            severity=Severity.ERROR,
            message=f"another record ({other_file}) already uses the name `{name}` (names are "
            "compared ignoring case); rename one of them",
            range=result.positions.range(*result.name_span),
        )
    )


def _find_front_matter(
    text: str, positions: TextPositions, problems: list[Diagnostic]
) -> _FrontMatter | None:
    opening = _OPENING.match(text, 1 if text.startswith(BOM) else 0)
    if opening is None:
        problems.append(
            diagnostic(
                "front-matter-missing",
                Severity.ERROR,
                "a record starts with front matter: a `---` line, `name:`, `description:` and "
                "`type:` lines, then a closing `---` line",
                positions.line_range(0),
            )
        )
        return None
    closing = _CLOSING.search(text, opening.end())
    if closing is not None:
        return _FrontMatter(opening.end(), closing.start(), closing.end())
    problems.append(_unterminated(text, opening.end(), positions))
    return None


def _unterminated(text: str, start: int, positions: TextPositions) -> Diagnostic:
    """The front matter never closed: where the `---` line goes is after its last `name:`,
    `description:` or `type:` line (the body's first line follows it); with none, the keys are
    missing too."""
    end = unclosed_front_matter_end(text)
    if end is None:
        message = (
            "the front matter is never closed; below the `---` line write `name:`, `description:` "
            "and `type:` lines, then a closing `---` line"
        )
        return diagnostic("front-matter-unterminated", Severity.ERROR, message, positions.line_range(0))
    last = positions.position(end - 1).line
    shown = _head(text[positions.line_starts[last] : end].strip())
    message = f"the front matter is never closed; add a `---` line after `{shown}` (line {last + 1})"
    return diagnostic("front-matter-unterminated", Severity.ERROR, message, positions.line_range(last))


# A line of a front matter never closed: blank or a comment, a `key:` line, or one indented (a
# value's continuation). Any other line is the body's.
_OPEN_LINE = re.compile(
    r"(?:[ \t]*(?:#[^\r\n]*)?"
    r"|(?P<key>[A-Za-z0-9_-]+):(?P<value>[ \t][^\r\n]*)?"
    r"|(?P<indented>[ \t]+\S)[^\r\n]*)"
    r"(?:\r\n|\r|\n|\Z)"
)
# What follows a key whose value lies wholly on the lines below: nothing, a comment, or a block
# scalar's header (`|`, `>-`).
_VALUE_BELOW = re.compile(r"[ \t]*(?:[|>][-+1-9]*[ \t]*)?(?:#.*)?")


def unclosed_front_matter_end(text: str) -> int | None:
    """Where the closing `---` line of a front matter never closed belongs: just past the last
    `name:`, `description:` or `type:` line and the lines indented under it, the scan ending
    with the body's first line or once the three are seen. Comments and blank lines are the
    front matter's; another `key:` line only when one of the three follows it, since the body
    may well begin `Note: …`, or indented (code). None when there is no such line (or the front
    matter is closed)."""
    opening = _OPENING.match(text, 1 if text.startswith(BOM) else 0)
    if opening is None or _CLOSING.search(text, opening.end()) is not None:
        return None
    seen: set[str] = set()
    end: int | None = None
    owner, below = None, False  # the key the indented lines continue; its value all below it
    at = opening.end()
    while at < len(text) and (line := _OPEN_LINE.match(text, at)) is not None:
        at = line.end()
        if line["key"] is not None:
            if len(seen) == len(FIELDS):
                break
            owner, below = line["key"], _VALUE_BELOW.fullmatch(line["value"] or "") is not None
            if owner in FIELDS:
                seen.add(owner)
                end = at
        elif line["indented"] is not None:
            if owner in FIELDS and (below or len(seen) < len(FIELDS)):
                end = at
            elif len(seen) == len(FIELDS):
                break
        elif not below:  # a blank or comment line ends a value begun on its key's line
            owner = None
    return end


def _check_fields(
    text: str,
    front: _FrontMatter,
    positions: TextPositions,
    file_name: str | None,
    parsed: ParsedRecord,
) -> None:
    # Everything the fields' checks report lies within the text up to the front matter's end,
    # and a keystroke in the body leaves that unchanged: its verdict is kept by that text.
    head = text[: front.end]
    judge = _judged_fields if len(head) <= FRONT_MATTER_MAX_BYTES else _judge_fields
    diagnostics, fields, name_span = judge(head, front.start, front.end, file_name)
    parsed.diagnostics += diagnostics
    parsed.fields.update(fields)
    if name_span is not None:
        parsed.name_span, parsed.positions = name_span, positions


def _judge_fields(
    head: str, start: int, end: int, file_name: str | None
) -> tuple[tuple[Diagnostic, ...], tuple[tuple[str, str], ...], tuple[int, int] | None]:
    """The front matter's problems, string fields and name span, from the text up to its end."""
    parsed = ParsedRecord(None, [])
    _check_head(head, _FrontMatter(start, end, end), TextPositions(head), file_name, parsed)
    return tuple(parsed.diagnostics), tuple(parsed.fields.items()), parsed.name_span


_judged_fields = functools.lru_cache(maxsize=256)(_judge_fields)


def _check_head(
    text: str,
    front: _FrontMatter,
    positions: TextPositions,
    file_name: str | None,
    parsed: ParsedRecord,
) -> None:
    source = text[front.start : front.end]
    problems = parsed.diagnostics
    node = _compose(source, front, positions, problems)
    if node is None:
        return
    seen: dict[str, yaml.Node] = {}
    for key_node, value_node in node.value:
        key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
        if key not in FIELDS:
            problems.append(
                diagnostic(
                    "unknown-key",
                    Severity.ERROR,
                    f"unknown front-matter key `{key}`; a record has exactly `name`, "
                    "`description` and `type` (put anything else in the body)",
                    _node_range(key_node, front, positions),
                )
            )
        elif key in seen:
            problems.append(
                diagnostic(
                    "duplicate-key",
                    Severity.ERROR,
                    f"`{key}` appears twice in the front matter; keep one",
                    _node_range(key_node, front, positions),
                )
            )
        else:
            seen[key] = value_node
            _check_value(key, value_node, front, positions, file_name, parsed)
    problems += _comments(source, node, front, positions)
    for key in FIELDS:
        if key not in seen:
            problems.append(
                diagnostic(
                    "missing-key",
                    Severity.ERROR,
                    f"the front matter has no `{key}`; add a `{key}:` line",
                    positions.line_range(0),
                )
            )


def _compose(
    source: str, front: _FrontMatter, positions: TextPositions, problems: list[Diagnostic]
) -> yaml.MappingNode | None:
    tab = _TAB_INDENT.search(source)
    if tab is not None:
        at = front.start + tab.end() - 1
        problems.append(
            diagnostic(
                "front-matter-tab",
                Severity.ERROR,
                "tabs cannot indent YAML front matter; use spaces",
                positions.range(at, at + 1),
            )
        )
        return None
    if len(source) > FRONT_MATTER_MAX_BYTES // 4 and len(source.encode("utf-8")) > FRONT_MATTER_MAX_BYTES:
        # Parsed, 100 000 keys took seconds and hundreds of MB; a valid front matter is 3 lines.
        problems.append(
            diagnostic(
                "front-matter-too-large",
                Severity.ERROR,
                f"the front matter is over {FRONT_MATTER_MAX_BYTES // 1024} KiB, so it is not parsed; "
                "it holds only `name:`, `description:` and `type:` lines",
                positions.range(front.start, front.start),
            )
        )
        return None
    try:
        node = _yaml_node(source)
    except yaml.reader.ReaderError:
        return None  # control characters: already reported at their exact place
    except yaml.MarkedYAMLError as exc:
        mark = _error_mark(exc)
        at = front.start + (mark.index if mark is not None else 0)
        if isinstance(exc, safe_yaml.AliasRefused):
            code, message = (
                "front-matter-alias",
                "YAML aliases are not allowed in front matter; write `key: value` lines",
            )
        else:
            code = "front-matter-syntax"
            advice = _syntax_advice(exc, positions.text, at)
            message = f"the front matter is not valid YAML: {exc.problem}; {advice}"
        problems.append(
            diagnostic(code, Severity.ERROR, message, positions.range(at, min(at + 1, front.end)))
        )
        return None
    if node is None:
        return yaml.MappingNode("tag:yaml.org,2002:map", [])
    if not isinstance(node, yaml.MappingNode):
        problems.append(
            diagnostic(
                "front-matter-not-mapping",
                Severity.ERROR,
                "the front matter must be `key: value` lines (a YAML mapping)",
                _node_range(node, front, positions),
            )
        )
        return None
    return node


def _error_mark(exc: yaml.MarkedYAMLError) -> yaml.Mark | None:
    """Where the text YAML refused starts. Scanning a token (`'tis`, `*important*`) or parsing
    a flow collection (`[a`), YAML may notice only at the end of the stream: the token or
    collection's start, its context mark, is the place; other contexts name the whole mapping."""
    context = exc.context or ""
    if exc.context_mark is not None and context.startswith(("while scanning", "while parsing a flow")):
        return exc.context_mark
    return exc.problem_mark


def _syntax_advice(exc: yaml.MarkedYAMLError, text: str, at: int) -> str:
    """How to mend the line YAML refused. A second `: ` in a plain value is the usual slip
    (`description: Use uv: not pip`), then a value starting with one of YAML's indicators
    (`'tis`, `[draft]`, `@team`): the lines are `key: value` already, so the advice is the
    quotes, shown on the line as written. A value quoted already gets what its quotes need, and
    one whose `"` is never closed is shown closed (quoted again, the `"` was kept as text)."""
    written = _written(text, at)
    if (exc.problem or "").startswith("mapping values are not allowed"):
        if written is None:  # a continuation line, say: its own key is elsewhere
            return 'a value holding `: ` must be quoted: `description: "…"`'
        return f"a value holding `: ` must be quoted: `{written[0]}: {_quoted(written[1])}`"
    if written is None or not _INDICATOR.match(written[1]):
        return "write `key: value` lines"
    key, value = written
    quotes = _QUOTED.get(value[0])
    closed = quotes.match(value) if quotes is not None else None
    if closed is not None:
        return _requoting(key, value, closed) or "write `key: value` lines"
    if value[0] == '"':  # quotes whose close was forgotten; a `'` may well be an apostrophe (`'tis`)
        meant = _unquoted(value + '"')
        return f'the `"` that opens the value is never closed: close it, `{key}: {_quoted(meant)}`'
    shown = f"`` {value[0]} ``" if value[0] == "`" else f"`{value[0]}`"
    return f"a value starting with {shown} must be quoted: `{key}: {_quoted(value)}`"


def _written(text: str, at: int) -> tuple[str, str] | None:
    """The key and value of the `key: value` line holding `at`, the lines indented under it
    joined to the value with a space, as they are to be written on one line."""
    start = max(text.rfind("\n", 0, at), text.rfind("\r", 0, at)) + 1
    end = _line_end(text, at)
    line = _KEY_LINE.fullmatch(text[start:end].rstrip())
    if line is None:
        return None
    below = _INDENTED_BELOW.match(text, end)
    lines = below[0].splitlines() if below is not None else []
    return line[1], " ".join([line[2], *(more.strip() for more in lines if more.strip())])


def _requoting(key: str, value: str, closed: re.Match[str]) -> str | None:
    """Advice for a value whose quotes close on its line: the text after them goes inside (or,
    the quote marks being text, the whole is quoted); with none, a `\\` in double quotes began
    an escape YAML does not know, meant as the backslash it is (`"C:\\dir"`). Each line shown
    reads back as the text meant."""
    inner = _unquoted(closed[0])
    after = value[closed.end() :]
    rest = "" if _COMMENT.match(after) else after.strip()
    if rest:
        return (
            f"text follows the closing `{value[0]}`: put it inside the quotes, "
            f"`{key}: {_quoted(f'{inner.rstrip()} {rest}')}`, or to keep the quote marks as text, quote the "
            f"whole value: `{key}: {_quoted(value)}`"
        )
    if value[0] != '"':
        return None
    single = "'" + inner.replace("'", "''") + "'"
    return (
        f"in double quotes a `\\` begins an escape: write each `\\` as `\\\\`, `{key}: {_quoted(inner)}`, "
        f"or quote with `'`, in which `\\` is itself: `{key}: {single}`"
    )


def _unquoted(quoted: str) -> str:
    """The text a quoted value reads as; where an escape is unknown to YAML, each backslash
    but one before `"` or `\\` taken as itself."""
    try:
        text = safe_yaml.load(quoted)
    except yaml.YAMLError:
        return re.sub(r'\\([\\"])', r"\1", quoted[1:-1])
    return str(text)


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _line_end(text: str, at: int) -> int:
    ends = [i for i in (text.find("\n", at), text.find("\r", at)) if i >= 0]
    return min(ends, default=len(text))


_KEY_LINE = re.compile(r"([A-Za-z0-9_-]+):[ \t]+(.+)")
_INDENTED_BELOW = re.compile(r"(?:(?:\r\n|\r|\n)[ \t]+\S[^\r\n]*)*")
# A value quoted and closed: in double quotes `\` escapes the next character, in single `''` is one.
_QUOTED = {'"': re.compile(r'"(?:[^"\\]|\\.)*"'), "'": re.compile(r"'(?:[^']|'')*'")}
# What YAML reads as the start of something other than plain text (`#` aside: a comment).
_INDICATOR = re.compile(r"""[!&*|>'"%@`\[\]{},]|[-?:](?:[ \t]|$)""")
_COMMENT = re.compile(r"[ \t]+#")
# How much of the line a warning quotes on each side of the `#` where YAML cut it: enough to
# find the place, where the whole of a long line would make the message kilobytes.
_SHOWN_SIDE = 60


def _comments(
    source: str, root: yaml.MappingNode, front: _FrontMatter, positions: TextPositions
) -> list[Diagnostic]:
    """Text YAML cut from an unquoted description as a comment (decision 0504): the description
    is free text, so what follows ` #` there may well have been meant as its own. A note after
    `name` or `type` (neither can hold a `#`), after a quoted value or on a line of its own was
    written as a comment, and is left alone."""
    for key, value in root.value:
        if not (
            isinstance(key, yaml.ScalarNode)
            and key.value == "description"
            and isinstance(value, yaml.ScalarNode)
            and value.tag == _STR_TAG
            and not value.style  # plain: the C loader says "", PyYAML None
            and value.start_mark.line == value.end_mark.line
        ):
            continue
        end = value.end_mark.index
        hash_mark = _COMMENT.match(source[end : _line_end(source, end)])
        if hash_mark is None:
            continue
        at = end + hash_mark.end() - 1
        comment = source[at : _line_end(source, at)].rstrip()
        before = source[value.start_mark.index : at]
        message = (
            f"`{_head(comment)}` is a YAML comment, dropped from the description, which reads "
            f"`{_tail(value.value)}`; {_keeping(before, comment)}"
        )
        where = positions.range(front.start + at, front.start + at + len(comment))
        return [diagnostic("front-matter-comment", Severity.WARNING, message, where)]
    return []


def _keeping(before: str, comment: str) -> str:
    """How to keep the comment's text: the value quoted, shown cut around the `#`, unless quoted
    whole it is over the description's limit, when quoting alone would make the record invalid
    (decision 0504, amended). Within the limit the value is shown whole, as one to copy: cut,
    a copy would lose the text the warning is about."""
    length = len((before + comment).strip())
    if length <= DESCRIPTION_MAX:
        return f"quote the value to keep the text after `#`: `description: {_quoted(before + comment)}`"
    line = _quoted(_tail(before) + _head(comment))
    return (
        f"quoted with the text after `#`, the description would be {length} characters, over the "
        f"{DESCRIPTION_MAX} allowed (`description: {line}`): shorten it to at most {DESCRIPTION_MAX} "
        "characters, moving the rest to the body, then quote it"
    )


def _head(text: str) -> str:
    return text if len(text) <= _SHOWN_SIDE else text[: _SHOWN_SIDE - 1] + "…"


def _tail(text: str) -> str:
    return text if len(text) <= _SHOWN_SIDE else "…" + text[1 - _SHOWN_SIDE :]


@functools.lru_cache(maxsize=1024)
def _yaml_node(source: str) -> yaml.Node | None:
    # An editor re-validates a record on each keystroke, nearly always in its body: the same
    # front matter comes back, and composing it is a third of a record's validation.
    return safe_yaml.compose(source)


def _node_range(node: yaml.Node, front: _FrontMatter, positions: TextPositions) -> Range:
    return positions.range(*_node_span(node, front, positions.text))


def _node_span(node: yaml.Node, front: _FrontMatter, text: str) -> tuple[int, int]:
    start = front.start + node.start_mark.index
    end = front.start + node.end_mark.index
    # Block scalars end at the start of the next line; keep the squiggle on the value's lines.
    while end > start and text[end - 1] in "\r\n":
        end -= 1
    return start, end


def _check_value(
    key: str,
    node: yaml.Node,
    front: _FrontMatter,
    positions: TextPositions,
    file_name: str | None,
    parsed: ParsedRecord,
) -> None:
    if key == "name":
        parsed.name_span = _node_span(node, front, positions.text)
        parsed.positions = positions
    if (
        key == "description"
        and isinstance(node, yaml.ScalarNode)
        and node.tag == _NULL_TAG
        and not node.value
    ):
        parsed.diagnostics.append(_no_description(node, front, positions))
        return
    if not isinstance(node, yaml.ScalarNode) or node.tag != _STR_TAG:
        parsed.diagnostics.append(_non_string(key, node, _node_range(node, front, positions), file_name))
        return
    value: str = node.value
    parsed.fields[key] = value
    spans_lines = node.style in ("|", ">") or node.end_mark.line > node.start_mark.line
    message = _CHECKERS[key](value, spans_lines, file_name)
    if message is not None:
        code, text = message
        parsed.diagnostics.append(diagnostic(code, Severity.ERROR, text, _node_range(node, front, positions)))


def _no_description(node: yaml.ScalarNode, front: _FrontMatter, positions: TextPositions) -> Diagnostic:
    """`description:` with nothing YAML reads after it: an empty description, as `""` is. What
    follows ` #` there is a comment to YAML, though it was likely meant as the description
    (`description: #tests first`): that is said, with the line quoted to keep it."""
    at = front.start + node.start_mark.index
    text = positions.text
    hash_mark = _COMMENT.match(text, at, _line_end(text, at))
    empty = _description_problem("", False, None)
    assert empty is not None
    code, message = empty
    if hash_mark is None:
        return diagnostic(code, Severity.ERROR, message, positions.range(at, at))
    start = hash_mark.end() - 1
    comment = text[start : _line_end(text, start)].rstrip()
    message = f"`{_head(comment)}` is a YAML comment, so the description is empty; {_keeping('', comment)}"
    return diagnostic(code, Severity.ERROR, message, positions.range(start, start + len(comment)))


def _non_string(key: str, node: yaml.Node, where: Range, file_name: str | None) -> Diagnostic:
    if isinstance(node, yaml.ScalarNode) and node.tag == _NULL_TAG:
        message = f"`{key}` has no value; write it on the same line, e.g. `{key}: ...`"
    else:
        kind = _KINDS.get(node.tag.rsplit(":", 1)[-1], "non-string value")
        message = f"`{key}` must be a string, not {kind}; {_non_string_advice(key, file_name)}"
    return diagnostic("non-string-value", Severity.ERROR, message, where)


def _non_string_advice(key: str, file_name: str | None) -> str:
    """What the editor's quick fix does: quoted, `yes` or `[a]` would still be no type, and
    `name: 3` quoted in `n3.md` differs from the file's name (in `3.md` it is the file's name)."""
    if key == "type":
        return f"use one of {_VALID_TYPES}"
    stem = record_name_of(file_name) if key == "name" and file_name else None
    if stem is None or _name_rules(stem) is not None:
        return "put the value in quotes"
    return file_name_advice(stem)


def file_name_advice(stem: str) -> str:
    """How to set the name to the file's name `stem`, as the editor's fix writes it: `3.md`'s
    quoted, as written bare it would be the number again."""
    line = key_line("name", stem)
    if line == f"name: {stem}":
        return f"set the name to `{stem}` (the file name)"
    return f"set `{line}` (the file name, in quotes so that it reads as text)"


def key_line(key: str, value: str) -> str:
    """`key: value` with the value quoted only when YAML would read it as something else."""
    dumped = yaml.safe_dump({key: value}, allow_unicode=True, width=1 << 30, default_flow_style=False)
    return dumped.rstrip("\n")


def _name_problem(value: str, spans_lines: bool, file_name: str | None) -> tuple[str, str] | None:
    broken = _name_rules(value)
    stem = record_name_of(file_name) if file_name else None
    if broken is not None:
        return broken if stem is None else (broken[0], broken[1] + _and_the_file(value, stem, file_name))
    if stem is not None and stem != value:
        # The file's name is offered only when it is a name itself (`A.md` holds none), and as
        # the line the editor's fix writes: `name: 3` bare would be a number, not `3.md`'s name.
        other = "" if _name_rules(stem) is not None else f" or set `{key_line('name', stem)}`"
        return "name-mismatch", (
            f"the name `{value}` differs from the file name `{file_name}`; rename the file to "
            f"`{value}.md`{other}"
        )
    return None


def _and_the_file(value: str, stem: str, file_name: str | None) -> str:
    """What else the lower-cased name asks, said at once rather than at the next check: the
    file's name, when it differs from it."""
    lowered = value.lower()
    if lowered == stem or _name_rules(lowered) is not None:
        return ""
    if _name_rules(stem) is None:
        return f", and rename the file `{file_name}` to `{lowered}.md` (or set `{key_line('name', stem)}`)"
    return f", and rename the file `{file_name}` to `{lowered}.md`"


def _name_rules(value: str) -> tuple[str, str] | None:
    """What a name breaks of the rules for any name, whatever file holds it."""
    if not _NAME.fullmatch(value):
        return "name-invalid", _name_rule_broken(value)
    if value in RESERVED_NAMES:
        return "name-reserved", (
            f"`{value}` is reserved (memory.md would clash with MEMORY.md on case-insensitive "
            "disks); choose another name"
        )
    return None


def _name_rule_broken(value: str) -> str:
    if not value:
        return "the name is empty; use lowercase letters, digits and hyphens, e.g. `prefer-uv`"
    if len(value) > NAME_MAX:
        return f"the name is {len(value)} characters long; at most {NAME_MAX} are allowed"
    lowered = value.lower()
    if value != lowered and _NAME.fullmatch(lowered):
        # No advice the next check refuses (`MEMORY`: `memory` is reserved): it says both at once.
        refused = _name_rules(lowered)
        return (
            f"names are lowercase; use `{lowered}`"
            if refused is None
            else f"names are lowercase, and {refused[1]}"
        )
    bad = sorted({ch for ch in value if not (ch.isascii() and (ch.isalnum() or ch == "-"))})
    if bad:
        shown = " ".join(f"`{ch}`" for ch in bad)
        return f"the name contains {shown}; use only lowercase letters, digits and hyphens"
    return "the name must start and end with a lowercase letter or digit"


def _description_problem(value: str, spans_lines: bool, file_name: str | None) -> tuple[str, str] | None:
    trimmed = value.strip()
    if spans_lines or "\n" in trimmed:
        return (
            "description-multiline",
            "the description must be one line; shorten it or move detail to the body",
        )
    # The file's text may hold only an escape (`"\e"`, `"\r"`) of what the value holds, which
    # MEMORY.md and every agent's context would show raw: so the value is judged here, all of
    # it but the spaces, tabs and newlines around it (a position counts in the value).
    start = len(value) - len(value.lstrip(" \t\n"))
    end = len(value.rstrip(" \t\n"))
    broken = _LINE_BREAK.search(value, start, end)
    if broken is not None:
        return "description-multiline", (
            f"the description must be one line, but it holds a line break ({_code_point(broken)}) at "
            f"character {broken.start() + 1}; shorten it or move detail to the body"
        )
    control = _VALUE_CONTROL.search(value, start, end)
    if control is not None:
        return "control-character", (
            f"the description holds control character {_code_point(control)} at character "
            f"{control.start() + 1}; delete it (a description is one line of plain text)"
        )
    if not trimmed:
        return "description-empty", "the description is empty; say in one line when this memory applies"
    if len(trimmed) > DESCRIPTION_MAX:
        return "description-too-long", (
            f"the description is {len(trimmed)} characters; at most {DESCRIPTION_MAX}. "
            "Move detail to the body"
        )
    return None


# What ends a line for YAML, Unicode and `str.splitlines` (besides `\n`), and the other control
# characters the file's text may not hold raw (`canonical`), tab aside: in a value they arrive
# escaped, and a description's would land raw in MEMORY.md and in every agent's context.
_LINE_BREAK = re.compile(r"[\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
_VALUE_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")


def _code_point(found: re.Match[str]) -> str:
    return f"U+{ord(found.group()):04X}"


def _type_problem(value: str, spans_lines: bool, file_name: str | None) -> tuple[str, str] | None:
    if value in _TYPES:
        return None
    if value.strip().lower() in _TYPES:
        return "type-invalid", f"types are lowercase: use `{value.strip().lower()}`"
    return "type-invalid", f"`{value}` is not a record type; use one of {_VALID_TYPES}"


def _body_problems(
    text: str, front: _FrontMatter, positions: TextPositions, problems: list[Diagnostic]
) -> int:
    """Adds the body's problems; returns where the body goes over its budget (else the text's end).
    The body, `text[front.body_start:]`, is judged in place: a long one is never copied."""
    end = len(text)
    if _NOT_BLANK.search(text, front.body_start) is None:
        problems.append(
            diagnostic(
                "body-empty",
                Severity.ERROR,
                "the record has no body; below the front matter, say why this memory matters "
                "and when it applies",
                positions.range(front.end, front.body_start),
            )
        )
    body_bytes = len(positions.utf8) - len(text[: front.body_start].encode("utf-8", "surrogatepass"))
    # Canonical form adds at most one byte (a final newline), so this bound is exact enough.
    found = (
        None
        if body_bytes < BODY_MAX_BYTES
        else _over_budget(text, BODY_MAX_BYTES, body_bytes, front.body_start)
    )
    if found is not None:
        end, size = found
        problems.append(
            diagnostic(
                "body-too-large",
                Severity.ERROR,
                f"the body is {size} bytes; the limit is {BODY_MAX_BYTES}. Split it into "
                "several records or shorten it (from here on is over)",
                positions.range(end, len(text)),
            )
        )
    if _SECOND_BLOCK.match(text, front.body_start):
        at = text.index("---", front.body_start)
        problems.append(
            diagnostic(
                "front-matter-duplicate",
                Severity.ERROR,
                "a second front-matter block follows the first; merge its keys into the first "
                "block and delete it",
                positions.range(at, at + 3),
            )
        )
    return end


_CHECKERS = {"name": _name_problem, "description": _description_problem, "type": _type_problem}


def _over_budget(text: str, limit: int, utf8_size: int, start: int = 0) -> tuple[int, int] | None:
    """Where `text[start:]` goes past `limit` canonical UTF-8 bytes — the offset in `text` of its
    first character past them — and its canonical size; None if within. `utf8_size`, the part's
    UTF-8 size, which the caller has, spares encoding it again; the part is never copied."""
    length = len(text) - start
    if length <= limit // 4:  # canonical form only removes characters, or adds one newline
        return None
    size = _canonical_size(text, start, utf8_size)
    if size <= limit:
        return None

    if text.isascii():  # O(1) in CPython: one byte a character and no U+FEFF, so no search
        return start + min(length, limit), size
    if text.find(BOM, start) == -1:
        return _cut_at(text, start, limit), size

    # The bytes of text[start:start + n], U+FEFF not counted, grow with n: the answer is the
    # last n whose prefix is within the limit, found by bisection (each character is at least
    # one byte, so it lies within the first `limit` characters plus the U+FEFFs).
    def used(n: int) -> int:
        prefix = len(text[start : start + n].encode("utf-8", "surrogatepass"))
        return prefix - 3 * text.count(BOM, start, start + n)

    low, high = 0, min(length, limit + 1 + text.count(BOM, start))
    if used(high) <= limit:
        return len(text), size
    while high - low > 1:  # used(low) <= limit < used(high)
        middle = (low + high) // 2
        low, high = (middle, high) if used(middle) <= limit else (low, middle)
    return start + low, size


def _cut_at(text: str, start: int, limit: int) -> int:
    """The offset in `text` of the first character of `text[start:]` past `limit` UTF-8 bytes,
    the part holding no U+FEFF and more than `limit` bytes: one encoding of at most `limit + 1`
    characters, cut at the start of the character that holds byte `limit`."""
    data = text[start : start + limit + 1].encode("utf-8", "surrogatepass")
    if len(data) <= limit:  # fewer characters than that: only the canonical final newline is over
        return len(text)
    cut = limit
    while data[cut] & 0xC0 == 0x80:  # a continuation byte: the character began before it
        cut -= 1
    return start + len(data[:cut].decode("utf-8", "surrogatepass"))


def _canonical_size(text: str, start: int, utf8_size: int) -> int:
    """`len(canonicalize(text[start:]).encode())`, counted from `utf8_size` when only ends would
    change."""
    if text.find("\r", start) != -1:
        return len(canonicalize(text[start:]).encode("utf-8", "surrogatepass"))
    boms = len(text) - start - len(text[start:].lstrip(BOM)) if text.startswith(BOM, start) else 0
    end = len(text)
    while end > start and text[end - 1] == "\n":  # counted, not stripped: no copy of a long text
        end -= 1
    breaks = len(text) - end
    if boms + breaks == len(text) - start:
        return 0  # blank: canonical form is the empty text
    return utf8_size - 3 * boms - breaks + 1


def _first_different_line(actual: str, expected: str) -> int:
    pairs = zip(actual.split("\n"), expected.split("\n"), strict=False)  # lengths may differ
    for number, (a, b) in enumerate(pairs):
        if a != b:
            return number
    return min(actual.count("\n"), expected.count("\n"))
