"""The extension's TypeScript unit tests (vscode-extension/test, node:test) as part of the one test command.

They type-check the whole extension and test its logic without an editor: tree mapping, quick-pick
items, command argument handling and the command flows against a scripted UI and server.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from scripts.codeserver import EXTENSION_SRC

from .conftest import unavailable


@pytest.mark.slow  # type-checks the whole extension first: most of a minute
def test_typescript_unit_tests_pass() -> None:
    npm = shutil.which("npm")
    if npm is None or not (EXTENSION_SRC / "node_modules").is_dir():
        unavailable("npm or the extension's npm packages are missing (bash scripts/setup installs them)")
    assert npm is not None
    result = subprocess.run([npm, "test"], cwd=EXTENSION_SRC, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    passed = re.search(r"^# pass (\d+)$", result.stdout, re.MULTILINE)
    assert passed is not None and int(passed.group(1)) > 0, result.stdout[-2000:]
    assert "# fail 0" in result.stdout
