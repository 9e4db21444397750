"""A worker attempt as a DSH-format session: the replayable record of what the model saw and said.

Each attempt writes one fresh session into remem's own root, under the consolidator's private
cwd (so it is never listed nor consolidated). Every step is appended and fsynced before the
attempt moves on, so after a crash what the model saw and its final proposal can be read back
(`read_back`) and committed without asking the model again.
"""

from __future__ import annotations

import errno
import os
import time
import uuid
from pathlib import Path
from typing import Any, Literal, NamedTuple

from ..fsutil import Unwritable, is_refused_write, remedy
from ..home import Home, HomeUnusable
from ..locks import LockUnusable
from ..sessions.catalog import WORKER_WORKSPACE
from ..sessions.errors import SessionLogError
from ..sessions.models import SessionEvent, SessionHeader
from ..sessions.paths import session_dir
from ..sessions.reader import read_session
from ..sessions.writer import SessionWriter, existing_log, recover_dir
from .proposal import TOOL_NAME

_IDS = uuid.UUID("6f1d9a52-3c0e-4f6b-9d57-0b8e2a1c4e10")  # namespace of worker session ids
ACCEPTED = "accepted: final proposal"
_Event = tuple[str, Any, Literal["append"] | None]


class ToolExchange(NamedTuple):
    """One tool call of a step and the host's answer to it."""

    call_id: str
    name: str
    arguments: str
    result: str
    error: bool


class Usage(NamedTuple):
    """The tokens a provider reports for one model step."""

    inputTokens: int
    outputTokens: int


def worker_session_id(review: str, attempt: int) -> str:
    return f"session-{uuid.uuid5(_IDS, f'{review}/{attempt}')}"


def worker_cwd(home: Home) -> str:
    return str(home.memory / WORKER_WORKSPACE)


def worker_dir(home: Home, session_id: str) -> Path:
    return session_dir(home.sessions, worker_cwd(home), session_id)


def worker_log_path(home: Home, session_id: str) -> Path | None:
    """The log of worker session `session_id`, if it was published in the home: its folder is
    never looked through a link (nor one on its way), which may lead out of the home."""
    directory = _own_dir(home, session_id)
    return None if directory is None else existing_log(directory)


def recover_worker_dir(home: Home, session_id: str) -> None:
    """Remove the temps a crashed writer of worker session `session_id` left, never through a
    link: what a link reaches is not remem's to delete."""
    directory = _own_dir(home, session_id)
    if directory is not None:
        recover_dir(directory)


def _own_dir(home: Home, session_id: str) -> Path | None:
    """The worker session's folder, or None when a link (or a folder this user may not search)
    stands on its way: no session of remem's is there, and an attempt that would write one
    ends saying why (`WorkerLog`). None too for an id longer than a folder name may be: no
    folder has it."""
    try:
        return home.refuse_link(worker_dir(home, session_id))
    except HomeUnusable:
        return None
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            return None
        raise


class Recorded(NamedTuple):
    """What a worker session's log says of its attempt, read back after a crash."""

    provider: str
    model: str
    created_ms: int
    context: str | None  # the runtime context the model was shown
    final: str | None  # the arguments of the accepted final proposal


class WorkerLog:
    """Appends the events of one attempt: one turn, one step per model call."""

    def __init__(self, home: Home, review: str, attempt: int) -> None:
        header = SessionHeader(
            id=worker_session_id(review, attempt), createdAt=_now_ms(), cwd=worker_cwd(home)
        )
        self.id = header.id
        # Its project and session folders are made by name: a link at one is refused, since the
        # log would be written wherever it points. Refused as the writer's own refusal, the
        # attempt already in the receipt ends saying why, never left running (decision 0543).
        directory = worker_dir(home, self.id)
        refusal = _in_the_way(home, directory)
        if refusal is not None:
            raise SessionLogError(directory, refusal)
        self._writer = SessionWriter(home.sessions, header)
        self._step = 0

    @property
    def path(self) -> Path:
        return self._writer.path

    def start(
        self, system: str, tools: list[dict[str, Any]], provider: str, model: str, context: str
    ) -> None:
        header = {"config": {"provider": provider, "model": model}, "system": system, "tools": tools}
        self._append(
            ("turn/start", {"turn": 1}, None),
            ("request/header", {"header": header, "reason": "initial"}, None),
            ("user/message", _message("user", [_text(context)], {"kind": "consolidator"}), "append"),
        )

    def step(
        self, blocks: list[dict[str, Any]], provider: str, model: str, exchanges: list[ToolExchange],
        usage: Usage | None = None,
    ) -> None:  # fmt: skip
        """One model step and the tool's answers, appended (and fsynced) as one batch."""
        self._step += 1
        step = {"turn": 1, "step": self._step}
        message = _message("assistant", blocks, {"kind": "model", "provider": provider, "model": model})
        answer: dict[str, Any] = {**step, "message": message}
        if usage is not None:  # DSH's own field: what the provider counted for this step
            answer["usage"] = usage._asdict()
        events: list[_Event] = [("step/start", step, None), ("assistant/message", answer, "append")]
        for x in exchanges:
            block = {
                "type": "tool-result",
                "toolCallId": x.call_id,
                "content": [_text(x.result)],
                "isError": x.error,
            }
            answer = _message("user", [block], {"kind": "tool", "callId": x.call_id})
            events += [
                ("tool/call", {**step, "callId": x.call_id, "name": x.name, "arguments": x.arguments}, None),
                ("tool/result", {**step, "message": answer}, "append"),
            ]
        self._append(*events)

    def nudge(self, text: str) -> None:
        """A host message between steps (e.g. 'call the tool'), recorded like everything else."""
        self._append(("user/message", _message("user", [_text(text)], {"kind": "consolidator"}), "append"))

    def end(self, kind: str) -> None:
        closing: list[_Event] = [("step/end", {"turn": 1, "step": self._step}, None)] if self._step else []
        self._append(*closing, ("turn/end", {"turn": 1, "reason": {"kind": kind}}, None))
        self._writer.close()

    def close(self) -> None:
        self._writer.close()

    def _append(self, *events: _Event) -> None:
        first = self._writer.next_seq
        self._writer.append(
            SessionEvent(type=kind, seq=first + n, time=_now_ms(), data=data, surfaceOp=op)
            for n, (kind, data, op) in enumerate(events)
        )


