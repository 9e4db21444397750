"""The parallel test lane keeps together what must run together (tests/conftest.py's groups).

pytest-xdist's `--dist loadgroup` silently stops grouping when pytest changes how node ids are
stored (pytest 9.2 did), so this runs a real parallel session and checks where each test ran.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
REPO = Path(__file__).parents[2]
SHARING = "tests/contract/test_golden_schema.py"  # its tests share a module-scoped fixture


def test_the_tests_of_a_module_sharing_a_fixture_run_on_one_worker_in_order() -> None:
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-n",
        "2",
        "--dist",
        "loadgroup",
        "-v",
        "-p",
        "no:cacheprovider",
    ]
    result = subprocess.run([*command, SHARING], cwd=REPO, capture_output=True, text=True, timeout=280)
    assert result.returncode == 0, result.stdout[-3000:]
    ran = re.findall(r"^\[(gw\d+)\] \[ *\d+%\] PASSED (\S+)", result.stdout, re.MULTILINE)
    workers: dict[str, list[str]] = defaultdict(list)
    for worker, test in ran:
        workers[worker].append(test.partition("@")[0])
    assert len(ran) > 2 and len(workers) == 1, f"the module's tests were split: {dict(workers)}"
    [order] = workers.values()
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", SHARING],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout.split()
    assert order == [line for line in collected if line.startswith(SHARING)]
