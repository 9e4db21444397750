"""Quick fixes for memory files, and "Consolidate the latest session of this workspace".

Each quick fix is an edit computed from the document's current text and attached to the
diagnostics it fixes; it is marked preferred when it is the one obvious fix. Rules without a
safe fix (a name used twice, a body over budget, broken YAML, an empty body) get none: a fix
there would have to invent or drop content. `MEMORY.md` out of sync is offered two ways: as an
edit of the open document to what the records render to (the texts the diagnostic compared,
unsaved ones included), and through the daemon (`remem.lsp.regenerateIndex`, from the files).
"""

from __future__ import annotations

import datetime
import difflib
import json
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml
from lsprotocol import types
from pygls.capabilities import get_capability
from pygls.workspace import TextDocument

from remem.daemon import safe_yaml
from remem.daemon.memory.canonical import canonicalize
from remem.daemon.memory.diagnostics import Severity, TextPositions
from remem.daemon.memory.index import render_index
from remem.daemon.memory.record import DESCRIPTION_MAX, FIELDS, RecordType
from remem.daemon.memory.validation import (
    file_name_advice,
    key_line,
    unclosed_front_matter_end,
    validate_record,
    validate_workspace,
)
from remem.daemon.protocol.memory import RECORD_SUFFIX

from .. import ids
from ..documents import (
    Kind,
    MemoryFile,
    file_name_as_record,
    line_break,
    lines_of,
    lsp_range,
    memory_file,
    offset_at,
    open_documents,
    opened,
    record_texts,
    valid_name,
    whole_lines,
    workspace_cwd,
)
from ..front_matter import FrontMatter, locate, value
from ..rule_docs import PREFIX
from ..server import RememServer

_KINDS = [types.CodeActionKind.QuickFix, types.CodeActionKind.Source]
_MISSING_KEY = re.compile(r"no `(\w+)`")
_NOT_SLUG = re.compile(r"[^a-z0-9]+")
_TYPES = [t.value for t in RecordType]


def register(server: RememServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(code_action_kinds=_KINDS))
    def code_action(ls: RememServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        file = memory_file(ls, params.text_document.uri)
        document = opened(ls, params.text_document.uri)
        if file is None or document is None:
            return None
        context = _Context.of(ls, file, document)
        actions = _quick_fixes(context, params.context.diagnostics) + _source_actions(context)
        return [a for a in actions if _wanted(a, params.context.only)]


@dataclass(frozen=True)
class _Context:
    ls: RememServer
    file: MemoryFile
    uri: str
    version: int | None
    text: str
    lines: list[str]
    front: FrontMatter | None

    @classmethod
    def of(cls, ls: RememServer, file: MemoryFile, document: TextDocument) -> _Context:
        lines = lines_of(document.source)
        front = locate(lines) if file.kind is Kind.RECORD else None
        return cls(ls, file, document.uri, document.version, document.source, lines, front)

    def edit(self, edits: list[types.TextEdit]) -> types.WorkspaceEdit:
        """An edit of this document; versioned when the client can check the version."""
        if get_capability(self.ls.client_capabilities, "workspace.workspace_edit.document_changes", False):
            document = types.OptionalVersionedTextDocumentIdentifier(uri=self.uri, version=self.version)
            return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(document, list(edits))])
        return types.WorkspaceEdit(changes={self.uri: list(edits)})

    def set_key(self, key: str, new: str) -> list[types.TextEdit]:
        """Edits that give `key` the value `new`, replacing its lines or adding one in order;
        none where no line of its own can be added (the fix is then not offered)."""
        assert self.front is not None
        entry = self.front.entry(key)
        if entry is None and not self.front.by_lines:
            return []
        # A one-line entry's comment after its value (the user's note) stays.
        note = (
            _trailing_comment(self.lines[entry.first])
            if entry is not None and entry.first == entry.last
            else ""
        )
        line = key_line(key, new) + note + line_break(self.text)
        if entry is not None:
            return [types.TextEdit(whole_lines(entry.first, entry.last), line)]
        at = types.Position(_insertion_line(self.front, key), 0)
        return [types.TextEdit(types.Range(at, at), line)]

    def current(self, key: str) -> str | None:
        entry = self.front.entry(key) if self.front is not None else None
        found = value(self.lines, entry) if entry is not None else None
        return found if isinstance(found, str) else None

    def range_text(self, where: types.Range) -> str:
        return self.text[offset_at(self.text, where.start) : offset_at(self.text, where.end)]


