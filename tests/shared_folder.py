"""The project's `../shared` folder: where conformance suites find real sessions of each harness.

It sits next to the repository and is read in place, never copied. Without it a conformance
module skips and says so, except under CI=true, where CI provides it and a missing folder is a
failure, never a silent skip.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


def require(*paths: Path, what: str) -> None:
    """Skip the calling module (fail it under CI=true) unless every one of `paths` exists."""
    missing = [p for p in paths if not p.exists()]
    if not missing:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true, but {what} are missing at {missing[0]}", pytrace=False)
    pytest.skip(f"{what} not found at {missing[0]}; CI provides them", allow_module_level=True)
