"""Running one case: a private home, the generated session, the real consolidation, the grade.

Each case gets a fresh temporary home holding only the route settings (the user's providers,
the chosen provider and model, their limits) and the case's own memory; its session root is
the only one read, so no session of the user is ever sent. The API key is still looked up in
the user's home. The review runs through `Consolidator` exactly as `remem consolidate` does:
worker, proposal checks, planning, and a commit into the private home, deleted afterwards.
"""

from __future__ import annotations

import asyncio
import json
import math
import pickle
import sys
import time
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..consolidation.proposal import ProposedChange, parse_arguments
from ..consolidation.receipts import ReceiptStore
from ..consolidation.runner import Consolidator, Refused
from ..consolidation.worker_log import read_back, worker_log_path
from ..home import Home
from ..limits import SESSION_EVENTS_MAX
from ..memory.identity import WorkspaceId
from ..memory.store import MemoryStore
from ..protocol.consolidation import EvidenceRange
from ..protocol.memory import PutChange
from ..sessions.errors import SessionLogError
from ..sessions.reader import read_session
from ..sessions.scripted import ScriptedTurn
from ..settings import Settings
from .cases import CWD, filler_turn
from .formats import SessionFormat, Written
from .labels import Case
from .scoring import CaseScore, score_case
from .scratch import private_folder

_PROBE_FILLERS = 8  # padding turns, and lines pasted in each, of a probe
_CONTEXT_MARGIN = 2048  # bytes of the review input besides the evidence: headings, records, task
# Half the reader's cap: what a padding turn adds is estimated from a few probe turns (its reply
# is streamed in chunks of random sizes), and a log past the cap is refused whole.
_PADDING_EVENTS = SESSION_EVENTS_MAX // 2


@dataclass(frozen=True)
class Trace:
    """What the worker session of a review's last attempt shows."""

    steps: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    invalid: int = 0  # final proposals the host rejected
    changes: list[ProposedChange] | None = None
    error: str | None = None  # the attempt's redacted error, as its receipt keeps it


async def run_case(case: Case, fmt: SessionFormat, settings: Settings, user_home: Home) -> CaseScore:
    """Review `case` written in `fmt` against `settings`' route, in a private home, and grade it."""
    with ExitStack() as held:
        try:
            scratch = held.enter_context(private_folder())
        except OSError as exc:  # no temporary folder can be written to: the disk is full, say
            return _failed(case, fmt, {}, "unreadable", f"its private home cannot be made: {exc}")
        try:
            home, root = _private_home(scratch, settings)
            _seed_memory(home, case)
        except OSError as exc:
            return _failed(case, fmt, {}, "unreadable", f"its private home cannot be written: {_reason(exc)}")
        max_input_bytes = settings.consolidation.max_input_bytes
        written = await _generated(case, fmt, root, scratch, max_input_bytes)
        if isinstance(written, str):  # one case's, not the run's: the others still count
            return _failed(
                case, fmt, {}, "unreadable", f"its session cannot be written as remem reads it: {written}"
            )
        consolidator = Consolidator(home, credentials=user_home, session_roots=[root])
        started = time.monotonic()
        try:
            result = await consolidator.consolidate(written.session_id, lambda phase, data: None)
        except Refused as exc:
            return _failed(
                case, fmt, written.ranges, "refused", f"{exc.code}: {exc.message}", time.monotonic() - started
            )
        seconds = time.monotonic() - started
        try:
            trace = _trace(home, result.review)
        except (SessionLogError, OSError) as exc:
            why = f"its worker session cannot be read back: {_reason(exc)}"
            return _failed(case, fmt, written.ranges, "unreadable", why, seconds)
    score = score_case(case, fmt.name, result.status.value, trace.changes, written.ranges)
    return score.model_copy(
        update={
            "steps": trace.steps,
            "inputTokens": trace.input_tokens,
            "outputTokens": trace.output_tokens,
            "invalid": trace.invalid,
            "seconds": round(seconds, 3),
            "error": trace.error,
        }
    )


