"""Editor benchmarks: from a ready workbench to the first row of the Session Branches tree.

Each iteration opens a new window of one code-server (scripts/codeserver.py, with the packaged
extension installed) in one headless Chromium (tests/e2e/harness.py), on a workspace seeded like
the demo's. The clock starts when the workbench is ready — its activity bar rendered, the
moment a person can click — and stops at the first row of a view:

- remem: the Remem container is shown at once and the Session Branches view's first session
  appears: the extension's activation, `remem lsp` starting and connecting to the daemon,
  `remem/sessionTree`, and the render;
- baseline: in the same kind of window, the Explorer shows the folder's first file: the
  workbench's own round trip to the server for a tree view.

Between iterations the previous window is closed once its language server is connected (a
window closed while its extension host starts leaves that host behind), and its language
server is gone before the next window opens.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from remem.daemon.home import Home
from scripts.codeserver import (
    CodeServer,
    build_vsix,
    editor_env,
    install_extension,
    remem_executable,
    short_scratch,
    stop_daemon,
    workbench_settings,
)
from scripts.seed_demo import seed
from tests.e2e.harness import Tools, Workbench, find_tools, open_browser, open_workbench, unavailable_reason

from .consolidation import _p50_table, _warm_p50, _warmup_of
from .daemon import _Starts
from .harness import Benchmark, Call, Contenders, Unavailable

_TARGET_NS = 3_000_000_000
_WAIT_MS = 120_000  # a bound on each wait, so a broken window fails instead of hanging
_GONE_SECONDS = 60.0
_SESSIONS_VIEW = "Session Branches"


class _Windows:
    """One window at a time of `server` on `project`; the previous one is closed cleanly first."""

    def __init__(self, context: Any, server: CodeServer, project: Path, scratch: Path) -> None:
        self.context, self.server, self.project, self.scratch = context, server, project, scratch
        self.current: Workbench | None = None

    def open(self) -> Workbench:
        self.close()
        self.current = open_workbench(self.context, self.server, self.project, self.scratch)
        return self.current

    def close(self) -> None:
        if self.current is None:
            return
        self.current.status_bar_item("remem").locator(".codicon-check").wait_for(timeout=_WAIT_MS)
        self.current.page.close()
        self.current = None
        deadline = time.monotonic() + _GONE_SECONDS
        while _language_servers(self.server.process.pid):
            if time.monotonic() > deadline:
                raise RuntimeError("a closed window's language server is still running")
            time.sleep(0.1)


def _language_servers(group: int) -> list[int]:
    """The `remem lsp` processes in process group `group` (Linux: read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.getpgid(int(entry.name)) != group:
                continue
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:  # gone meanwhile
            continue
        if b"lsp" in argv and any(arg.endswith(b"remem") for arg in argv):
            found.append(int(entry.name))
    return found


def _first_session_row(bench: Workbench) -> None:
    bench.show_container("Remem")
    bench.view(_SESSIONS_VIEW).locator(".monaco-list-row").first.wait_for(timeout=_WAIT_MS)


def _first_file_row(bench: Workbench) -> None:
    # The Explorer is what a window opened on a folder shows; a click could hide it again.
    bench.page.locator(".explorer-folders-view .monaco-list-row").first.wait_for(timeout=_WAIT_MS)


def _seed_workspace(folder: Path) -> tuple[Home, Path]:
    """The demo's sessions, and a few files for the Explorer to list."""
    home, project = Home(folder / "home"), folder / "project"
    (project / "src").mkdir(parents=True)
    (project / "README.md").write_text("# A project\n")
    (project / "src" / "app.py").write_text("print('hello')\n")
    seed(home.root, folder / "dsh-sessions", project, None)
    return home, project


class _FirstTree:
    """Both sides' windows and timings (warm-up included) for one benchmark."""

    def __init__(self, windows: _Windows, env: dict[str, str], daemon_running: bool) -> None:
        self.windows, self.env, self.daemon_running = windows, env, daemon_running
        self.timings: dict[str, dict[int, int]] = {"remem": {}, "baseline": {}}

    def contenders(self) -> Contenders:
        return Contenders(
            remem=lambda i: self._timed("remem", i, _first_session_row),
            baseline=lambda i: self._timed("baseline", i, _first_file_row),
        )

    def _timed(self, side: str, iteration: int, wait: Callable[[Workbench], None]) -> Call:
        bench = self._window()

        def call() -> None:
            start = time.perf_counter_ns()
            wait(bench)
            self.timings[side][iteration] = time.perf_counter_ns() - start

        return call

    def _window(self) -> Workbench:
        if self.daemon_running:
            command = [remem_executable(), "daemon", "start"]
            subprocess.run(command, env=self.env, check=True, capture_output=True)
        else:
            self.windows.close()  # its language server would keep a new daemon busy
            stop_daemon(Home(Path(self.env["REMEM_HOME"])))
        return self.windows.open()


@contextmanager
def _first_tree(name: str, *, daemon_running: bool) -> Iterator[Contenders]:
    tools, missing = find_tools()
    if tools is None:
        raise Unavailable(unavailable_reason(missing))
    with tempfile.TemporaryDirectory(prefix="remem-bench-") as folder, short_scratch() as scratch:
        home, project = _seed_workspace(Path(folder))
        # No real ~/.dsh: the daemon's roots are the home's own and the seeded one.
        env = {**editor_env(dict(os.environ)), "REMEM_HOME": str(home.root), "DSH_HOME": f"{folder}/no-dsh"}
        # Python as installed: bytecode cached after the first start, whatever the calling shell
        # says (a sandbox may forbid it), kept in this run's folder.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = f"{folder}/pycache"
        try:
            with (
                _editor(tools, Path(folder), scratch, env) as server,
                open_browser(tools, Path(folder, "chromium")) as context,
            ):
                bench = _FirstTree(_Windows(context, server, project, scratch), env, daemon_running)
                yield bench.contenders()
        finally:
            stop_daemon(home)
    print(_verdict_table(name, bench.timings), end="\n\n", flush=True)


@contextmanager
def _editor(tools: Tools, folder: Path, scratch: Path, env: dict[str, str]) -> Iterator[CodeServer]:
    extensions = folder / "extensions"
    install_extension(tools.editor, build_vsix(), extensions, scratch)
    settings = workbench_settings(remem_executable())
    with CodeServer(tools.editor, extensions, folder / "user-data", scratch, env, settings) as server:
        yield server


def _verdict_table(name: str, timings: dict[str, dict[int, int]]) -> str:
    """Each side's p50 (warm-up left out) and their difference; remem's p50 judged against 3 s."""
    runs = len(timings["remem"])
    warmup = _warmup_of(_BUDGET, runs)
    remem, baseline = (_warm_p50(timings[side], warmup) for side in ("remem", "baseline"))
    table = _p50_table(name, remem, baseline, _TARGET_NS, remem)
    return f"{name}, {runs - warmup} window(s) per side:\n{table}"


_BUDGET = _Starts(iterations=5, warmup=1)
_WHAT = (
    "from the workbench ready (activity bar rendered) in a new code-server window on a seeded "
    "workspace, show the Remem container and wait for the first Session Branches row; baseline: "
    "the same wait for the Explorer's first file row (target: p50 remem ≤ 3 s; the verdict prints "
    "in its own table before this one)"
)

BENCHMARKS = [
    Benchmark(
        name="editor.first-tree",
        note=f"{_WHAT}; the daemon is already running",
        target=None,
        budget=_BUDGET,
        setup=lambda: _first_tree("editor.first-tree", daemon_running=True),
    ),
    Benchmark(
        name="editor.first-tree-cold",
        note=f"{_WHAT}; no daemon runs, so the language server starts it",
        target=None,
        budget=_BUDGET,
        setup=lambda: _first_tree("editor.first-tree-cold", daemon_running=False),
    ),
]
