"""YAML remem reads: what safe_load gives, except that an alias is refused at its place."""

from __future__ import annotations

import pytest
import yaml

from remem.daemon import safe_yaml
from remem.daemon.memory.record import render_record
from remem.daemon.memory.validation import parse_record
from remem.daemon.protocol.memory import Record
from remem.daemon.settings import SettingsError, parse_settings

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


UNBUILDABLE = [
    ("when: 2024-02-30\n", "`2024-02-30` is no valid timestamp (day is out of range for month)"),
    ("n: !!int abc\n", "`abc` is no valid int"),
    ("n: " + "1" * 5000 + "\n", "is no valid int; quote it"),
]


@pytest.mark.parametrize(("text", "said"), UNBUILDABLE)
def test_a_value_yaml_cannot_build_is_a_yaml_error_at_its_line(text: str, said: str) -> None:
    """It was a ValueError, which every caller let through: a settings file holding one stopped
    the daemon for good, and a record whose description read as one could not be written."""
    with pytest.raises(yaml.MarkedYAMLError) as refused:
        safe_yaml.load("first: ok\nlist: [1, 2]\n" + text)
    assert said in str(refused.value) and refused.value.problem_mark is not None
    assert refused.value.problem_mark.line == 2


def test_a_settings_value_yaml_cannot_build_is_a_problem_of_its_key() -> None:
    with pytest.raises(SettingsError) as refused:
        parse_settings(b"sessions:\n  idle_seconds: 2024-02-30\n")
    assert refused.value.problems == [
        "settings.yml:2: not valid YAML: `2024-02-30` is no valid timestamp (day is out of range "
        "for month); quote it to keep it as text"
    ]


def test_a_record_whose_text_yaml_cannot_build_is_written_quoted() -> None:
    record = Record(name="a", description="2024-02-30", type="project", content="Body.\n")
    text = render_record(record)
    assert 'description: "2024-02-30"\n' in text and parse_record(text, "a.md").record == record
    long = Record(name="a", description="1" * 5000, type="project", content="Body.\n")
    assert f'description: "{"1" * 5000}"\n' in render_record(long)