def _failed(
    case: Case, fmt: SessionFormat, ranges: dict[int, EvidenceRange], status: str, error: str,
    seconds: float = 0.0,
) -> CaseScore:  # fmt: skip
    """A case graded as if no proposal was made: every fact missed, the outcome wrong. `seconds`:
    the review's wall time, if one ran."""
    score = score_case(case, fmt.name, status, None, ranges)
    return score.model_copy(update={"error": error, "seconds": round(seconds, 3)})


def _reason(exc: Exception) -> str:
    """An error's words without the path: the case names the log."""
    return exc.reason if isinstance(exc, SessionLogError) else str(exc)


def _private_home(scratch: Path, settings: Settings) -> tuple[Home, Path]:
    home = Home(scratch / "home").ensure_layout()
    root = scratch / "sessions"
    root.mkdir()
    chosen = settings.consolidation.model_dump() | {"debug": False}
    providers = {name: p.model_dump(exclude_none=True) for name, p in settings.providers.items()}
    text = {"consolidation": chosen, "providers": providers, "sessions": {"roots": [str(root)]}}
    home.settings_file.write_text(yaml.safe_dump(text, sort_keys=False), encoding="utf-8")
    return home, root


def _seed_memory(home: Home, case: Case) -> None:
    store = MemoryStore(home)
    if case.global_text:
        store.replace_global(store.read_global().revision, case.global_text)
    if case.records:
        workspace = WorkspaceId.from_cwd(CWD)
        revision = store.read_workspace(workspace).revision
        store.commit_workspace(workspace, revision, [PutChange(action="put", record=r) for r in case.records])


async def _generated(
    case: Case, fmt: SessionFormat, root: Path, scratch: Path, max_input_bytes: int
) -> Written | str:
    """The case's session written under `root`, or why it cannot be.

    A padded session takes seconds to write for a large limit, and Ctrl-C must stop the run at
    once: it is written by a child process, killed if the run stops and always reaped before
    the caller deletes `scratch`. A thread would not do: nothing stops one, `asyncio.run`
    waits for it at exit, and it would go on writing into the folder being deleted. The child
    runs in a session of its own, so a Ctrl-C or a closed terminal, which reach the terminal's
    whole process group, are the parent's alone to act on. An unpadded session is written in
    milliseconds, here."""
    if not case.filler:
        return _written(case, fmt, root, scratch, max_input_bytes)
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", f"from {__name__} import _write_for_parent; _write_for_parent()",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
        cwd=scratch,  # `-c` imports from the current folder first: the user's may hold another remem
    )  # fmt: skip
    try:
        out, err = await child.communicate(pickle.dumps((case, fmt, root, scratch, max_input_bytes)))
    finally:
        if child.returncode is None:  # the run was stopped
            child.kill()
            await child.wait()
    if child.returncode != 0:  # a bug, or killed from outside: its last words say which
        said = err.decode("utf-8", "replace").strip().splitlines()
        why = f": {said[-1]}" if said else ""
        return f"the process writing it failed (exit code {child.returncode}){why}"
    outcome: Written | str = pickle.loads(out)
    return outcome


def _write_for_parent() -> None:
    """The child's side of `_generated`: the arguments of `_written` in on stdin, its result
    out on stdout, both pickled (parent and child are the same remem)."""
    sys.stdout.buffer.write(pickle.dumps(_written(*pickle.load(sys.stdin.buffer))))


def _written(
    case: Case, fmt: SessionFormat, root: Path, scratch: Path, max_input_bytes: int
) -> Written | str:
    """`_write`, or why it failed: one case's trouble, graded as that case's."""
    try:
        return _write(case, fmt, root, scratch, max_input_bytes)
    except (SessionLogError, OSError) as exc:
        return _reason(exc)


def _write(case: Case, fmt: SessionFormat, root: Path, scratch: Path, max_input_bytes: int) -> Written:
    scripted = list(range(1, len(case.turns) + 1))
    if not case.filler:
        return fmt.write(root, case.turns, scripted, case.seed)
    fillers, pasted = _padding(case, fmt, scratch, case.filler * max_input_bytes - _CONTEXT_MARGIN)
    return fmt.write(root, *_padded(case, fillers, pasted), case.seed)