Fixer = Callable[[_Context, types.Diagnostic], list[types.CodeAction]]


def _quick_fixes(context: _Context, diagnostics: Sequence[types.Diagnostic]) -> list[types.CodeAction]:
    actions: list[types.CodeAction] = []
    for diagnostic in diagnostics:
        code = rule_id(diagnostic)
        fixer = _FIXERS.get(code) if diagnostic.source == "remem" else None
        if fixer is not None and (context.front is not None or code in _WITHOUT_FRONT_MATTER):
            actions.extend(action for action in fixer(context, diagnostic) if _changes(action))
    return _merged(actions)


def _edits_of(action: types.CodeAction) -> list[types.TextEdit]:
    """The text edits of a fix of the one document (none for a command's or a rename)."""
    edit = action.edit
    if edit is None:
        return []
    operations = edit.document_changes or ()
    edits = [e for o in operations if isinstance(o, types.TextDocumentEdit) for e in o.edits]
    edits += [e for changes in (edit.changes or {}).values() for e in changes]
    return [e for e in edits if isinstance(e, types.TextEdit)]


def _changes(action: types.CodeAction) -> bool:
    """Whether the fix edits anything (one that cannot be written as an edit has none)."""
    edit = action.edit
    if edit is None:
        return True  # a command's
    operations = edit.document_changes or ()  # a file's rename is one
    edited = any(not isinstance(o, types.TextDocumentEdit) or o.edits for o in operations)
    return edited or any((edit.changes or {}).values())


def rule_id(diagnostic: types.Diagnostic) -> str:
    """`remem/<code>`: diagnostics are published without the prefix (the source says remem)."""
    code = str(diagnostic.code)
    return code if code.startswith(PREFIX) else PREFIX + code


def _merged(actions: list[types.CodeAction]) -> list[types.CodeAction]:
    """One action per title: a fix that clears several diagnostics at once lists them all."""
    by_title: dict[str, types.CodeAction] = {}
    for action in actions:
        known = by_title.get(action.title)
        if known is None:
            by_title[action.title] = action
        else:
            known.diagnostics = [*(known.diagnostics or []), *(action.diagnostics or [])]
    return list(by_title.values())


def _fix(
    title: str, diagnostic: types.Diagnostic, edit: types.WorkspaceEdit, *, preferred: bool = False
) -> types.CodeAction:
    return types.CodeAction(
        title=title,
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[diagnostic],
        edit=edit,
        is_preferred=preferred or None,
    )


# -- canonical text ---------------------------------------------------------------------------


def _canonical(context: _Context, diagnostic: types.Diagnostic) -> list[types.CodeAction]:
    fixed = canonicalize(context.text)
    if fixed == context.text:
        return []
    whole = lsp_range(TextPositions(context.text), 0, len(context.text))
    title = "Make the text canonical (no byte-order mark, LF line endings, one final newline)"
    return [_fix(title, diagnostic, context.edit([types.TextEdit(whole, fixed)]), preferred=True)]


def _controls(context: _Context, diagnostic: types.Diagnostic) -> list[types.CodeAction]:
    positions = TextPositions(context.text)
    edits = [
        types.TextEdit(lsp_range(positions, at, at + 1), "")
        for at, ch in enumerate(context.text)
        if unicodedata.category(ch) == "Cc" and ch not in "\t\n\r"
    ]
    if not edits:
        return []
    return [_fix("Delete every control character", diagnostic, context.edit(edits), preferred=True)]


def _close(context: _Context, diagnostic: types.Diagnostic) -> list[types.CodeAction]:
    """The closing `---` line where the validation says it goes; offered only when the record
    then has no error it did not have: that place is a guess (the body may begin `Note: …`)."""
    end = unclosed_front_matter_end(context.text)
    if end is None:
        return []
    newline = line_break(context.text)
    ends_a_line = context.text[end - 1] in "\r\n"
    line = f"---{newline}" if ends_a_line else f"{newline}---{newline}"
    at = lsp_range(TextPositions(context.text), end, end)
    edits = [types.TextEdit(at, line)]
    # A record with nothing after its keys has no body, closed or not: closing lets that be said.
    if not _adds_no_error(context, edits, had=frozenset({"remem/body-empty"})):
        return []
    after = at.start.line - 1 if ends_a_line else at.start.line
    title = f"Close the front matter with a `---` line after line {after + 1}"
    return [_fix(title, diagnostic, context.edit(edits), preferred=True)]


