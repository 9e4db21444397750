"""`remem settings model` sets its keys in the user's own `settings.yml`: comments, order,
quoting and blank lines stay as written (decision 0463)."""

from __future__ import annotations

from pathlib import Path

import pytest

from remem.daemon import settings_edit
from remem.daemon.home import Home
from remem.daemon.settings import SettingsStore
from tests.daemon.helpers import remem
from tests.fake_openai import FakeOpenAI

from .conftest import configure


def test_choosing_a_model_keeps_the_users_comments_and_layout(
    home: Home, fake: FakeOpenAI, tmp_path: Path
) -> None:
    configure(home, fake, tmp_path / "dsh")
    written = home.settings_file.read_text()
    commented = (
        "# my remem settings: the cheap model for reviews\n\n"
        + written.replace("  model: fake-model\n", "  model: fake-model   # for now\n")
        + "# end of file\n"
    )
    home.settings_file.write_text(commented)
    chosen = remem(home, "settings", "model", "--model", "fake-model-2")
    assert chosen.returncode == 0, chosen.stderr
    assert home.settings_file.read_text() == commented.replace("model: fake-model ", "model: fake-model-2 ")


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (  # a key its section lacks goes below that section's last, at its indentation
            "# reviews\nconsolidation:\n    provider: ollama  # the local one\n\n"
            "# roots\nsessions:\n  idle_seconds: 30\n",
            "# reviews\nconsolidation:\n    provider: ollama  # the local one\n    model: 'a: b'\n\n"
            "# roots\nsessions:\n  idle_seconds: 30\n",
        ),
        (  # a section the file lacks goes below its last key; Windows line ends are kept
            "# sessions only\r\nsessions:\r\n  roots:\r\n    - path: /logs\r\n      format: dsh\r\n",
            "# sessions only\r\nsessions:\r\n  roots:\r\n    - path: /logs\r\n      format: dsh\r\n"
            "consolidation:\r\n  model: 'a: b'\r\n",
        ),
        ("# nothing set yet\n", "# nothing set yet\nconsolidation:\n  model: 'a: b'\n"),
    ],
    ids=["key", "section", "comments-only"],
)
def test_a_missing_key_is_added_where_a_person_would_write_it(home: Home, before: str, after: str) -> None:
    store = SettingsStore(home.ensure_layout())  # the test writes its file there first
    home.settings_file.write_bytes(before.encode())
    store.update(store.read()[1], {"consolidation.model": "a: b"})
    assert home.settings_file.read_bytes() == after.encode()
    assert store.read()[0].consolidation.model == "a: b"


@pytest.mark.parametrize(
    "before",
    [
        "consolidation: {}  # nothing yet\n",
        "consolidation:  # folded\n  model: >-\n    m\n",
    ],
    ids=["empty-braces", "folded-value"],
)
def test_a_shape_an_edit_cannot_follow_is_rewritten_with_the_same_settings(home: Home, before: str) -> None:
    store = SettingsStore(home.ensure_layout())  # the test writes its file there first
    home.settings_file.write_text(before)
    store.update(store.read()[1], {"consolidation.model": "m2"})
    assert store.read()[0].consolidation.model == "m2"
    assert "#" not in home.settings_file.read_text()  # rewritten: only what YAML holds


def test_a_value_already_set_is_left_as_written(home: Home) -> None:
    """The model picker sends the provider with the model: an unchanged one keeps its quotes."""
    store = SettingsStore(home.ensure_layout())  # the test writes its file there first
    home.settings_file.write_text('consolidation:\n  provider: "ollama"   # quoted on purpose\n  model: m1\n')
    store.update(store.read()[1], {"consolidation.provider": "ollama", "consolidation.model": "m2"})
    assert home.settings_file.read_text() == (
        'consolidation:\n  provider: "ollama"   # quoted on purpose\n  model: m2\n'
    )


def test_a_file_too_large_to_edit_quickly_is_rewritten(home: Home) -> None:
    store = SettingsStore(home.ensure_layout())  # the test writes its file there first
    roots = "".join(f"    - /logs/{n:05}\n" for n in range(settings_edit.MAX_EDITED_CHARS // 16))
    home.settings_file.write_text(f"# many roots\nsessions:\n  roots:\n{roots}")
    store.update(store.read()[1], {"consolidation.model": "m2"})
    settings = store.read()[0]
    assert settings.consolidation.model == "m2" and len(settings.sessions.roots) == len(roots.splitlines())
    assert not home.settings_file.read_text().startswith("# many roots")
