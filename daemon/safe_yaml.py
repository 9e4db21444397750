"""Reading the YAML remem is given (settings, front matter, receipts, credentials): no aliases.

An alias (`*name`) lets a few hundred bytes stand for gigabytes, the "billion laughs": PyYAML
composes it cheaply, as one node shared by every alias, but whatever walks the value afterwards
(validation, an error's printout of it) expands it. Nothing remem reads needs an alias, so a
document with one is refused at its line before anything walks it. The check visits each
distinct node once, so it costs next to nothing beside the parse.
"""

from __future__ import annotations

from typing import Any

import yaml

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def refused_at(text: str, exc: yaml.reader.ReaderError) -> int:
    """The offset in `text` (in characters) of the character YAML refused: libyaml gives its
    offset in the UTF-8 bytes, PyYAML's own reader in characters."""
    if LOADER is yaml.SafeLoader:
        return exc.position
    return len(text.encode("utf-8", "surrogatepass")[: exc.position].decode("utf-8", "ignore"))


# Bounds the parse before it starts: 100 000 keys took seconds and hundreds of MB. Far above
# any settings, receipt or credentials file remem writes or a person does (decision 0141).
MAX_BYTES = 1024 * 1024


class AliasRefused(yaml.MarkedYAMLError):
    """The document uses an alias; `line` (1-based) is where the first one is."""

    def __init__(self, mark: yaml.Mark | None) -> None:
        super().__init__(problem="YAML aliases are not allowed", problem_mark=mark)
        self.line = mark.line + 1 if mark is not None else 1


class TooLarge(yaml.MarkedYAMLError):
    """The document is past `MAX_BYTES`; it is not parsed."""

    def __init__(self, size: int) -> None:
        problem = f"the document is {size} bytes, over the {MAX_BYTES // 1024} KiB remem parses"
        super().__init__(problem=problem)
        self.line = 1


class Unbuildable(yaml.MarkedYAMLError):
    """A scalar YAML reads as a type it cannot be (`2024-02-30`, a date of no calendar; an
    integer of 5 000 digits, past Python's limit; `!!int abc`): said where it is, as a syntax
    error is, where it was a ValueError no caller expected."""

    def __init__(self, node: yaml.ScalarNode | None, reason: str) -> None:
        if node is None:
            super().__init__(problem=f"a value cannot be read ({reason})")
            return
        kind = node.tag.rsplit(":", 1)[-1]
        shown = node.value if len(node.value) <= _SHOWN_CHARS else f"{node.value[: _SHOWN_CHARS - 1]}…"
        why = f" ({reason})" if len(reason) <= _SHOWN_REASON_CHARS else ""
        problem = f"`{shown}` is no valid {kind}{why}; quote it to keep it as text"
        super().__init__(problem=problem, problem_mark=node.start_mark)


_SHOWN_CHARS = 40
_SHOWN_REASON_CHARS = 60


def compose(text: str) -> yaml.Node | None:
    """The document's node tree (None for an empty one); raises `AliasRefused`, `TooLarge` or
    YAMLError."""
    _bounded(text)
    node = yaml.compose(text, Loader=LOADER)
    if node is not None and _reuses_a_node(node):
        raise AliasRefused(_first_alias(text))
    return node


def load(text: str | bytes) -> Any:
    """The document's value, like `yaml.safe_load`, but refusing aliases."""
    return parse(text)[1]


def parse(text: str | bytes) -> tuple[yaml.Node | None, Any]:
    """The node tree (for line numbers) and the value of one document, in a single parse."""
    _bounded(text)
    loader = LOADER(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, None
        if _reuses_a_node(node):
            raise AliasRefused(_first_alias(text))
        try:
            return node, loader.construct_document(node)
        except (ValueError, ArithmeticError, TypeError) as exc:
            raise Unbuildable(_unbuildable(node), str(exc)) from None
    finally:
        loader.dispose()


def _unbuildable(root: yaml.Node) -> yaml.ScalarNode | None:
    """The first scalar of `root` that cannot be built (only on the way to an error)."""
    stack, loader = [root], LOADER("")
    try:
        while stack:
            node = stack.pop()
            if isinstance(node, yaml.ScalarNode):
                try:
                    loader.construct_object(node)
                except (ValueError, ArithmeticError, TypeError, yaml.YAMLError):
                    return node
            elif isinstance(node, yaml.MappingNode):
                stack.extend(reversed([part for pair in node.value for part in pair]))
            elif isinstance(node, yaml.SequenceNode):
                stack.extend(reversed(node.value))
        return None
    finally:
        loader.dispose()


def _bounded(text: str | bytes) -> None:
    if len(text) <= MAX_BYTES // 4:  # a str of that many characters is within the cap in any encoding
        return
    size = len(text) if isinstance(text, bytes) else len(text.encode("utf-8"))
    if size > MAX_BYTES:
        raise TooLarge(size)


def _reuses_a_node(root: yaml.Node) -> bool:
    # The composer hands every alias the very node its anchor named: a node met twice is one.
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            return True
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            stack.extend(part for pair in node.value for part in pair)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    return False


def _first_alias(text: str | bytes) -> yaml.Mark | None:
    # Only on the way to an error: the composed tree no longer says where the alias was.
    for event in yaml.parse(text, Loader=LOADER):
        if isinstance(event, yaml.AliasEvent):
            # The C parser's marks (yaml._yaml.Mark) carry yaml.Mark's fields; the stubs do not say so.
            return event.start_mark  # type: ignore[return-value]
    return None