def _padding(case: Case, fmt: SessionFormat, scratch: Path, target: float) -> tuple[int, int]:
    """How many padding turns, with how many pasted lines each, bring the evidence to about
    `target` bytes, the log staying under the reader's cap on events: plain turns while their
    events fit in `_PADDING_EVENTS`, else that many turns, each made larger by pasted output.
    Each prompt, one line of the log, then carries about 1/`most` of `target` (`most` is about a
    thousand turns): far under SESSION_LINE_MAX_BYTES, which `max_input_bytes` may not exceed.
    The session is written once; probes measure what a turn and a pasted line add."""
    empty, plain, pasted = (
        fmt.write(_fresh(scratch / f"probe-{fillers}-{lines}"), *_padded(case, fillers, lines), case.seed)
        for fillers, lines in ((0, 0), (_PROBE_FILLERS, 0), (_PROBE_FILLERS, _PROBE_FILLERS))
    )
    turn_bytes = max(1.0, (plain.size - empty.size) / _PROBE_FILLERS)
    line_bytes = (pasted.size - plain.size) / _PROBE_FILLERS**2
    room = max(0.0, target - empty.size)
    most = (_PADDING_EVENTS - empty.events) * _PROBE_FILLERS / (plain.events - empty.events)
    if room <= most * turn_bytes:
        return int(room / turn_bytes), 0
    lines = math.ceil((room / most - turn_bytes) / line_bytes)
    return int(room / (turn_bytes + lines * line_bytes)), lines


def _padded(case: Case, fillers: int, pasted: int) -> tuple[list[ScriptedTurn], list[int]]:
    cut = case.filler_after
    padding = (filler_turn(n, pasted) for n in range(1, fillers + 1))
    turns = [*case.turns[:cut], *padding, *case.turns[cut:]]
    numbers = [*range(1, cut + 1), *([0] * fillers), *range(cut + 1, len(case.turns) + 1)]
    return turns, numbers


def _fresh(path: Path) -> Path:
    path.mkdir()
    return path


def _trace(home: Home, review: str) -> Trace:
    receipt = ReceiptStore(home).read(review)
    attempt = receipt.attempt if receipt is not None else None
    if attempt is None or attempt.workerSession is None:
        # Decided without the model: nothing to learn, or the input over max_input_bytes.
        return Trace(error=None if attempt is None else attempt.error)
    path = worker_log_path(home, attempt.workerSession)
    if path is None:  # the attempt ended before its worker session was published
        return Trace(error=attempt.error)
    events = read_session(path).events
    steps = [e.data for e in events if e.type == "assistant/message"]
    usage = [s.get("usage") or {} for s in steps]
    recorded = read_back(path)
    arguments = None if recorded is None else recorded.final
    return Trace(
        steps=len(steps),
        input_tokens=sum(u.get("inputTokens", 0) for u in usage),
        output_tokens=sum(u.get("outputTokens", 0) for u in usage),
        invalid=_rejected_finals(events),
        changes=None if arguments is None else list(parse_arguments(arguments).changes),
        error=attempt.error,
    )


def _rejected_finals(events: Sequence[Any]) -> int:
    """Tool calls meant as final (or unreadable) that the host answered with an error."""
    calls = {e.data["callId"]: e.data["arguments"] for e in events if e.type == "tool/call"}
    rejected = [
        block["toolCallId"]
        for e in events
        if e.type == "tool/result"
        for block in e.data["message"]["content"]
        if block.get("isError")
    ]
    return sum(1 for call in rejected if _meant_final(calls.get(call, "")))


def _meant_final(arguments: str) -> bool:
    try:
        data = json.loads(arguments)
    except ValueError:
        return True  # not even JSON: it cannot have been a draft
    return not isinstance(data, dict) or data.get("final") is not False
