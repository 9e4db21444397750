"""Running one case: a private home, the generated session, the real consolidation, the grade.

Each case gets a fresh temporary home holding only the route settings (the user's providers,
the chosen provider and model, their limits) and the case's own memory; its session root is
the only one read, so no session of the user is ever sent. The API key is still looked up in
the user's home. The review runs through `Consolidator` exactly as `remem consolidate` does:
worker, proposal checks, planning, and a commit into the private home, deleted afterwards.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..consolidation.proposal import ProposedChange, parse_arguments
from ..consolidation.receipts import ReceiptStore
from ..consolidation.runner import Consolidator, Refused
from ..consolidation.worker_log import read_back, worker_log_path
from ..home import Home
from ..memory.identity import WorkspaceId
from ..memory.store import MemoryStore
from ..protocol.memory import PutChange
from ..sessions.errors import SessionLogError
from ..sessions.reader import read_session
from ..sessions.scripted import ScriptedTurn
from ..settings import Settings
from .cases import CWD, filler_turn
from .formats import SessionFormat, Written
from .labels import Case
from .scoring import CaseScore, score_case

_PROBE_FILLERS = 8
_CONTEXT_MARGIN = 2048  # bytes of the review input besides the evidence: headings, records, task


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
    with tempfile.TemporaryDirectory(prefix="remem-eval-") as scratch:
        home, root = _private_home(Path(scratch), settings)
        _seed_memory(home, case)
        written = _write(case, fmt, root, Path(scratch), settings.consolidation.max_input_bytes)
        consolidator = Consolidator(home, credentials=user_home, session_roots=[root])
        started = time.monotonic()
        try:
            result = await consolidator.consolidate(written.session_id, lambda phase, data: None)
        except Refused as exc:
            return _failed(case, fmt, written, "refused", f"{exc.code}: {exc.message}")
        seconds = time.monotonic() - started
        try:
            trace = _trace(home, result.review)
        except (SessionLogError, OSError) as exc:  # one case's, not the run's: the others still count
            why = exc.reason if isinstance(exc, SessionLogError) else str(exc)
            return _failed(case, fmt, written, "unreadable", f"its worker session cannot be read back: {why}")
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


def _failed(case: Case, fmt: SessionFormat, written: Written, status: str, error: str) -> CaseScore:
    """A case graded as if no proposal was made: every fact missed, the outcome wrong."""
    score = score_case(case, fmt.name, status, None, written.ranges)
    return score.model_copy(update={"error": error})


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


def _write(case: Case, fmt: SessionFormat, root: Path, scratch: Path, max_input_bytes: int) -> Written:
    scripted = list(range(1, len(case.turns) + 1))
    if not case.filler:
        return fmt.write(root, case.turns, scripted, case.seed)
    # Two probes measure what one padding turn adds; then the real session is written once.
    sizes = [
        fmt.write(_fresh(scratch / f"probe-{n}"), *_padded(case, n), case.seed).size
        for n in (0, _PROBE_FILLERS)
    ]
    per_filler = max(1.0, (sizes[1] - sizes[0]) / _PROBE_FILLERS)
    budget = case.filler * max_input_bytes - sizes[0] - _CONTEXT_MARGIN
    return fmt.write(root, *_padded(case, max(0, int(budget / per_filler))), case.seed)


def _padded(case: Case, fillers: int) -> tuple[list[ScriptedTurn], list[int]]:
    cut = case.filler_after
    turns = [*case.turns[:cut], *(filler_turn(n) for n in range(1, fillers + 1)), *case.turns[cut:]]
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
