"""Project keys and session segments must match DSH's format.ts bit for bit."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from remem.daemon.sessions.paths import Encoding, encode_segment, project_key, session_log_path


@pytest.mark.parametrize(
    ("cwd", "expected"),
    [
        ("/Users/qyj/work/deepseek-harness", "--Users-qyj-work-deepseek-harness--"),
        ("C:\\work\\agent", "--C-work-agent--"),
        ("/", "--root--"),
        ("/开发/~agent", "--~5F00~53D1-~007Eagent--"),
        (None, "_no-cwd"),
        ("/a//b/", "--a-b---"),
        ("/a b", "--a~0020b--"),
        ("/😀", "--~D83D~DE00--"),
        ("-/-x", "--x--"),
    ],
)
def test_project_key_matches_dsh(cwd: str | None, expected: str) -> None:
    assert project_key(cwd) == expected


def test_project_key_dash_collision_is_intentional() -> None:
    assert project_key("/a/b-c") == project_key("/a-b/c")


def test_project_key_truncates_slug_to_251_even_inside_an_escape() -> None:
    key = project_key("/" + "a" * 249 + "~")
    assert key == "--" + "a" * 249 + "~0" + "--"
    assert len(key) == 255


def test_project_key_refuses_empty_cwd() -> None:
    with pytest.raises(ValueError, match="non-empty"):
        project_key("")


@pytest.mark.parametrize(
    ("session_id", "expected"),
    [
        ("session-123e4567-e89b-42d3-a456-426614174000", "session-123e4567-e89b-42d3-a456-426614174000"),
        (".", "~002E"),
        ("..", "~002E~002E"),
        ("...", "..."),
        ("../etc", "..~002Fetc"),
        ("a/b", "a~002Fb"),
        ("x~y", "x~007Ey"),
        ("a:b\\c", "a~003Ab~005Cc"),
    ],
)
def test_encode_segment(session_id: str, expected: str) -> None:
    assert encode_segment(session_id) == expected


def test_encode_segment_refuses_empty_id() -> None:
    with pytest.raises(ValueError):
        encode_segment("")


@given(st.text(min_size=1), st.text(min_size=1))
def test_encode_segment_is_injective_and_path_safe(a: str, b: str) -> None:
    ea, eb = encode_segment(a), encode_segment(b)
    assert (ea == eb) == (a == b)
    assert "/" not in ea and "\\" not in ea and ea not in (".", "..")


@given(st.text(min_size=1))
def test_project_key_is_bounded_ascii(cwd: str) -> None:
    key = project_key(cwd)
    assert key.startswith("--") and key.endswith("--") and len(key) <= 255 and key.isascii()


def test_session_log_path_layout(tmp_path: Path) -> None:
    path = session_log_path(tmp_path, "/w/p", "s/1", Encoding.ZSTD)
    assert path == tmp_path / "--w-p--" / "s~002F1" / "session.jsonl.zstd"
    assert session_log_path(tmp_path, None, "s", Encoding.RAW).relative_to(tmp_path).parts == (
        "_no-cwd",
        "s",
        "session.jsonl",
    )
