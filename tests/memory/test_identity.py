"""Workspace keys: lexical absolute cwd, readable slug, no realpath."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from remem.daemon.memory.identity import WorkspaceId, is_workspace_key, workspace_key


def digest(path: str) -> str:
    return hashlib.sha256(path.encode()).hexdigest()[:16]


@pytest.mark.parametrize(
    ("cwd", "slug"),
    [
        ("/home/dev/My Project", "my-project"),
        ("/home/dev/remem", "remem"),
        ("/home/dev/a.b_c-d", "a.b_c-d"),
        ("/home/dev/--Weird!!  Name--", "weird-name"),
        ("/home/dev/项目", "root"),
        ("/home/dev/..hidden", "hidden"),
        ("/", "root"),
        ("/home/dev/" + "x" * 40, "x" * 32),
        ("/home/dev/" + "a" * 31 + "-b", "a" * 31),
    ],
)
def test_slug_rules(cwd: str, slug: str) -> None:
    key = workspace_key(cwd)
    assert key == f"{slug}-{digest(cwd)}"
    assert is_workspace_key(key)


def test_key_is_lexical_not_realpath(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    assert workspace_key(str(link)) != workspace_key(str(real))
    assert workspace_key(str(real / "sub" / "..")) == workspace_key(str(real))


def test_relative_cwd_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert WorkspaceId.from_cwd(".") == WorkspaceId(key=workspace_key(str(tmp_path)), cwd=str(tmp_path))
    assert WorkspaceId.from_cwd("missing/dir").cwd == os.path.join(str(tmp_path), "missing/dir")


@pytest.mark.parametrize("text", ["../etc", "a/b-0123456789abcdef", "", "x-0123", ".x-0123456789abcdef"])
def test_path_like_strings_are_not_keys(text: str) -> None:
    assert not is_workspace_key(text)
