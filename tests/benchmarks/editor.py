"""Editor benchmarks: from a ready workbench to the first row of the Session Branches tree.

Each iteration opens a new window of one code-server (scripts/codeserver.py, with the packaged
extension installed) in one headless Chromium (tests/e2e/harness.py), on a workspace seeded like
the demo's. The clock starts when the workbench is ready — its activity bar rendered, the
moment a person can click — and stops at the first row of a view:

- remem: the Remem container is shown at once and the Session Branches view's first session
  appears: the extension's activation, `remem lsp` starting and connecting to the daemon,
  `remem/sessionTree`, and the render;
- floor: in the same kind of window, the container of a no-op extension (`floor_extension/`,
  packaged like remem's and installed beside it) is shown and its tree's one item appears,
  which `activate` returns at once: the extension host's own cost for a first row;
- explorer (reported alongside): the Explorer's first file, the workbench's own tree.

`editor.first-tree` clears the workspace state before each window (no kept tree), so the row
is the server's answer; `editor.first-tree-kept` keeps it, so the row is the tree kept from the
last window; `editor.first-tree-cold` also stops the daemon first.

Between iterations the previous window is closed once its language server is connected (a
window closed while its extension host starts leaves that host behind), and its language
server is gone before the next window opens.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
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

_FLOOR_EXTENSION = Path(__file__).parent / "floor_extension"
_VSCE = Path(__file__).parents[2] / "vscode-extension" / "node_modules" / ".bin" / "vsce"
_WAIT_MS = 120_000  # a bound on each wait, so a broken window fails instead of hanging
_GONE_SECONDS = 180.0  # a loaded machine (load average 15 and more) took over 60 s
_SESSIONS_VIEW = "Session Branches"


class _Windows:
    """One window at a time of `server` on `project`; the previous one is closed cleanly first."""

    def __init__(
        self, context: Any, server: CodeServer, project: Path, scratch: Path, user_data: Path
    ) -> None:
        self.context, self.server, self.project, self.scratch = context, server, project, scratch
        self.workspace_state = user_data / "User" / "workspaceStorage"
        self.current: Workbench | None = None

    def open(self) -> Workbench:
        self.close()
        self.current = open_workbench(self.context, self.server, self.project, self.scratch)
        return self.current

    def close(self, *, forget: bool = False) -> None:
        """Close the window; with `forget`, also the workspace state it kept (the kept tree)."""
        self._close()
        if forget:
            shutil.rmtree(self.workspace_state, ignore_errors=True)

    def _close(self) -> None:
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


def _first_floor_row(bench: Workbench) -> None:
    bench.show_container("Floor")
    # A container's only view has no header of its own: its row is the side bar's.
    item = bench.page.locator(".part.sidebar .monaco-list-row", has_text="The one item")
    item.first.wait_for(timeout=_WAIT_MS)


def _first_file_row(bench: Workbench) -> None:
    # The Explorer is what a window opened on a folder shows, unless the workspace state kept
    # another container from the last window (-kept): then Ctrl+Shift+E shows it (a click on
    # its icon could hide a side bar the state restored empty).
    if not bench.page.locator(".explorer-folders-view").first.is_visible():
        bench.page.keyboard.press("Control+Shift+E")
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
    """Every side's windows and timings (warm-up included) for one benchmark."""

    def __init__(self, windows: _Windows, env: dict[str, str], mode: _Mode) -> None:
        self.windows, self.env, self.mode = windows, env, mode
        self.timings: dict[str, dict[int, int]] = {"remem": {}, "baseline": {}, "explorer": {}}

    def contenders(self) -> Contenders:
        return Contenders(
            remem=lambda i: self._timed("remem", i, _first_session_row),
            baseline=lambda i: self._timed("baseline", i, _first_floor_row),
            others={"explorer": lambda i: self._timed("explorer", i, _first_file_row)},
        )

    def _timed(self, side: str, iteration: int, wait: Callable[[Workbench], None]) -> Call:
        bench = self._window()

        def call() -> None:
            start = time.perf_counter_ns()
            wait(bench)
            self.timings[side][iteration] = time.perf_counter_ns() - start

        return call

    def _window(self) -> Workbench:
        self.windows.close(forget=not self.mode.kept)
        if self.mode.cold:
            stop_daemon(Home(Path(self.env["REMEM_HOME"])))  # no window's server keeps it busy now
        else:
            command = [remem_executable(), "daemon", "start"]
            subprocess.run(command, env=self.env, check=True, capture_output=True)
        return self.windows.open()