# -- front-matter keys ------------------------------------------------------------------------


def _missing_key(context: _Context, diagnostic: types.Diagnostic) -> list[types.CodeAction]:
    named = _MISSING_KEY.search(diagnostic.message)  # the three keys share the code; the message names one
    key = named.group(1) if named else ""
    if key not in FIELDS or context.front is None or context.front.entry(key) is not None:
        return []
    if any(_meant(e.key) == key for e in context.front.entries):  # `Name:`: renaming it keeps its value
        return []
    candidates = _candidates(context, key)
    return [
        _fix(
            f"Add `{key_line(key, v)}`",
            diagnostic,
            context.edit(context.set_key(key, v)),
            preferred=key == "name",  # the file name is the one right name; other values are guesses
        )
        for v in candidates
    ]


def _candidates(context: _Context, key: str) -> list[str]:
    if key == "name":
        stem = file_name_as_record(context.file.path)
        return [stem] if stem is not None else []
    if key == "type":
        return _TYPES
    summary = _body_summary(context)
    return [summary] if summary else []


def _insertion_line(front: FrontMatter, key: str) -> int:
    """Where a missing key goes: before the first known key that follows it, so order stays canonical."""
    later = FIELDS[FIELDS.index(key) + 1 :]
    return next((e.first for e in front.entries if e.key in later), front.closing)


_SPELLING = 0.8  # how close a misspelled key must be: `descripton` is, `title` is not `type`


def _key_casing(context: _Context, diagnostic: types.Diagnostic) -> list[types.CodeAction]:
    """An unknown key that is a known one mis-cased or misspelled (`Type`, `descripton`)."""
    written = context.range_text(diagnostic.range)
    key = _meant(written)
    if not key or key == written or context.front is None or context.front.entry(key) is not None:
        return []
    edit = context.edit([types.TextEdit(diagnostic.range, key)])
    return [_fix(f"Rename the key to `{key}`", diagnostic, edit, preferred=key == written.lower())]


def _meant(written: str) -> str:
    """The known key an unknown one stands for, mis-cased or misspelled; "" when none."""
    close = difflib.get_close_matches(written.lower(), FIELDS, n=1, cutoff=_SPELLING)
    return close[0] if close else ""


def _non_string(context: _Context, diagnostic: types.Diagnostic) -> list[types.CodeAction]:
    """What a value YAML reads as no string gets: the fix its key gets when it is missing or
    invalid, or else the value quoted; each only when it makes no error the record lacks (a
    name quoted may well differ from the file's)."""
    assert context.front is not None
    entry = context.front.entry_at(diagnostic.range.start.line)
    key = entry.key if entry is not None else ""
    written = context.range_text(diagnostic.range)
    if key == "type":  # `type: yes` or `type: [a]` quoted is still no type
        actions = _type_choices(context, diagnostic)
    elif key == "name":
        actions = _file_name(context, diagnostic, preferred=True)
    elif key == "description" and _loaded(written) is None:  # `null`, `~`: as `description:` alone
        actions = _describe(context, diagnostic)
    else:
        actions = _quote(context, diagnostic, written)
    return [a for a in actions if _adds_no_error(context, _edits_of(a))]


_UNREADABLE = object()


def _loaded(written: str) -> object:
    """What YAML reads `written` as; `_UNREADABLE` when it is no YAML of its own."""
    try:
        return safe_yaml.load(written)
    except yaml.YAMLError:
        return _UNREADABLE


def _quote(context: _Context, diagnostic: types.Diagnostic, written: str) -> list[types.CodeAction]:
    if not written or diagnostic.range.start.line != diagnostic.range.end.line:
        return []
    if not isinstance(_loaded(written), (int, float, datetime.date)):  # bool is an int; lists and null stay
        return []
    quoted = json.dumps(written, ensure_ascii=False)
    edit = context.edit([types.TextEdit(diagnostic.range, quoted)])
    return [_fix(f"Quote the value: {quoted}", diagnostic, edit, preferred=True)]


