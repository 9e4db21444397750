"""Lineage tree: kinds, ordering, orphans, cycles, and 10 000-deep/wide trees without recursion."""

from __future__ import annotations

import json
import random
from typing import Any

from remem.daemon.forks.child import next_title
from remem.daemon.sessions.lineage import LineageItem, SessionTree, TreeNode, build_tree

N = 10_000


def item(
    session_id: str, parent: str | None = None, created_at: int = 0, origin: str | None = None, **extra: Any
) -> LineageItem:
    fields = {"title": None, "fork_turn": None, "live": False, "archived": False, **extra}
    return LineageItem(id=session_id, parent=parent, origin=origin, created_at=created_at, **fields)


def nodes_by_id(tree: SessionTree) -> dict[str, TreeNode]:
    return {node.id: node for node, _ in tree.walk() if node is not None}


def ids(nodes: list[TreeNode]) -> list[str]:
    return [n.id for n in nodes]


def test_node_serialises_to_the_cli_json_shape() -> None:
    tree = build_tree(
        [
            item("main", created_at=10, title="Fix the parser", live=True),
            item("fork", "main", 20, fork_turn=3, archived=True),
        ]
    )
    assert tree.model_dump() == {
        "roots": [
            {
                "id": "main",
                "title": "Fix the parser",
                "kind": "root",
                "forkTurn": None,
                "createdAt": 10,
                "live": True,
                "archived": False,
                "flags": [],
                "review": {"state": "never", "status": None},
                "format": "dsh",
                "problems": 0,
                "defaultTitle": False,
                "children": [
                    {
                        "id": "fork",
                        "title": None,
                        "kind": "fork",
                        "forkTurn": 3,
                        "createdAt": 20,
                        "live": False,
                        "archived": True,
                        "flags": [],
                        "review": {"state": "never", "status": None},
                        "format": "dsh",
                        "problems": 0,
                        "defaultTitle": False,
                        "children": [],
                    }
                ],
            }
        ]
    }
    assert list(tree.model_dump()["roots"][0]) == [
        "id",
        "title",
        "kind",
        "forkTurn",
        "createdAt",
        "live",
        "archived",
        "flags",
        "review",
        "format",
        "problems",
        "defaultTitle",
        "children",
    ]


def test_flat_form_matches_the_nested_tree_on_shallow_trees() -> None:
    rng = random.Random(5)
    items = [item("r0", created_at=0)]
    for i in range(1, 200):
        origin = "subagent" if rng.random() < 0.3 else None
        items.append(item(f"s{i}", rng.choice(items).id, rng.randint(0, 50), origin, title=f"t {i} ✓"))
    tree = build_tree(items)
    flat = tree.flat()
    nested = tree.model_dump()

    def preorder(nodes: list[dict], parent: str | None, depth: int) -> list[dict]:  # type: ignore[type-arg]
        out = []
        for node in nodes:
            scalars = {k: v for k, v in node.items() if k != "children"}
            out.append({**scalars, "parent": parent, "depth": depth})
            out += preorder(node["children"], node["id"], depth + 1)
        return out

    assert [n.model_dump() for n in flat] == preorder(nested["roots"], None, 0)


def test_kind_comes_from_origin_and_parent() -> None:
    tree = build_tree(
        [
            item("main"),
            item("user-fork", "main", 1),
            item("child", "main", 2, origin="subagent"),
            item("grandchild", "child", 3, origin="subagent"),
            item("lone-subagent", None, 4, origin="subagent"),
        ]
    )
    kinds = {node_id: node.kind for node_id, node in nodes_by_id(tree).items()}
    assert kinds == {
        "main": "root",
        "user-fork": "fork",
        "child": "subagent",
        "grandchild": "subagent",
        "lone-subagent": "subagent",
    }
    assert ids(tree.roots) == ["main", "lone-subagent"]


