"""The writer: lazy, no-overwrite, locked, rolled back on failure, crash-safe at every point."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from remem.daemon.faults import EXIT_CODE, POINTS
from remem.daemon.fsutil import is_temp_name
from remem.daemon.locks import try_file_lock
from remem.daemon.sessions.errors import SessionLogError, SessionRootError
from remem.daemon.sessions.models import SessionEvent, SessionHeader
from remem.daemon.sessions.paths import Encoding
from remem.daemon.sessions.reader import read_session
from remem.daemon.sessions.roots import scan_root
from remem.daemon.sessions.writer import LOCK_NAME, SessionWriter, encode_batch, recover_dir
from tests.sessions.factory import SessionSpec, build_session, write_session

WRITER_POINTS = sorted(p for p in POINTS if p.startswith("sessions.writer."))
CRASH_SCRIPT = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from tests.sessions.factory import SessionSpec, build_session, write_session
    from remem.daemon.sessions.paths import Encoding
    draft = build_session(SessionSpec(seed=9, turns=3))
    write_session(Path(sys.argv[1]), draft, encoding=Encoding(sys.argv[2]))
    """
)


def _draft():
    return build_session(SessionSpec(seed=9, turns=3))


def _temps(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if is_temp_name(p.name)]


@pytest.mark.parametrize("encoding", list(Encoding))
def test_nothing_exists_until_the_first_append(tmp_path: Path, encoding: Encoding) -> None:
    draft = _draft()
    writer = SessionWriter(tmp_path / "root", draft.header, encoding=encoding)
    writer.append([])
    assert not (tmp_path / "root").exists() and not writer.materialized
    writer.append(draft.batches[0])
    assert writer.path.exists() and writer.materialized
    writer.close()
    assert [e.to_record() for e in read_session(writer.path).events] == [
        e.to_record() for e in draft.batches[0]
    ]


def test_private_modes(tmp_path: Path) -> None:
    path = write_session(tmp_path, _draft(), encoding=Encoding.RAW)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert (
        stat.S_IMODE(path.parent.stat().st_mode) == stat.S_IMODE(path.parent.parent.stat().st_mode) == 0o700
    )


def test_zstd_layout_is_header_frame_then_one_frame_per_batch(tmp_path: Path) -> None:
    draft = _draft()
    log = read_session(write_session(tmp_path, draft, encoding=Encoding.ZSTD))
    assert log.resume.frame_count == 1 + len(draft.batches)


def test_writer_lock_is_held_while_open(tmp_path: Path) -> None:
    draft = _draft()
    with SessionWriter(tmp_path, draft.header) as writer:
        writer.append(draft.batches[0])
        assert try_file_lock(writer.path.parent / LOCK_NAME) is None
    lock = try_file_lock(writer.path.parent / LOCK_NAME)
    assert lock is not None
    lock.release()


def test_second_writer_cannot_take_over_or_overwrite(tmp_path: Path) -> None:
    draft = _draft()
    first, second = SessionWriter(tmp_path, draft.header), SessionWriter(tmp_path, draft.header)
    first.append(draft.batches[0])
    with pytest.raises(SessionLogError, match="another writer holds writer.lock"):
        second.append(draft.batches[0])
    first.close()
    original = first.path.read_bytes()
    with pytest.raises(SessionLogError, match="created concurrently"):
        second.append(draft.batches[0])
    assert first.path.read_bytes() == original and _temps(tmp_path) == []
    with pytest.raises(SessionLogError, match="already exists"):
        SessionWriter(tmp_path, draft.header)


def test_writer_follows_the_roots_encoding_and_refuses_to_mix(tmp_path: Path) -> None:
    write_session(tmp_path, _draft(), encoding=Encoding.ZSTD)
    other = build_session(SessionSpec(seed=10, turns=1))
    with pytest.raises(SessionRootError, match="holds zstd logs"):
        SessionWriter(tmp_path, other.header, encoding=Encoding.RAW)
    assert write_session(tmp_path, other).name == "session.jsonl.zstd"