def _in_the_way(home: Home, directory: Path) -> str | None:
    """Why no worker session can be written in `directory`, and the fix; None when one can. A
    link at its folder or its project's, which remem makes, is to be removed; anything else on
    the way (a link at the home's own folders, a folder this user may not search) is said in the
    home's words."""
    try:
        home.refuse_link(directory)
        return None
    except HomeUnusable as exc:
        made = _made_link(home, directory)
        if made is None:
            return str(exc)
        return (
            f"{made} is a symbolic link, and remem writes its worker sessions only inside its home, "
            "never through a link: remove the link, then retry"
        )


def _made_link(home: Home, directory: Path) -> Path | None:
    """The folder remem makes by name for the worker session at `directory` (its project's or its
    own) that is a symbolic link, when the folders of the home above them are none."""
    try:
        home.refuse_link(directory.parent.parent)
    except HomeUnusable:
        return None
    return next((p for p in (directory.parent, directory) if os.path.islink(p)), None)


# What stands where remem makes a worker session's folder, and what to do about it.
_IN_THE_WAY = {
    errno.EEXIST: "something other than a folder stands where remem makes one: move it away",
    errno.ENOTDIR: "something other than a folder stands where remem makes one: move it away",
    errno.ELOOP: "a link stands where remem makes a folder: remove it",
}


def unstarted(exc: SessionLogError | LockUnusable | HomeUnusable | OSError) -> str | None:
    """Why an attempt ended whose worker session could not be started, naming what stood in its
    way and what to do: the receipt already said the attempt running, so whatever the cause (a
    refused write, a file where remem makes a folder, a link at `writer.lock`) it is said there,
    never left for readers to call interrupted (decision 0543). None for an OSError remem did not
    foresee (EIO, EBADF…): a bug's or the disk's, which no advice fits."""
    if isinstance(exc, Unwritable):
        return unwritten(exc)
    if isinstance(exc, SessionLogError):
        return f"the worker session could not be written: {exc.reason}"
    if isinstance(exc, LockUnusable | HomeUnusable):  # each names the file and its fix
        return f"the worker session could not be started: {exc}"
    if exc.errno in _IN_THE_WAY:
        fix = _IN_THE_WAY[exc.errno]
    elif is_refused_write(exc):
        fix = remedy(exc.errno)
    else:
        return None
    where = "" if exc.filename is None else f" at {exc.filename}"
    return f"the worker session could not be started{where} ({exc.strerror}); {fix}, then retry"


def unwritten(refusal: OSError) -> str:
    """Why an attempt ended whose worker session the disk refused (`fsutil.is_refused_write`), and
    what to do: no bug, so no class nor frames."""
    return (
        f"the worker session could not be written ({refusal.strerror}); to go on, "
        f"{remedy(refusal.errno)}, then retry"
    )


def read_back(path: Path) -> Recorded | None:
    """The attempt a worker log records (it may end torn, or without `turn/end`), or None if
    it cannot be read as one."""
    try:
        log = read_session(path)
        return _recorded(log.header.createdAt, log.events)
    except (SessionLogError, KeyError, IndexError, TypeError, AttributeError):
        return None  # not readable, or not shaped as this module writes it


def _recorded(created_ms: int, events: tuple[SessionEvent, ...]) -> Recorded:
    config: dict[str, Any] = next(
        (e.data["header"]["config"] for e in events if e.type == "request/header"), {}
    )
    context = next(
        (
            e.data["content"][0]["text"]
            for e in events
            if e.type == "user/message" and e.data.get("source", {}).get("kind") == "consolidator"
        ),
        None,
    )
    accepted = {
        block.get("toolCallId")
        for e in events
        if e.type == "tool/result"
        for block in e.data["message"]["content"]
        if block["content"][0]["text"] == ACCEPTED
    }
    calls = [e.data for e in events if e.type == "tool/call" and e.data["callId"] in accepted]
    final = calls[-1]["arguments"] if calls and calls[-1]["name"] == TOOL_NAME else None
    return Recorded(
        str(config.get("provider", "unknown")),
        str(config.get("model", "unknown")),
        created_ms,
        context,
        final,
    )


def _message(role: str, content: list[dict[str, Any]], source: dict[str, Any]) -> dict[str, Any]:
    return {"id": f"message-{uuid.uuid4()}", "role": role, "content": content, "source": source}


def _text(text: str) -> dict[str, str]:
    return {"type": "text", "text": text}


def _now_ms() -> int:
    return time.time_ns() // 1_000_000
