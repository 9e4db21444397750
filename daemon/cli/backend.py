"""Where a CLI command runs: through the daemon (the default) or in this process (`--no-daemon`).

Both paths call the very handlers the daemon serves, with the same protocol models, and get
the same results or the same `RpcError`s, so a command's output never depends on the path it
took. In-process calls take the same cross-process file locks, so a script without a daemon
stays safe beside one. Extra `--root`s are always read in-process: the daemon reads only the
configured roots and never takes a path from a client.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel

from ..home import Home

if TYPE_CHECKING:
    from ..client import Listener

R = TypeVar("R", bound=BaseModel)
NO_DAEMON_ENV = "REMEM_NO_DAEMON"


@dataclass(frozen=True)
class Backend:
    home: Home
    use_daemon: bool

    def call(
        self, method: str, params: BaseModel, result: type[R], roots: Sequence[Path] = (),
        listener: Listener | None = None,
    ) -> R:  # fmt: skip
        """Run `method`; raises `RpcError` exactly as the daemon would answer it. `listener`
        hears the notifications the call causes (the daemon's go to every client)."""
        # Loaded by the commands that call the daemon, not by every `remem` start (`remem lsp`).
        from .. import client
        from ..protocol.rpc import ANSWER_TOO_LARGE, METHODS, RpcError
        from .output import EXIT_PROBLEMS, fail

        assert METHODS[method].result is result, f"{method} returns {METHODS[method].result.__name__}"
        if self.use_daemon and not roots:
            try:
                answer = client.call(self.home, method, params.model_dump(mode="json"), listener=listener)
            except client.DaemonUnavailable as exc:
                fail(f"{exc}\n(--no-daemon runs the command without the daemon)", EXIT_PROBLEMS)
            except RpcError as exc:
                if exc.code != ANSWER_TOO_LARGE:
                    raise
                fail(f"{exc.message}; --no-daemon reads it in this process instead", EXIT_PROBLEMS)
            return result.model_validate(answer)
        answered = self._in_process(method, params, roots, listener)
        assert isinstance(answered, result)
        return answered

    def _in_process(
        self, method: str, params: BaseModel, roots: Sequence[Path], listener: Listener | None
    ) -> BaseModel:
        # The daemon's handlers (and all they need) are loaded only when a command runs without it.
        from ..consolidation.settle import settle_committing
        from ..server.consolidation_methods import ConsolidationMethods
        from ..server.memory_methods import MemoryMethods
        from ..server.session_methods import SessionMethods

        def publish(name: str, notification: BaseModel) -> None:
            if listener is not None:
                listener(name, notification.model_dump(mode="json"))

        memory = MemoryMethods(self.home, publish)
        handlers = {
            **memory.handlers(),
            **SessionMethods(self.home, roots, publish).handlers(),
            **ConsolidationMethods(self.home, memory, publish).handlers(),
        }

        answer: list[BaseModel] = []

        async def in_process() -> None:
            # Kept out of the task's result: CPython 3.11's `asyncio.run` formats that task,
            # result and all, when it restores SIGINT (a 10 000-entry log took a second).
            answer.append(await handlers[method](params))

        settle_committing(self.home)  # as the daemon does when it starts, before anything is read

        asyncio.run(in_process())
        return answer[0]