def _keep_comment(context: _Context, diagnostic: types.Diagnostic) -> list[types.CodeAction]:
    """The description quoted whole, the text YAML took as a comment (the diagnostic's range)
    kept in it; when that is over the description's limit, which quoting alone would turn into
    an error, quoted shortened with its full text moved to the body (decision 0504, amended)."""
    line = diagnostic.range.start.line
    key = _VALUE_START.match(context.lines[line]) if line < len(context.lines) else None
    if key is None:
        return []
    written = types.Range(types.Position(line, len(key.group(0))), diagnostic.range.end)
    text = context.range_text(written)
    if len(text.strip()) <= DESCRIPTION_MAX:
        quoted = json.dumps(text, ensure_ascii=False)
        edit = context.edit([types.TextEdit(written, quoted)])
        title = f"Quote the description to keep its text after `#`: {quoted}"
        return [_fix(title, diagnostic, edit, preferred=True)]
    whole = text.strip()
    edits = [
        types.TextEdit(written, json.dumps(_shortened(whole), ensure_ascii=False)),
        _prepend_to_body(context, whole),
    ]
    if not _adds_no_error(context, edits):
        return []
    title = (
        f"Quote the description shortened to {DESCRIPTION_MAX} characters and move its full text, "
        "the part after `#` too, to the body"
    )
    return [_fix(title, diagnostic, context.edit(edits))]


def _adds_no_error(context: _Context, edits: list[types.TextEdit], had: frozenset[str] = frozenset()) -> bool:
    """Whether the document with `edits` applied has no error it did not have already (a body
    near its budget, say, which the moved text would take past it), counting the codes `had`
    as its own though the document cannot show them yet."""
    after = context.text
    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        start, end = offset_at(after, edit.range.start), offset_at(after, edit.range.end)
        after = after[:start] + edit.new_text + after[end:]
    name = context.file.path.name
    known = had | {d.code for d in validate_record(context.text, name) if d.severity is Severity.ERROR}
    return all(d.code in known for d in validate_record(after, name) if d.severity is Severity.ERROR)


_VALUE_START = re.compile(r"description:[ \t]+")  # ASCII: its length is the same in UTF-16


def _tabs(context: _Context, diagnostic: types.Diagnostic) -> list[types.CodeAction]:
    """Each tab of an indentation as two spaces; where only taking a record's own key (`name:`,
    `description:`, `type:`) tabbed in back to the margin makes the front matter parse, that."""
    assert context.front is not None
    lines = context.lines[1 : context.front.closing]
    fixes = [(title, [_untabbed(line, back) for line in lines]) for title, back in _TAB_FIXES]
    title, indents = next((fix for fix in fixes if _parses(lines, fix[1])), fixes[0])
    edits = [
        types.TextEdit(
            types.Range(types.Position(number, 0), types.Position(number, len(_indent(line)))), new
        )
        for number, (new, line) in enumerate(zip(indents, lines, strict=True), start=1)
        if new != _indent(line)
    ]
    return [_fix(title, diagnostic, context.edit(edits), preferred=True)] if edits else []


_TAB_FIXES = (
    ("Indent the front matter with spaces", False),
    ("Take the keys tabbed in back to the margin", True),
)


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _untabbed(line: str, keys_back: bool) -> str:
    """The indentation `line` gets: its own with each tab two spaces, or none for a record's key."""
    indent = _indent(line)
    if "\t" not in indent:
        return indent
    if keys_back and line[len(indent) :].partition(":")[0].strip() in FIELDS:
        return ""
    return indent.replace("\t", "  ")


def _parses(lines: Sequence[str], indents: Sequence[str]) -> bool:
    """Whether the front matter's `lines` parse with these `indents`."""
    text = "\n".join(new + line[len(_indent(line)) :] for new, line in zip(indents, lines, strict=True))
    try:
        safe_yaml.load(text)
    except yaml.YAMLError:
        return False
    return True


# -- name, type, description ------------------------------------------------------------------


def _type(context: _Context, diagnostic: types.Diagnostic) -> list[types.CodeAction]:
    written = context.current("type")
    if written is None:
        return []
    if written.strip().lower() in _TYPES:
        fixed = written.strip().lower()
        edit = context.edit(context.set_key("type", fixed))
        return [_fix(f"Change the type to `{fixed}`", diagnostic, edit, preferred=True)]
    return _type_choices(context, diagnostic)


def _type_choices(context: _Context, diagnostic: types.Diagnostic) -> list[types.CodeAction]:
    return [
        _fix(f"Set the type to `{kind}`", diagnostic, context.edit(context.set_key("type", kind)))
        for kind in _TYPES
    ]