def test_writer_refuses_events_dsh_would_reject(tmp_path: Path) -> None:
    header = SessionHeader(id="w", createdAt=1, cwd="/w")
    with SessionWriter(tmp_path, header) as writer:
        with pytest.raises(SessionLogError, match="expected seq 0"):
            writer.append([SessionEvent(type="turn/start", seq=1, time=1, data={"turn": 1})])
        with pytest.raises(SessionLogError, match="must carry ignorable"):
            writer.append([SessionEvent(type="remem/marker", seq=0, time=1, data={})])
        with pytest.raises(SessionLogError, match="must carry surfaceOp"):
            writer.append([SessionEvent(type="user/message", seq=0, time=1, data={})])
        marker = SessionEvent(type="remem/marker", seq=0, time=1, data={"k": "\ud800"}, ignorable=True)
        writer.append([marker])
    # Written losslessly (escaped, as JSON.stringify writes it), read as U+FFFD (decision 0391).
    assert b'"k":"\\ud800"' in encode_batch([marker])
    log = read_session(writer.path)
    assert log.unknown_types == {"remem/marker"} and log.events[0].data == {"k": "\ufffd"}


ROLLBACK_SCRIPT = textwrap.dedent(
    """
    import resource, signal, sys
    from pathlib import Path
    from tests.sessions.factory import SessionSpec, build_session
    from remem.daemon.sessions.paths import Encoding
    from remem.daemon.sessions.writer import SessionWriter
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    draft = build_session(SessionSpec(seed=9, turns=3))
    writer = SessionWriter(Path(sys.argv[1]), draft.header, encoding=Encoding(sys.argv[2]))
    writer.append(draft.batches[0])
    size = writer.path.stat().st_size
    resource.setrlimit(resource.RLIMIT_FSIZE, (size + 40, resource.RLIM_INFINITY))
    try:
        writer.append(draft.batches[1])
    except OSError as exc:
        print("failed", exc.errno, writer.path.stat().st_size == size)
    resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    writer.append(draft.batches[1])
    writer.close()
    """
)


@pytest.mark.parametrize("encoding", list(Encoding))
def test_failed_append_is_rolled_back_and_the_writer_continues(tmp_path: Path, encoding: Encoding) -> None:
    run = subprocess.run(
        [sys.executable, "-c", ROLLBACK_SCRIPT, str(tmp_path), encoding.value], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["failed", "27", "True"]  # EFBIG, file back at its old size
    draft = _draft()
    log = read_session(next(tmp_path.rglob(encoding.file_name)))
    assert log.torn is None
    assert [e.to_record() for e in log.events] == [e.to_record() for b in draft.batches[:2] for e in b]


def _crash(root: Path, encoding: Encoding, point: str) -> None:
    env = {**os.environ, "REMEM_FAULTPOINT": point}
    run = subprocess.run(
        [sys.executable, "-c", CRASH_SCRIPT, str(root), encoding.value],
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == EXIT_CODE, run.stderr


@pytest.mark.slow
@pytest.mark.parametrize("encoding", list(Encoding))
@pytest.mark.parametrize("point", WRITER_POINTS)
def test_crash_at_every_fault_point_leaves_no_session_or_a_complete_prefix(
    tmp_path: Path, encoding: Encoding, point: str
) -> None:
    _crash(tmp_path, encoding, point)
    draft = _draft()
    expected = [e.to_record() for e in draft.events]
    first_batch = len(draft.batches[0])
    scan = scan_root(tmp_path)
    assert scan.errors == []
    if point == "sessions.writer.after-temp-write":
        assert scan.logs == [] and len(_temps(tmp_path)) == 1
    else:
        (log,) = scan.logs
        got = [e.to_record() for e in log.events]
        assert got == expected[: len(got)] and len(got) >= first_batch
        assert (log.torn is not None) == (point == "sessions.writer.mid-append")
        assert log.balanced_events[-1].type in ("turn/end", "compaction/end")
    (lock,) = tmp_path.glob(f"*/*/{LOCK_NAME}")
    recover_dir(lock.parent)
    assert _temps(tmp_path) == []
    assert [log.digest for log in scan_root(tmp_path).logs] == [log.digest for log in scan.logs]


def test_recovery_spares_a_live_writers_dir(tmp_path: Path) -> None:
    draft = _draft()
    with SessionWriter(tmp_path, draft.header) as writer:
        writer.append(draft.batches[0])
        stray = writer.path.parent / ".session.jsonl.zstd.remem-tmp-000000000000"
        stray.write_bytes(b"x")
        assert recover_dir(stray.parent) == []
    assert recover_dir(stray.parent) == [stray]
