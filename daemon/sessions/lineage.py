"""Build the lineage tree of a workspace's sessions (`remem sessions tree`).

Pure and iterative: parent links come from session headers, which nothing stops from being
missing, self-referential or cyclic, and chains and fans may be 10 000 sessions long or wide.
So no step recurses: a missing parent makes a flagged orphan root, a cycle is broken at its
earliest member and flagged, and every input session appears in the tree exactly once.

Serialising deep trees: pydantic's serialiser, the stdlib `json` encoder and JSON parsers all
recurse (a 10 000-deep chain fails with "Maximum serialization depth exceeded" /
`RecursionError`), so the tree leaves remem flat: `SessionTree.flat()` is a pre-order list of
nodes with their parent id and depth, built with an explicit stack.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..protocol.sessions import FlatNode, NodeFlag, NodeKind, SessionFormat, SessionNode


@dataclass(frozen=True)
class LineageItem:
    """One session as the tree needs it; `origin` is "subagent", "branch" (an in-file branch)
    or None."""

    id: str
    title: str | None
    parent: str | None
    origin: str | None
    created_at: int  # epoch ms
    fork_turn: int | None
    live: bool
    archived: bool
    format: SessionFormat = "dsh"
    inferred: bool = False
    problems: int = 0  # lines of its file a reader skipped or flagged
    inline: bool = False  # a subagent inside its parent's file, not a file of its own
    log_title: str | None = None  # the title its log gives, which `title` shows unless renamed

    @property
    def kind(self) -> NodeKind:
        if self.origin == "subagent":
            return "subagent"
        if self.origin == "branch":
            return "branch"
        return "fork" if self.parent is not None else "root"

    @property
    def order(self) -> tuple[int, str]:
        return (self.created_at, self.id)


class TreeNode(SessionNode):
    """One session in the tree; `children` sorted by `createdAt`, then id."""

    children: list[TreeNode]


class SessionTree(BaseModel):
    """The forest of a workspace; serialise it with `flat()`, which works at any depth."""

    model_config = ConfigDict(frozen=True)

    roots: list[TreeNode]

    def walk(self) -> Iterator[tuple[TreeNode | None, int]]:
        """Pre-order `(node, depth)` pairs; `(None, depth)` closes the node opened at that depth."""
        stack: list[tuple[TreeNode | None, int]] = [(n, 0) for n in reversed(self.roots)]
        while stack:
            node, depth = stack.pop()
            yield node, depth
            if node is not None:
                stack.append((None, depth))
                stack.extend((child, depth + 1) for child in reversed(node.children))

    def flat(self) -> list[FlatNode]:
        """The tree as a pre-order list with parent ids: the wire form for clients, since JSON
        parsers recurse too and a 10 000-deep nesting cannot be read back."""
        nodes: list[FlatNode] = []
        parents: list[str] = []
        for node, depth in self.walk():
            if node is None:
                parents.pop()
                continue
            nodes.append(FlatNode(**_scalars(node), parent=parents[-1] if parents else None, depth=depth))
            parents.append(node.id)
        return nodes


def _scalars(node: TreeNode) -> dict[str, Any]:
    return node.model_dump(exclude={"children"})


# DSH's default title of a branch: its parent's plus " (N)" (or full-width "（N）").
DEFAULT_TITLE_COUNTER = re.compile(r"^(.*?)\s*([(（])(\d+)([)）])$")
SHORTENED = "…"  # ends a default title's stem cut short to leave room for its counter
# The most characters of a log's own title a listing carries: a turn's label's, and a title
# taken from a first prompt's (`PROMPT_CHARS`). A title remem writes (a rename, a fork's) is
# DSH's 80 bytes at most; one a log holds may be any length (a `custom-title` line).
TITLE_CHARS = 200


def listed_title(title: str | None) -> str | None:
    """`title` as a listing carries it: a longer one is cut to `TITLE_CHARS`, ending in `…`."""
    return None if title is None else shortened(title, TITLE_CHARS)


def shortened(text: str, chars: int) -> str:
    """`text` in at most `chars` characters; one cut ends in `…`, so it never reads as whole."""
    return text if len(text) <= chars else text[: chars - len(SHORTENED)] + SHORTENED


def _stem(title: str) -> str:
    match = DEFAULT_TITLE_COUNTER.match(title)
    return match.group(1) if match else title


def _default_title(item: LineageItem, parent: LineageItem | None) -> bool:
    """Whether a fork still has the title forking gave it: not renamed, and its parent's title
    as the parent's log or a rename gave it, perhaps with a counter. After the parent is renamed
    its current title no longer matches, so its log's is compared too.

    Forking writes a DSH or Claude Code child's title into its log, where a rename (remem's
    metadata) does not reach: a display title other than the log's was renamed. A Codex rollout
    has no title record, so forking sets the child's title in remem's metadata as a rename does
    (decision 0291), and only the title itself tells whether it is still the parent's."""
    given = item.title if item.format == "codex" else item.log_title
    if item.kind != "fork" or parent is None or given is None or item.title != listed_title(given):
        return False
    stem = _stem(given)
    return any(t is not None and _same_stem(stem, _stem(t)) for t in (parent.title, parent.log_title))