def _name(context: _Context, diagnostic: types.Diagnostic) -> list[types.CodeAction]:
    written = context.current("name")
    if written is None:
        return []
    slug = _slug(written)
    # The file's own name, when it is one, fixes this and cannot mismatch: it is preferred, and
    # no other is offered, which would trade this error for `name-mismatch`. A file named no
    # valid name (`My Note.md`) mismatches any: the slug is offered, then renaming the file to it.
    stem = file_name_as_record(context.file.path)
    if stem is not None:
        title = (
            f"Change the name to `{slug}`" if slug == stem else f"Set the name to `{stem}` (the file name)"
        )
        return [_fix(title, diagnostic, context.edit(context.set_key("name", stem)), preferred=True)]
    if valid_name(slug):
        return [_fix(f"Change the name to `{slug}`", diagnostic, context.edit(context.set_key("name", slug)))]
    return []


def _slug(written: str) -> str:
    """`written` as a name: accents folded to ASCII letters (`Ödd` → `odd`), runs of anything
    else a hyphen."""
    folded = unicodedata.normalize("NFKD", written).encode("ascii", "ignore").decode("ascii")
    return _NOT_SLUG.sub("-", folded.lower()).strip("-")


def _file_name(context: _Context, diagnostic: types.Diagnostic, *, preferred: bool) -> list[types.CodeAction]:
    """The file's own name as the record's, when it is one (`My Note.md` holds none)."""
    stem = file_name_as_record(context.file.path)
    if stem is None:
        return []
    edit = context.edit(context.set_key("name", stem))
    title = file_name_advice(stem)
    return [_fix(title[0].upper() + title[1:], diagnostic, edit, preferred=preferred)]


def _name_mismatch(context: _Context, diagnostic: types.Diagnostic) -> list[types.CodeAction]:
    actions = _file_name(context, diagnostic, preferred=False)
    written = context.current("name")
    # The diagnostic may predate an edit of the name: a file is renamed only to a record's name.
    if written is not None and valid_name(written) and _can_rename(context):
        target = context.file.path.with_name(f"{written}{RECORD_SUFFIX}")
        if not target.exists() and target not in open_documents(context.ls):
            rename = types.RenameFile(
                kind="rename",
                old_uri=context.uri,
                new_uri=target.as_uri(),
                options=types.RenameFileOptions(overwrite=False, ignore_if_exists=False),
            )
            edit = types.WorkspaceEdit(document_changes=[rename])
            actions.append(_fix(f"Rename the file to `{target.name}` (the name)", diagnostic, edit))
    return actions


def _can_rename(context: _Context) -> bool:
    operations = get_capability(
        context.ls.client_capabilities, "workspace.workspace_edit.resource_operations", []
    )
    return types.ResourceOperationKind.Rename in (operations or [])


def _description(context: _Context, diagnostic: types.Diagnostic) -> list[types.CodeAction]:
    written = context.current("description")
    joined = " ".join(written.split()) if written is not None else ""
    if not joined:
        return []
    short = _shortened(joined)
    edits = context.set_key("description", short)
    moved = ""
    if short != joined:
        edits.append(_prepend_to_body(context, joined))
        moved = " and move the full text to the body"
    if rule_id(diagnostic) == "remem/description-multiline":
        title = "Join the description into one line" + moved
    else:
        title = f"Shorten the description to {DESCRIPTION_MAX} characters" + moved
    return [_fix(title, diagnostic, context.edit(edits), preferred=True)]


def _describe(context: _Context, diagnostic: types.Diagnostic) -> list[types.CodeAction]:
    # `description: #tests first`: the diagnostic covers the text YAML took as a comment.
    commented = context.range_text(diagnostic.range).startswith("#")
    actions = _keep_comment(context, diagnostic) if commented else []
    summary = _body_summary(context)
    if summary:
        edit = context.edit(context.set_key("description", summary))
        actions.append(_fix("Use the body's first line as the description", diagnostic, edit))
    return actions


def _prepend_to_body(context: _Context, text: str) -> types.TextEdit:
    """`text` as the body's first paragraph. A blank line parts it from a body only where the body
    does not start with one: after an empty body it would be a blank line at the file's end."""
    assert context.front is not None
    newline = line_break(context.text)
    below = context.front.closing + 1
    if below < len(context.lines):
        at = types.Position(below, 0)
        gap = newline if context.lines[below].strip() else ""
        return types.TextEdit(types.Range(at, at), f"{text}{newline}{gap}")
    at = types.Position(context.front.closing, len(context.lines[context.front.closing]))
    return types.TextEdit(types.Range(at, at), f"{newline}{text}{newline}")


