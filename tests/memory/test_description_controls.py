"""A control character or a line break in a description's value is refused, wherever the file's
text holds only its YAML escape: MEMORY.md and every agent's context show the value raw."""

from __future__ import annotations

import pytest

from remem.daemon.memory.batch import InvalidChanges
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryInvalid, MemoryStore
from remem.daemon.memory.validation import parse_record
from remem.daemon.protocol.memory import PutChange

from .factory import rec

EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
REFUSED = [
    ("x\x1b[31mred", "remem/control-character", "control character U+001B at character 2"),
    ("x\ry", "remem/description-multiline", "a line break (U+000D) at character 2"),
    ("x\x7fy", "remem/control-character", "control character U+007F at character 2"),
    ("x\x9by", "remem/control-character", "control character U+009B at character 2"),
    ("x\x85y", "remem/description-multiline", "a line break (U+0085) at character 2"),
    ("xy\u2028z", "remem/description-multiline", "a line break (U+2028) at character 3"),
    ("x\u2029y", "remem/description-multiline", "a line break (U+2029) at character 2"),
    ("x\x00", "remem/control-character", "control character U+0000 at character 2"),
    ("ab\x1f", "remem/control-character", "control character U+001F at character 3"),
]


@pytest.mark.parametrize(("description", "code", "said"), REFUSED)
def test_a_description_holding_a_control_character_is_refused_before_anything_is_written(
    store: MemoryStore, workspace: WorkspaceId, description: str, code: str, said: str
) -> None:
    change = PutChange(action="put", record=rec("esc", description=description))
    with pytest.raises(InvalidChanges) as caught:
        store.commit_workspace(workspace, EMPTY, [change])
    assert [(p.code, said in p.message) for p in caught.value.problems] == [(code, True)]
    assert not store.folder(workspace).exists(), "nothing was written"


@pytest.mark.parametrize(
    ("escaped", "code", "said"),
    [
        (r"x\e[31mred", "remem/control-character", "control character U+001B at character 2"),
        (r"x\ry", "remem/description-multiline", "a line break (U+000D) at character 2"),
        (r"x\u2028y", "remem/description-multiline", "a line break (U+2028) at character 2"),
    ],
)
def test_a_hand_written_escape_is_judged_as_the_value_it_stands_for(
    store: MemoryStore, workspace: WorkspaceId, escaped: str, code: str, said: str
) -> None:
    text = f'---\nname: esc\ndescription: "{escaped}"\ntype: project\n---\nWhy.\n'
    problems = parse_record(text, "esc.md").diagnostics
    assert [(d.code, said in d.message) for d in problems] == [(code, True)]
    assert problems[0].range.start.line == 2  # on the description's line
    folder = store.folder(workspace)
    folder.mkdir(parents=True)
    (folder / "esc.md").write_text(text)
    with pytest.raises(MemoryInvalid):
        store.read_workspace(workspace)
    assert not (folder / "MEMORY.md").exists()


@pytest.mark.parametrize("description", ["tab\there", "é ü 中", "  spaced  ", "ends with a newline\n"])
def test_plain_text_descriptions_stay_valid(
    store: MemoryStore, workspace: WorkspaceId, description: str
) -> None:
    change = PutChange(action="put", record=rec("fine", description=description))
    assert store.commit_workspace(workspace, EMPTY, [change]).status == "committed"
