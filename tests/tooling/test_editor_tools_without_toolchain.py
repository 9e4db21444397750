"""Without the editor's toolchain the demo's editor and the editor benchmarks say what is missing.

The demo's `python -m scripts.codeserver serve` fails with the list and how to install it (or
skip the editor); the benchmark runner skips `editor.*` with the reason and still exits 0.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from scripts.codeserver import E2E_DIR_ENV, REPO


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    empty = tmp_path / "no-toolchain"
    empty.mkdir(exist_ok=True)
    env = {**os.environ, E2E_DIR_ENV: str(empty)}
    return subprocess.run([sys.executable, "-m", *args], cwd=REPO, env=env, capture_output=True, text=True)


def test_the_demo_editor_names_what_is_missing(tmp_path: Path) -> None:
    result = run(
        tmp_path, "scripts.codeserver", "serve", "--folder", str(tmp_path), "--state", str(tmp_path / "s")
    )
    assert result.returncode == 1
    assert "Cannot start the editor; missing:" in result.stderr
    assert f"code-server 4.139.1 under {tmp_path / 'no-toolchain' / 'cs'}" in result.stderr
    assert "bash scripts/setup" in result.stderr and "--no-editor" in result.stderr
    assert not (tmp_path / "s").exists()


def test_the_benchmark_runner_skips_the_editor_benchmarks_with_the_reason(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    result = run(tmp_path, "tests.benchmarks", "--only", "editor.", "--quick", "--json", str(out))
    assert result.returncode == 0, result.stderr
    document = json.loads(out.read_text())
    first_trees = {"editor.first-tree", "editor.first-tree-kept", "editor.first-tree-cold"}
    assert set(document["skipped"]) == first_trees
    assert all("code-server 4.139.1 under" in reason for reason in document["skipped"].values())
    assert document["results"] == []
    assert "skipped editor.first-tree: the end-to-end toolchain is not installed" in result.stdout