@dataclass(frozen=True)
class _Mode:
    allowance_ns: int  # how far over the floor remem's p50 may be
    cold: bool = False  # no daemon runs when the window opens
    kept: bool = False  # the window finds the tree the last one kept


@contextmanager
def _first_tree(name: str, mode: _Mode) -> Iterator[Contenders]:
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
                bench = _FirstTree(
                    _Windows(context, server, project, scratch, Path(folder, "user-data")), env, mode
                )
                yield bench.contenders()
        finally:
            stop_daemon(home)
    print(_verdict_table(name, bench.timings, mode.allowance_ns), end="\n\n", flush=True)


@contextmanager
def _editor(tools: Tools, folder: Path, scratch: Path, env: dict[str, str]) -> Iterator[CodeServer]:
    extensions = folder / "extensions"
    install_extension(tools.editor, build_vsix(), extensions, scratch)
    install_extension(tools.editor, _floor_vsix(folder), extensions, scratch)
    settings = workbench_settings(remem_executable())
    with CodeServer(tools.editor, extensions, folder / "user-data", scratch, env, settings) as server:
        yield server


def _floor_vsix(folder: Path) -> Path:
    """The floor extension, packaged by the same `vsce` as remem's, into this run's folder."""
    out = folder / "floor.vsix"
    command = [str(_VSCE), "package", "--no-dependencies", "--skip-license", "--allow-missing-repository"]
    subprocess.run([*command, "--out", str(out)], cwd=_FLOOR_EXTENSION, check=True, capture_output=True)
    return out


def _verdict_table(name: str, timings: dict[str, dict[int, int]], allowance_ns: int) -> str:
    """Each side's p50 (warm-up left out); remem's difference from the floor judged against its
    allowance; the Explorer's p50 beside them."""
    runs = len(timings["remem"])
    warmup = _warmup_of(_BUDGET, runs)
    remem, floor, explorer = (_warm_p50(timings[side], warmup) for side in ("remem", "baseline", "explorer"))
    table = _p50_table(name, remem, floor, allowance_ns, remem - floor)
    explorer_row = f"Explorer's first row: p50 {explorer / 1e6:.0f} ms"
    return f"{name}, {runs - warmup} window(s) per side ({explorer_row}):\n{table}"


# Fifteen windows a side: one window's time spreads by a few hundred milliseconds, so with five
# the p50s of two runs of the same code differed by more than the 0.2 s allowance (+69 and
# +400 ms for the kept tree).
_BUDGET = _Starts(iterations=15, warmup=1)
_WHAT = (
    "from the workbench ready (activity bar rendered) in a new code-server window on a seeded "
    "workspace, show the Remem container and wait for the first Session Branches row; baseline: "
    "the same for a no-op extension's tree of one item (the floor); other: the Explorer's first "
    "file row (the verdict, remem's p50 over the floor's, prints in its own table before this one)"
)

BENCHMARKS = [
    Benchmark(
        name="editor.first-tree",
        note=f"{_WHAT}; the daemon is already running, no tree is kept (target: floor + 0.5 s)",
        target=None,
        budget=_BUDGET,
        setup=lambda: _first_tree("editor.first-tree", _Mode(allowance_ns=500_000_000)),
    ),
    Benchmark(
        name="editor.first-tree-kept",
        note=f"{_WHAT}; the daemon is running and the last window's tree is kept (target: floor + 0.2 s)",
        target=None,
        budget=_BUDGET,
        setup=lambda: _first_tree("editor.first-tree-kept", _Mode(allowance_ns=200_000_000, kept=True)),
    ),
    Benchmark(
        name="editor.first-tree-cold",
        note=f"{_WHAT}; no daemon runs, so the language server starts it (target: floor + 1.5 s)",
        target=None,
        budget=_BUDGET,
        setup=lambda: _first_tree("editor.first-tree-cold", _Mode(allowance_ns=1_500_000_000, cold=True)),
    ),
]