def _same_stem(child: str, parent: str) -> bool:
    """A child's stem is its parent's, or the start of it shortened for the counter (`…`); a
    parent's own stem may end in `…` too (a title cut from a long first prompt)."""
    if child.endswith(SHORTENED):
        return parent.removesuffix(SHORTENED).startswith(child.removesuffix(SHORTENED))
    return child == parent


def _unique(items: Iterable[LineageItem]) -> tuple[dict[str, LineageItem], set[str]]:
    """Items by id; a repeated id keeps its first item and is flagged rather than silently merged."""
    by_id: dict[str, LineageItem] = {}
    repeated: set[str] = set()
    for item in items:
        if item.id in by_id:
            repeated.add(item.id)
        else:
            by_id[item.id] = item
    return by_id, repeated


def _cycles(parent_of: dict[str, str | None]) -> list[list[str]]:
    """Every cycle of the parent graph (each node has at most one parent), found in O(n)."""
    state: dict[str, int] = {}  # 1 = on the current walk, 2 = settled
    cycles = []
    for start in parent_of:
        path: list[str] = []
        node: str | None = start
        while node is not None and node not in state:
            state[node] = 1
            path.append(node)
            node = parent_of[node]
        if node is not None and state[node] == 1:
            cycles.append(path[path.index(node) :])
        for visited in path:
            state[visited] = 2
    return cycles


def _children(by_id: dict[str, LineageItem], parent_of: dict[str, str | None]) -> dict[str | None, list[str]]:
    """Child ids per parent id (None = the roots), each list in tree order."""
    children: dict[str | None, list[str]] = {}
    for node_id, parent in parent_of.items():
        children.setdefault(parent, []).append(node_id)
    for ids in children.values():
        ids.sort(key=lambda i: by_id[i].order)
    return children


def _resolve_parents(
    by_id: dict[str, LineageItem], repeated: set[str]
) -> tuple[dict[str, str | None], dict[str, list[NodeFlag]]]:
    """Tree parent per id (None = root) after cutting unknown parents and cycles, and the flags."""
    flags: dict[str, list[NodeFlag]] = {i: ["duplicate"] if i in repeated else [] for i in by_id}
    parent_of: dict[str, str | None] = {}
    for item in by_id.values():
        known = item.parent is not None and item.parent in by_id
        parent_of[item.id] = item.parent if known else None
        if item.parent is not None and not known:
            flags[item.id].append("orphan")
        elif known and item.inferred:
            flags[item.id].append("inferred")
        if item.inline:
            flags[item.id].append("inline")
    for cycle in _cycles(parent_of):
        parent_of[min(cycle, key=lambda i: by_id[i].order)] = None
        for member in cycle:
            flags[member].append("cycle")
    return parent_of, flags


def _assemble(
    by_id: dict[str, LineageItem], parent_of: dict[str, str | None], flags: dict[str, list[NodeFlag]]
) -> SessionTree:
    children = _children(by_id, parent_of)
    # Every node is reachable from a root once cycles are cut. Building in reverse pre-order
    # creates each node's children before the node itself, without recursion.
    order: list[str] = []
    stack = list(children.get(None, []))
    while stack:
        node_id = stack.pop()
        order.append(node_id)
        stack.extend(children.get(node_id, []))
    nodes: dict[str, TreeNode] = {}
    for node_id in reversed(order):
        item = by_id[node_id]
        nodes[node_id] = TreeNode(
            id=item.id,
            title=item.title,
            kind=item.kind,
            forkTurn=item.fork_turn,
            createdAt=item.created_at,
            live=item.live,
            archived=item.archived,
            flags=sorted(flags[node_id]),
            format=item.format,
            problems=item.problems,
            defaultTitle=_default_title(item, by_id.get(parent_of[node_id] or "")),
            children=[nodes[c] for c in children.get(node_id, [])],
        )
    return SessionTree(roots=[nodes[r] for r in children.get(None, [])])


def build_tree(items: Iterable[LineageItem]) -> SessionTree:
    """The lineage forest of `items`: every distinct id exactly once, orphans and cycles flagged."""
    by_id, repeated = _unique(items)
    parent_of, flags = _resolve_parents(by_id, repeated)
    return _assemble(by_id, parent_of, flags)
