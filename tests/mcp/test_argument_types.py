"""Every tool's arguments are read strictly, as the schema `tools/list` shows the agent says them
(decision 0485): a value of another JSON type is refused naming the argument, the type it should
be and what was sent, never coerced (`true` was 1, `"3.5"` was 3), and what the schema allows is
served. The one exception: a string holding an integer's text, where an integer is asked, is
that integer (Claude Code sends the model's numbers so in many of its builds)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore

from .conftest import agent, put, text_of

pytestmark = pytest.mark.asyncio

# A call of each tool that is served, whose every argument (and every value inside one) the test
# replaces in turn by each value below.
GOOD: dict[str, dict[str, Any]] = {
    "memory_context": {},
    "memory_read": {"name": "a-record"},
    "memory_history": {"limit": 3},
    "memory_update": {
        "changes": [
            put("a-record"),
            {"action": "delete", "name": "old-record"},
            {"action": "replace-global", "content": "Answer tersely.\n"},
        ]
    },
}
# Each value of another JSON type, and how a refusal names it.
SENT: list[tuple[Any, str]] = [
    ("3", 'the string "3"'),
    ("3.5", 'the string "3.5"'),
    (" 3", 'the string " 3"'),
    ("3\n", 'the string "3\\n"'),
    ("03", 'the string "03"'),
    ("+3", 'the string "+3"'),
    ("-0", 'the string "-0"'),  # an integer's text, but not as an encoder writes it (0)
    ("\u0663", 'the string "\u0663"'),  # ARABIC-INDIC DIGIT THREE, which Python's int() reads
    ("yes", 'the string "yes"'),
    (3, "the number 3"),
    (3.0, "the number 3.0"),
    (3.5, "the number 3.5"),
    (True, "true"),
    (None, "null"),
    (["3"], "an array of 1 item(s)"),
    ({"x": "3"}, "an object"),
]


def replacements(value: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    """Where a value can be replaced in `value` (each key's and each item's, all the way down)."""
    children = (
        value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else []
    )
    for key, child in children:
        yield (*path, key), child
        yield from replacements(child, (*path, key))


def replaced(value: Any, path: tuple[str | int, ...], new: Any) -> Any:
    if not path:
        return new
    head, *rest = path
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[head] = replaced(value[head], tuple(rest), new)  # type: ignore[index]
    return copy


def _same_kind(value: Any, original: Any) -> bool:
    return any(isinstance(value, kind) and isinstance(original, kind) for kind in (list, dict))


def integer_of(text: str) -> int | None:
    """The integer whose JSON text `text` is, exactly as an encoder writes it, else None."""
    with suppress(ValueError):  # not JSON
        number = json.loads(text)
        if type(number) is int and json.dumps(number) == text:
            return number
    return None


def served(schema: Draft202012Validator, good: Any, path: tuple[str | int, ...], value: Any) -> bool:
    """Whether the tool serves `good` with `value` at `path`: when its declared schema takes it,
    or takes the integer whose JSON text the string `value` is (decision 0485's exception)."""
    integer = integer_of(value) if isinstance(value, str) else None
    return schema.is_valid(replaced(good, path, value)) or (
        integer is not None and schema.is_valid(replaced(good, path, integer))
    )


def refused(tool: str, said: str) -> list[str] | None:
    """The problems listed if the call was refused for its arguments, else None."""
    head, *problems = said.splitlines()
    return problems if head == f"{tool}'s arguments are invalid; nothing was done:" else None


async def test_each_argument_is_refused_as_its_declared_schema_refuses_it(home: Home, project: Path) -> None:
    """No memory_context first: an update whose arguments pass is refused as not read, and
    writes nothing."""
    async with agent(home, project, options=("--no-daemon",)) as session:
        tools = {tool.name: tool.input_schema for tool in (await session.client.list_tools()).tools}
        assert set(tools) == set(GOOD), "every tool has a call here"
        for tool, good in GOOD.items():
            schema = Draft202012Validator(tools[tool])
            assert schema.is_valid(good)
            assert refused(tool, text_of(await session.call(tool, good))) is None, tool
            for path, original in replacements(good):
                for value, shown in SENT:
                    arguments = replaced(good, path, value)
                    problems = refused(tool, text_of(await session.call(tool, arguments)))
                    where = f"{tool} {path} = {value!r}: {problems}"
                    assert (problems is None) == served(schema, good, path, value), where
                    # A tag is quoted in its own message, and an array's or object's problem is
                    # inside it.
                    if problems is not None and path[-1] != "action" and not _same_kind(value, original):
                        assert any(
                            line.startswith(f"- {path[0]}") and line.endswith(f"; got {shown}")
                            for line in problems
                        ), where


async def test_a_wrong_type_is_named_with_the_type_it_should_be_and_what_was_sent(
    home: Home, project: Path
) -> None:
    async with agent(home, project, options=("--no-daemon",)) as session:
        limit = text_of(await session.call("memory_history", {"limit": "3.5"}))
        spaced = text_of(await session.call("memory_history", {"limit": " 3"}))
        flag = text_of(await session.call("memory_history", {"limit": True}))
        # More digits than Python's int() converts: an integer's text still, beyond the bounds.
        huge = text_of(await session.call("memory_history", {"limit": "9" * 5000}))
        negative = text_of(await session.call("memory_history", {"limit": "-" + "9" * 5000}))
        name = text_of(await session.call("memory_read", {"name": 7}))
        record = put("a-record")
        content = text_of(await session.update({**record, "record": {**record["record"], "content": None}}))
        context = text_of(await session.call("memory_context", {"limit": "3"}))  # it takes none
    assert limit.splitlines()[1:] == ['- limit: should be an integer; got the string "3.5"'], limit
    assert spaced.splitlines()[1:] == ['- limit: should be an integer; got the string " 3"'], spaced
    assert flag.splitlines()[1:] == ["- limit: should be an integer; got true"], flag
    assert huge.splitlines()[1:] == [
        f'- limit: Input should be less than or equal to 50; got the string "{"9" * 59}…'
    ], huge
    assert negative.splitlines()[1:] == [
        f'- limit: Input should be greater than or equal to 1; got the string "-{"9" * 58}…'
    ], negative
    assert name.splitlines()[1:] == ["- name: should be a string; got the number 7"], name
    assert content.splitlines()[1:] == ["- changes.0.put.record.content: should be a string; got null"], (
        content
    )
    assert context.splitlines()[1].startswith("- limit: Extra inputs are not permitted (remem chooses"), (
        context
    )


async def test_good_calls_are_served(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId
) -> None:
    async with agent(home, project) as session:
        await session.context()
        committed = await session.update(put("prefer-uv", "Use uv, never pip.\n"), put("second"))
        record = text_of(await session.call("memory_read", {"name": "prefer-uv"}))
        whole = text_of(await session.call("memory_history", {"limit": 1.0}))  # an integer to JSON Schema
        stringified = text_of(await session.call("memory_history", {"limit": "1"}))  # as Claude Code sends it
        default = text_of(await session.call("memory_history"))
    assert not committed.is_error and "Committed 2 change(s)" in text_of(committed)
    assert "Use uv, never pip." in record
    assert len(whole.splitlines()) == 2 and "added `prefer-uv`, `second`" in whole, whole
    assert whole.splitlines()[1] in default.splitlines(), default
    assert stringified == whole, stringified
    assert {r.name for r in store.read_workspace(workspace).records} == {"prefer-uv", "second"}