def test_a_fork_titled_as_forking_titles_it_is_told_from_one_a_person_named() -> None:
    """Forking titles a branch after its parent (DSH adds " (N)"); a renamed parent shows its
    new title, but its log keeps the one its branches were named after."""

    def titled(title: str | None, log: str | None = None) -> dict[str, Any]:
        return {"title": title, "log_title": title if log is None else log}

    tree = build_tree(
        [
            item("main", **titled("Move the uploader to the queue", "Fix the uploader")),
            item("dsh-default", "main", 1, **titled("Fix the uploader (1)")),
            item("full-width", "main", 2, **titled("Fix the uploader（2）")),
            item("copy", "main", 3, **titled("Fix the uploader")),
            item("after-the-rename", "main", 4, **titled("Move the uploader to the queue (1)")),
            item("named-at-the-fork", "main", 5, **titled("Try a queue")),
            item("renamed-branch", "main", 6, **titled("Retry it (1)", "Fix the uploader (3)")),
            item("untitled", "main", 7, **titled(None)),
            item("subagent", "main", 8, origin="subagent", **titled("Fix the uploader")),
            item("orphan", "gone", 9, **titled("Fix the uploader (4)")),
        ]
    )
    defaults = {node_id for node_id, node in nodes_by_id(tree).items() if node.defaultTitle}
    assert defaults == {"dsh-default", "full-width", "copy", "after-the-rename"}


def test_children_and_roots_sort_by_created_at_then_id() -> None:
    tree = build_tree(
        [
            item("b", "p", 5),
            item("z-root", None, 1),
            item("a", "p", 5),
            item("p", None, 2),
            item("early", "p", 3),
            item("a-root", None, 2),
        ]
    )
    assert ids(tree.roots) == ["z-root", "a-root", "p"]
    assert ids(nodes_by_id(tree)["p"].children) == ["early", "a", "b"]


def test_missing_parent_makes_a_flagged_orphan_root_with_its_subtree() -> None:
    tree = build_tree([item("main"), item("lost", "deleted-session", 5), item("kid", "lost", 6)])
    assert ids(tree.roots) == ["main", "lost"]
    lost = tree.roots[1]
    assert (lost.kind, lost.flags, ids(lost.children)) == ("fork", ["orphan"], ["kid"])
    assert tree.roots[0].flags == [] and lost.children[0].flags == []


def test_cycle_is_emitted_once_rooted_at_its_earliest_member() -> None:
    tree = build_tree(
        [
            item("a", "c", 5),
            item("b", "a", 3),
            item("c", "b", 4),
            item("hanger", "b", 1),
            item("main", None, 0),
        ]
    )
    by_id = nodes_by_id(tree)
    assert ids(tree.roots) == ["main", "b"]
    assert ids(by_id["b"].children) == ["hanger", "c"]
    assert ids(by_id["c"].children) == ["a"]
    assert {i: n.flags for i, n in by_id.items()} == {
        "a": ["cycle"],
        "b": ["cycle"],
        "c": ["cycle"],
        "hanger": [],
        "main": [],
    }


def test_cycle_root_ties_on_created_at_break_by_id() -> None:
    tree = build_tree([item("y", "x", 7), item("x", "y", 7)])
    assert ids(tree.roots) == ["x"] and ids(tree.roots[0].children) == ["y"]


def test_self_parent_is_a_cycle() -> None:
    tree = build_tree([item("me", "me", 1), item("kid", "me", 2)])
    (root,) = tree.roots
    assert (root.id, root.kind, root.flags, ids(root.children)) == ("me", "fork", ["cycle"], ["kid"])


def test_repeated_id_appears_once_and_is_flagged() -> None:
    tree = build_tree([item("s", None, 1, title="first"), item("s", None, 2, title="second")])
    (root,) = tree.roots
    assert (root.title, root.flags) == ("first", ["duplicate"])


