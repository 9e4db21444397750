"""Setting keys of `settings.yml` in the user's own text: comments, order, quoting and blank
lines stay as the person wrote them (decision 0463).

A value is replaced where it stands (one already equal is left as written), and a missing key
goes below the last key of its section, at that section's indentation, or after its last
value in braces. Shapes an edit cannot follow safely (an empty mapping in braces, a folded,
multi-line or empty value, a key of another type, a file past
`MAX_EDITED_CHARS`, YAML only libyaml reads, such as a tab after a colon) are `Unfollowed`,
saying which and where, and the caller rewrites the file as before (and says so); so does any
edit whose text would not read back as the settings intended.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

# Pure Python on purpose: its marks count characters, as `str` slicing does; libyaml's do not
# say whether they count characters or bytes. A settings file is small and edits are rare.
_LOADER = yaml.SafeLoader
# It parses some 30 times slower than libyaml, once per key: a file past this (thousands of
# session roots) is rewritten rather than edited, as one that took seconds to update.
MAX_EDITED_CHARS = 64 * 1024
_STEP = "  "  # a section made by an edit indents its keys by this
_STR = "tag:yaml.org,2002:str"


class Unfollowed(Exception):
    """A key cannot be set in the user's text; the message says which shape, and where."""


def edited(text: str, changes: Mapping[str, Any]) -> str:
    """`text` with every dotted key of `changes` set; `Unfollowed` if one cannot be set in place."""
    if len(text) > MAX_EDITED_CHARS:
        raise Unfollowed(f"the file is over {MAX_EDITED_CHARS // 1024} KiB, more than an edit reads")
    for dotted, value in changes.items():
        text = _set(text, dotted.split("."), value)
    return text


def _set(text: str, path: list[str], value: Any) -> str:
    try:
        node = yaml.compose(text, Loader=_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = "" if mark is None else f" at line {mark.line + 1}"
        raise Unfollowed(
            f"its YAML{where} is of a kind the edit's parser does not read (a tab after a colon is one)"
        ) from None
    if node is None:  # nothing but comments and blank lines: the key goes at the end
        return _at_end(text) + _lines(text, path, value, "")
    for depth, key in enumerate(path):
        if not isinstance(node, yaml.MappingNode) or not node.value:
            section = f"`{'.'.join(path[:depth])}`" if depth else "the file"
            raise Unfollowed(f"{section} at line {node.start_mark.line + 1} is {_shape(node)}")
        found = next((v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == key), None)
        if found is None:
            return _inserted(text, node, path[depth:], value)
        node = found
    return _replaced(text, node, value, ".".join(path))


def _replaced(text: str, node: yaml.Node, value: Any, dotted: str) -> str:
    if not _one_line_scalar(node):
        raise Unfollowed(f"`{dotted}` at line {node.start_mark.line + 1} is {_shape(node)}")
    if isinstance(value, str) and node.tag == _STR and node.value == value:
        return text  # already so: as written, quotes and all (a choice sends its provider too)
    return text[: node.start_mark.index] + _scalar(value) + text[node.end_mark.index :]


def _inserted(text: str, mapping: yaml.MappingNode, path: list[str], value: Any) -> str:
    """The keys of `path` written as the mapping's last: in braces, after its last value; else
    on the line after its last value."""
    last = mapping.value[-1][1]
    while isinstance(last, (yaml.MappingNode, yaml.SequenceNode)) and last.value and not last.flow_style:
        last = last.value[-1][1] if isinstance(last, yaml.MappingNode) else last.value[-1]
    if not _one_line_scalar(last) and not _flow(last):
        raise Unfollowed(
            f"the value before where `{path[0]}` goes, at line {last.start_mark.line + 1}, is {_shape(last)}"
        )
    if mapping.flow_style:
        return text[: last.end_mark.index] + f", {_flow_entry(path, value)}" + text[last.end_mark.index :]
    end = text.find("\n", last.end_mark.index)
    at = len(text) if end < 0 else end + 1
    indent = " " * mapping.value[0][0].start_mark.column
    return _at_end(text[:at]) + _lines(text, path, value, indent) + text[at:]


def _one_line_scalar(node: yaml.Node) -> bool:
    """A scalar written on one line (plain or quoted), not empty: where it starts and ends is
    exactly its text."""
    return (
        isinstance(node, yaml.ScalarNode)
        and node.style not in ("|", ">")
        and node.start_mark.line == node.end_mark.line
        and node.start_mark.index < node.end_mark.index
    )


def _shape(node: yaml.Node) -> str:
    """What `node` is, of the shapes an edit does not follow where it stands, as a person says it."""
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    if isinstance(node, yaml.MappingNode):
        return "a section of keys" if node.value else "an empty section, `{}`"
    assert isinstance(node, yaml.ScalarNode)
    if node.style in ("|", ">"):
        return "a folded or literal block (`>` or `|`)"
    if node.start_mark.index == node.end_mark.index:
        return "empty"
    return "a value spread over lines" if node.start_mark.line != node.end_mark.line else "a single value"


def _flow(node: yaml.Node) -> bool:
    return isinstance(node, (yaml.MappingNode, yaml.SequenceNode)) and bool(node.flow_style)


def _at_end(text: str) -> str:
    return text if not text or text.endswith("\n") else text + _newline(text)


def _lines(text: str, path: list[str], value: Any, indent: str) -> str:
    """The keys of `path`, one per line, each a section of the next, ending with the value's
    line; lines end as the file's do (a file saved on Windows keeps its CRLF)."""
    new = _newline(text)
    sections = "".join(f"{indent}{_STEP * depth}{key}:{new}" for depth, key in enumerate(path[:-1]))
    return f"{sections}{indent}{_STEP * (len(path) - 1)}{path[-1]}: {_scalar(value)}{new}"


def _flow_entry(path: list[str], value: Any) -> str:
    """The keys of `path` as an entry of a mapping in braces, each a section of the next."""
    entry = _scalar(value)  # written as in brackets: what braces take too
    for key in reversed(path[1:]):
        entry = f"{{{key}: {entry}}}"
    return f"{path[0]}: {entry}"


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _scalar(value: Any) -> str:
    """`value` as YAML on one line: plain where YAML reads it back as the same, quoted where not."""
    return yaml.safe_dump([value], default_flow_style=True, allow_unicode=True, width=float("inf"))[1:-2]