def _body_summary(context: _Context) -> str:
    """The body's first non-blank line without its heading marks, short enough to be a description."""
    assert context.front is not None
    for line in context.lines[context.front.closing + 1 :]:
        words = line.strip().lstrip("#").split()
        if words:
            return _shortened(" ".join(words))
    return ""


def _shortened(text: str) -> str:
    """`text` within the description limit, cut at a word boundary and marked with an ellipsis."""
    if len(text) <= DESCRIPTION_MAX:
        return text
    cut = text[: DESCRIPTION_MAX - 1]
    space = cut.rfind(" ")
    if space > DESCRIPTION_MAX // 2:
        cut = cut[:space]
    return cut.rstrip(" ,.;:") + "…"


def _trailing_comment(line: str) -> str:
    """The comment after the value of the one-line entry `line` (`  # …`), or ""."""
    try:
        node = safe_yaml.compose(line)
    except yaml.YAMLError:
        return ""
    if not isinstance(node, yaml.MappingNode) or len(node.value) != 1:
        return ""
    rest = line[node.value[0][1].end_mark.column :].rstrip("\r\n")
    return rest.rstrip() if rest.lstrip().startswith("#") else ""


# -- MEMORY.md ----------------------------------------------------------------------------------


def _index(context: _Context, diagnostic: types.Diagnostic) -> list[types.CodeAction]:
    actions = []
    texts, undecodable = record_texts(context.ls, context.file.path.parent)
    parsed, _ = validate_workspace(texts)
    records = [p.record for p in parsed.values() if p.record is not None]
    if len(records) == len(parsed) and not undecodable:
        rendered = render_index(records)
        if rendered != context.text:
            whole = lsp_range(TextPositions(context.text), 0, len(context.text))
            edit = context.edit([types.TextEdit(whole, rendered)])
            actions.append(_fix("Replace with what the records render to", diagnostic, edit, preferred=True))
    title = "Regenerate MEMORY.md from the saved records (through the remem daemon)"
    command = types.Command(title=title, command=ids.REGENERATE_INDEX, arguments=[{"uri": context.uri}])
    kind = types.CodeActionKind.QuickFix
    actions.append(types.CodeAction(title=title, kind=kind, diagnostics=[diagnostic], command=command))
    return actions


# -- consolidation ------------------------------------------------------------------------------


def _source_actions(context: _Context) -> list[types.CodeAction]:
    if context.file.kind is Kind.GLOBAL:
        return []
    cwd = workspace_cwd(context.ls, context.file.key)
    if not cwd:
        return []
    title = f"Consolidate the latest session of {Path(cwd).name or cwd}"
    command = types.Command(title=title, command=ids.CONSOLIDATE, arguments=[{"cwd": cwd}])
    return [types.CodeAction(title=title, kind=types.CodeActionKind.Source, command=command)]


def _wanted(action: types.CodeAction, only: Sequence[str] | None) -> bool:
    if not only:
        return True
    kind = str(action.kind)
    return any(kind == wanted or kind.startswith(f"{wanted}.") for wanted in only)


_FIXERS: dict[str, Fixer] = {
    "remem/bom": _canonical,
    "remem/line-endings": _canonical,
    "remem/trailing-newline": _canonical,
    "remem/control-character": _controls,
    "remem/missing-key": _missing_key,
    "remem/unknown-key": _key_casing,
    "remem/non-string-value": _non_string,
    "remem/front-matter-comment": _keep_comment,
    "remem/front-matter-tab": _tabs,
    "remem/front-matter-unterminated": _close,
    "remem/type-invalid": _type,
    "remem/name-invalid": _name,
    "remem/name-mismatch": _name_mismatch,
    "remem/description-multiline": _description,
    "remem/description-too-long": _description,
    "remem/description-empty": _describe,
    "remem/index-out-of-sync": _index,
}
# The fixers that need no front matter; the others edit keys, so they need it located (the
# diagnostics may predate an edit that broke it).
_WITHOUT_FRONT_MATTER = frozenset(
    (
        "remem/bom",
        "remem/line-endings",
        "remem/trailing-newline",
        "remem/control-character",
        "remem/front-matter-unterminated",
        "remem/index-out-of-sync",
    )
)
