"""Root scans: one bad log never hides the others; mixed roots and flat files are refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from remem.daemon.sessions.errors import SessionRootError
from remem.daemon.sessions.paths import Encoding
from remem.daemon.sessions.roots import detect_encoding, scan_root
from tests.sessions.factory import build_family, write_session

from .logs import header, line, lines, place, turn_events


def _family_root(root: Path, encoding: Encoding) -> list[str]:
    family = build_family(5, turns=4)
    for draft in family.drafts:
        write_session(root, draft, encoding=encoding)
    return sorted(d.header.id for d in family.drafts)


@pytest.mark.parametrize("encoding", list(Encoding))
def test_scan_reports_bad_logs_next_to_good_ones(tmp_path: Path, encoding: Encoding) -> None:
    ids = _family_root(tmp_path, encoding)
    broken = place(tmp_path, "broken", b"\x00garbage", encoding)
    scan = scan_root(tmp_path)
    assert scan.encoding is encoding
    assert sorted(log.header.id for log in scan.logs) == ids
    assert [e.path for e in scan.errors] == [broken]


def test_mixed_root_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    _family_root(tmp_path, Encoding.ZSTD)
    place(tmp_path, "intruder", line(header("intruder")), Encoding.RAW)
    with pytest.raises(SessionRootError, match="mixes raw and zstd"):
        scan_root(tmp_path)
    with pytest.raises(SessionRootError, match="mixes raw and zstd"):
        detect_encoding(tmp_path)


def test_flat_files_are_rejected_per_file(tmp_path: Path) -> None:
    good = place(tmp_path, "s1", line(header()) + lines(turn_events()))
    flat = good.parent.parent / "s2.jsonl"
    flat.write_bytes(line(header("s2")))
    scan = scan_root(tmp_path)
    assert [log.path for log in scan.logs] == [good]
    assert [e.path for e in scan.errors] == [flat] and "flat log file" in scan.errors[0].reason


def test_duplicate_ids_across_projects_are_errors(tmp_path: Path) -> None:
    place(tmp_path, "dup", line(header("dup")))
    place(tmp_path, "dup", line({**header("dup"), "cwd": "/other"}), cwd="/other")
    scan = scan_root(tmp_path)
    assert scan.logs == [] and len(scan.errors) == 2
    assert all("also exists" in e.reason for e in scan.errors)


def test_empty_or_missing_root(tmp_path: Path) -> None:
    assert detect_encoding(tmp_path / "nowhere") is None
    scan = scan_root(tmp_path)
    assert (scan.encoding, scan.logs, scan.errors) == (None, [], [])


def test_other_artifacts_in_session_dirs_are_ignored(tmp_path: Path) -> None:
    path = place(tmp_path, "s1", line(header()))
    (path.parent / "writer.lock").write_bytes(b"")
    (path.parent / "notes.md").write_text("x")
    assert [log.path for log in scan_root(tmp_path).logs] == [path]