def test_every_session_appears_exactly_once_in_a_random_graph() -> None:
    rng = random.Random(11)
    names = [f"s{i}" for i in range(500)]
    # Parents drawn from all names plus some unknown ones: cycles, self-loops and orphans abound.
    items = [item(n, rng.choice([*names, "gone-1", "gone-2", None]), rng.randint(0, 30)) for n in names]
    tree = build_tree(items)
    seen = [node.id for node, _ in tree.walk() if node is not None]
    assert sorted(seen) == sorted(names)
    by_id = nodes_by_id(tree)
    for node in by_id.values():
        keys = [(by_id[c].createdAt, c) for c in ids(node.children)]
        assert keys == sorted(keys)
    for root in tree.roots:
        parent = next(i.parent for i in items if i.id == root.id)
        assert parent is None or "orphan" in root.flags or "cycle" in root.flags


def test_result_does_not_depend_on_input_order() -> None:
    items = [item(f"s{i}", f"s{i // 3}" if i else None, i % 7) for i in range(300)]
    shuffled = items[:]
    random.Random(2).shuffle(shuffled)
    assert build_tree(shuffled).flat() == build_tree(items).flat()


def chain(length: int) -> list[LineageItem]:
    return [item("n0", None, 0)] + [item(f"n{i}", f"n{i - 1}", i) for i in range(1, length)]


def test_ten_thousand_deep_chain_builds_and_walks_iteratively() -> None:
    tree = build_tree(reversed(chain(N)))
    depths = [depth for node, depth in tree.walk() if node is not None]
    assert len(depths) == N and max(depths) == N - 1
    flat = tree.flat()
    assert [(n.id, n.kind) for n in flat] == [(f"n{i}", "fork" if i else "root") for i in range(N)]


def test_ten_thousand_wide_fan_keeps_sorted_children() -> None:
    fan = [item("hub", None, 0)] + [item(f"c{i:05d}", "hub", N - i) for i in range(N)]
    tree = build_tree(fan)
    children = tree.roots[0].children
    assert len(children) == N
    assert children[0].id == f"c{N - 1:05d}" and children[-1].id == "c00000"
    assert [n.parent for n in tree.flat()[1:]] == ["hub"] * N


def test_ten_thousand_long_cycle_is_broken_once() -> None:
    ring = [item(f"n{i}", f"n{(i - 1) % N}", i + 1) for i in range(N)]
    tree = build_tree(ring)
    assert ids(tree.roots) == ["n0"]
    flagged = [node.flags for node, _ in tree.walk() if node is not None]
    assert len(flagged) == N and all(flags == ["cycle"] for flags in flagged)


def test_flat_form_places_every_node_by_parent_and_depth() -> None:
    deep = build_tree(chain(10_000)).flat()
    assert [n.depth for n in deep] == list(range(10_000))
    assert all(node.parent == previous.id for previous, node in zip(deep, deep[1:], strict=False))
    assert json.loads(json.dumps([n.model_dump() for n in deep]))[-1]["depth"] == 9_999
    fan = build_tree([item("root"), item("b", "root", created_at=2), item("a", "root", created_at=1)]).flat()
    assert [(n.id, n.parent, n.depth) for n in fan] == [("root", None, 0), ("a", "root", 1), ("b", "root", 1)]


def test_a_fork_whose_title_was_shortened_for_its_counter_keeps_the_default_title() -> None:
    long = "Read the notes and tell me what they say about the release of the new uploader"  # 78 bytes
    child = next_title(long)
    assert child.endswith("… (1)") and len(child.encode()) <= 80
    tree = build_tree(
        [
            item("main", title=long, log_title=long),
            item("child", "main", 1, title=child, log_title=child),
            item("grandchild", "child", 2, title=next_title(child), log_title=next_title(child)),
            item("other", "main", 3, title="Read the other… (1)", log_title="Read the other… (1)"),
        ]
    )
    defaults = {node_id for node_id, node in nodes_by_id(tree).items() if node.defaultTitle}
    assert defaults == {"child", "grandchild"}
