"""YAML remem reads: what safe_load gives, except that an alias is refused at its place."""

from __future__ import annotations

import pytest
import yaml

from remem.daemon import safe_yaml

from .yaml_bombs import BILLION_LAUGHS, FIRST_ALIAS_COLUMN, FIRST_ALIAS_LINE


@pytest.mark.parametrize(
    "text",
    ["", "a: 1\n", "a: [1, {b: c}]\nd: '2026-01-01'\n", "- x\n- y\n", "a: &anchor-but-no-alias 1\n", "x"],
)
def test_documents_without_aliases_load_as_safe_load_does(text: str) -> None:
    assert safe_yaml.load(text) == yaml.safe_load(text)
    assert safe_yaml.load(text.encode()) == yaml.safe_load(text)


@pytest.mark.parametrize("read", [safe_yaml.load, safe_yaml.compose])
def test_the_billion_laughs_is_refused_at_its_first_alias(read: object) -> None:
    with pytest.raises(safe_yaml.AliasRefused) as raised:
        read(BILLION_LAUGHS)  # type: ignore[operator]
    assert raised.value.line == FIRST_ALIAS_LINE
    assert raised.value.problem_mark is not None and raised.value.problem_mark.column == FIRST_ALIAS_COLUMN
    assert "aliases are not allowed" in str(raised.value)


@pytest.mark.parametrize("text", ["a: &x 1\nb: *x\n", "a: &x [*x]\n", "- &x {k: v}\n- [*x]\n"])
def test_any_alias_is_refused_even_a_small_one(text: str) -> None:
    with pytest.raises(safe_yaml.AliasRefused):
        safe_yaml.load(text)
