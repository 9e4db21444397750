"""Finding the real harness CLIs, and skipping (or failing under CI) when one is missing.

Both CLIs come from PyPI wheels in the dev extras: Claude Code inside ``claude-agent-sdk``
(``claude_agent_sdk/_bundled/claude``), Codex in ``openai-codex-cli-bin``. Without one, its tests
skip and say why — except under ``CI=true``, where a missing harness is a failure, never a skip.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

RUN_TIMEOUT = 120  # seconds for one harness run against a local fake: generous, never reached


def unavailable(reason: str) -> None:
    """Skip with `reason`, or fail when running under CI, where the harnesses must be installed."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true, but {reason}", pytrace=False)
    pytest.skip(reason)


def bundled(package: str, relative: str) -> Path:
    """The executable `relative` inside the installed `package`, or skip/fail naming what to install."""
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        unavailable(f"{package} is not installed (pip install -e '.[dev]')")
    path = Path(spec.origin).parent / relative
    if not os.access(path, os.X_OK):
        unavailable(f"{package} is installed without its CLI at {path}")
    return path


def interrupt(command: list[str], cwd: Path, env: dict[str, str], requests: Callable[[], int]) -> int:
    """Start `command`, press Ctrl-C (SIGINT) once the model has been asked (`requests()` grew),
    and return its exit code: a turn the user stopped while the model was answering."""
    asked = requests()
    process = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + RUN_TIMEOUT
    while requests() == asked and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    return process.wait(timeout=RUN_TIMEOUT)


def base_env(home: Path) -> dict[str, str]:
    """A minimal environment: no proxies, keys or config of the user leak into a harness run."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8"}
