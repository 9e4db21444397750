"""Write a small DSH-format session root for the demo: a main session, a fork, a subagent."""

from __future__ import annotations

import sys
from pathlib import Path

from remem.daemon.sessions.factory import (
    SessionSpec,
    build_session,
    fork_session,
    subagent_session,
    write_session,
)


def main(root: Path, cwd: str) -> None:
    main_session = build_session(SessionSpec(seed=2026, turns=4, cwd=cwd))
    branch = fork_session(main_session, SessionSpec(seed=2027, turns=2, cwd=cwd), after_turn=2)
    helper = subagent_session(main_session, SessionSpec(seed=2028, turns=1, cwd=cwd))
    for draft in (main_session, branch, helper):
        write_session(root, draft)
    print(main_session.header.id)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
