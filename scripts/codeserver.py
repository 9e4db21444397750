"""code-server with the remem extension installed, isolated from the user's own editor state.

The one place that launches the editor: the demo (`python -m scripts.codeserver serve`), the
end-to-end tests (tests/e2e) and the editor benchmark (tests/benchmarks/editor.py) all use it.
`Toolchain` finds Node 24 and code-server (tests/e2e/install.sh installs them; scripts/setup
runs it) and says exactly what is missing. `CodeServer` runs one code-server process group on
127.0.0.1 with its own user data, extensions, XDG folders and temp dir; the environment it is
given reaches the extension host, so the language server and the daemon it starts use that
environment's REMEM_HOME and model keys.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths

REPO = Path(__file__).resolve().parents[1]
EXTENSION_SRC = REPO / "vscode-extension"
VSIX = EXTENSION_SRC / "remem.vsix"
E2E_DIR_ENV = "REMEM_E2E_DIR"
STARTUP_TIMEOUT_S = 30.0  # a bound on code-server answering /healthz; never a speed assertion
DAEMON_STOP_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Toolchain:
    node24_bin: Path
    code_server: Path

    @classmethod
    def find(cls) -> tuple[Toolchain | None, list[str]]:
        """The installed toolchain, or None and what is missing (with where it belongs)."""
        e2e_dir = Path(os.environ.get(E2E_DIR_ENV) or _user_cache() / "remem" / "e2e")
        missing: list[str] = []
        node24 = sorted((e2e_dir / "node24/node_modules/node/node_modules").glob("node-*/bin"))
        if not node24:
            missing.append(f"Node 24 (npm package node@24) under {e2e_dir / 'node24'}")
        code_server = e2e_dir / "cs/node_modules/.bin/code-server"
        if not code_server.exists():
            missing.append(f"code-server 4.139.1 under {e2e_dir / 'cs'}")
        if not (EXTENSION_SRC / "node_modules").is_dir():
            missing.append("the extension's npm packages (vscode-extension/node_modules)")
        if missing:
            return None, missing
        return cls(node24[0], code_server), []

    def env(self) -> dict[str, str]:
        """What code-server itself needs in its environment: Node 24 first on PATH."""
        return {"PATH": f"{self.node24_bin}{os.pathsep}{os.environ.get('PATH', '')}"}


def _user_cache() -> Path:
    # Where tests/e2e/install.sh puts the toolchain by default: shared by every clone.
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")


def build_vsix() -> Path:
    """The packaged extension, rebuilt when any of its sources is newer than the package."""
    sources = [EXTENSION_SRC / "package.json", EXTENSION_SRC / "esbuild.mjs", *EXTENSION_SRC.glob("src/*.ts")]
    newest = max(p.stat().st_mtime for p in sources)
    if not VSIX.exists() or VSIX.stat().st_mtime < newest:
        subprocess.run(
            ["npm", "run", "package"], cwd=EXTENSION_SRC, check=True, capture_output=True, text=True
        )
    return VSIX


def install_extension(toolchain: Toolchain, vsix: Path, extensions_dir: Path, scratch: Path) -> None:
    """`code-server --install-extension` into `extensions_dir` (what a user's install does)."""
    env = {**os.environ, **toolchain.env(), **_isolation(scratch)}
    subprocess.run(
        [
            str(toolchain.code_server),
            "--extensions-dir",
            str(extensions_dir),
            "--install-extension",
            str(vsix),
            "--force",  # the demo reinstalls over its previous run's copy
        ],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )


def _isolation(scratch: Path) -> dict[str, str]:
    """Keeps code-server out of ~/.config, ~/.local/share and the shared /tmp."""
    folders = {
        "XDG_CONFIG_HOME": scratch / "config",
        "XDG_DATA_HOME": scratch / "data",
        "TMPDIR": scratch / "tmp",
    }
    for folder in folders.values():
        folder.mkdir(parents=True, exist_ok=True)
    return {name: str(path) for name, path in folders.items()}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class CodeServer:
    """One code-server process group on 127.0.0.1; `stop()` ends all of it (extension hosts, servers).

    Without a `password` anyone who can reach the port gets the editor (and its terminal), so
    only short-lived test runs go without one.
    """

    def __init__(
        self,
        toolchain: Toolchain,
        extensions_dir: Path,
        user_data: Path,
        scratch: Path,
        env: dict[str, str],
        settings: dict[str, Any],
        *,
        port: int | None = None,
        password: str | None = None,
    ) -> None:
        self.port = port or free_port()
        self.log_path = user_data.parent / "code-server.log"
        # code-server windows are remote: machine-scoped settings such as remem.command are read
        # from the Machine settings, the rest from the User settings.
        for scope in ("User", "Machine"):
            (user_data / scope).mkdir(parents=True, exist_ok=True)
            (user_data / scope / "settings.json").write_text(json.dumps(settings, indent=2))
        command = [
            str(toolchain.code_server),
            "--auth",
            "none" if password is None else "password",
            "--bind-addr",
            f"127.0.0.1:{self.port}",
            "--disable-telemetry",
            "--disable-update-check",
            "--disable-workspace-trust",
            "--extensions-dir",
            str(extensions_dir),
            "--user-data-dir",
            str(user_data),
        ]
        full_env = {**env, **toolchain.env(), **_isolation(scratch)}
        if password is not None:
            full_env["PASSWORD"] = password  # code-server removes it from its children's environment
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                command, env=full_env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        try:
            self._wait_healthy()
        except BaseException:  # including Ctrl-C while it starts: never leave it running
            self.stop()
            raise

    def __enter__(self) -> CodeServer:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def folder_url(self, folder: Path) -> str:
        """The address that opens `folder` in a new window."""
        return f"{self.url}/?folder={urllib.parse.quote(str(folder))}"

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"code-server exited with {self.process.returncode}; see {self.log_path}")
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=1):
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"code-server did not answer on {self.url}; see {self.log_path}")

    def stop(self) -> None:
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
            except ProcessLookupError:
                pass
        # The extension hosts and language servers are in the same group; make sure none survives.
        with suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)


def remem_executable() -> str:
    """The console script of the running interpreter (the checkout's `.venv/bin/remem`)."""
    found = shutil.which("remem", path=str(Path(sys.executable).parent))
    if found is None:
        raise RuntimeError(f"no remem console script beside {sys.executable}; run scripts/setup")
    return found


def workbench_settings(remem: str) -> dict[str, Any]:
    """`remem.command`, and a quiet workbench: no welcome page, tips, trust prompt, git or AI panels."""
    return {
        "remem.command": remem,
        "workbench.startupEditor": "none",
        "workbench.tips.enabled": False,
        "workbench.enableExperiments": False,
        "workbench.secondarySideBar.defaultVisibility": "hidden",
        "security.workspace.trust.enabled": False,
        "telemetry.telemetryLevel": "off",
        "extensions.autoCheckUpdates": False,
        "extensions.autoUpdate": False,
        "update.mode": "none",
        "git.enabled": False,
        "chat.disableAIFeatures": True,
        "editor.codeLens": True,
        "files.autoSave": "off",
    }


def editor_env(base: dict[str, str]) -> dict[str, str]:
    """`base` without the tests' in-process switch: the editor's language server starts the daemon."""
    return {name: value for name, value in base.items() if name != NO_DAEMON_ENV}


@contextmanager
def short_scratch() -> Iterator[Path]:
    """A short private temp folder: the daemon's socket lives under TMPDIR and AF_UNIX paths are short."""
    path = Path(tempfile.mkdtemp(prefix="rme2e-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def stop_daemon(home: Home) -> None:
    """End the daemon of `home` if one runs: the daemon a language server started outlives the editor."""
    paths = DaemonPaths(home)
    info = paths.read_status()
    if info is None or not paths.running():
        return
    try:
        os.kill(info.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + DAEMON_STOP_TIMEOUT_S
    while paths.running() and time.monotonic() < deadline:
        time.sleep(0.05)
    if paths.running():
        with suppress(ProcessLookupError):
            os.kill(info.pid, signal.SIGKILL)


# -- the demo's editor --


def _serve(folder: Path, state: Path, port: int | None) -> int:
    """Install the extension, start code-server on `folder`, print its address, run until a signal."""
    toolchain, missing = Toolchain.find()
    if toolchain is None:
        print(
            "Cannot start the editor; missing: " + "; ".join(missing) + ".\n"
            "bash scripts/setup installs them (as root it also installs the apt packages it needs); "
            "bash scripts/demo --no-editor skips the editor.",
            file=sys.stderr,
        )
        return 1
    stop_requested = _stop_on_signals()
    with short_scratch() as scratch:
        try:
            install_extension(toolchain, build_vsix(), state / "extensions", scratch)
        except (OSError, subprocess.CalledProcessError) as exc:
            if stop_requested():
                return 130  # Ctrl-C reached the build or the install too
            print(_failure(exc), file=sys.stderr)
            return 1
        try:
            status = _run(toolchain, folder, state, scratch, port, stop_requested)
        finally:
            stop_daemon(Home.resolve())  # the one the editor's language server started
    print("Stopped code-server, the language server and the daemon.")
    return status


def _run(
    toolchain: Toolchain,
    folder: Path,
    state: Path,
    scratch: Path,
    port: int | None,
    stop_requested: Callable[[], bool],
) -> int:
    password = secrets.token_urlsafe(12)
    settings = workbench_settings(remem_executable())
    env = editor_env(dict(os.environ))
    with CodeServer(
        toolchain,
        state / "extensions",
        state / "user-data",
        scratch,
        env,
        settings,
        port=port,
        password=password,
    ) as server:
        print(f"\nremem in VS Code (code-server): {server.folder_url(folder)}")
        print(f"password: {password}")
        print("Open the address in a browser and click Remem in the activity bar.")
        print("Ctrl-C stops code-server, the language server and the daemon.", flush=True)
        while not stop_requested() and server.process.poll() is None:
            time.sleep(0.2)
        if not stop_requested():
            print(f"code-server exited on its own; see {server.log_path}", file=sys.stderr)
            return 1
    return 0


def _failure(exc: OSError | subprocess.CalledProcessError) -> str:
    """What a failed build or install says: the tool's own output, and where help is."""
    if isinstance(exc, subprocess.CalledProcessError):
        detail = f"{' '.join(map(str, exc.cmd))} failed:\n{exc.stdout or ''}{exc.stderr or ''}"
    else:
        detail = str(exc)
    return f"{detail}\nbash scripts/setup installs what the extension needs (Node 20 or newer and npm)."


def _stop_on_signals() -> Callable[[], bool]:
    """Ctrl-C, SIGTERM and a closed terminal all ask for the same orderly stop."""
    received: list[int] = []

    def note(signum: int, _frame: FrameType | None) -> None:
        received.append(signum)

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, note)
    return lambda: bool(received)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.codeserver", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("package", help="build the extension's .vsix (if a source changed); print its path")
    serve = commands.add_parser("serve", help="code-server with the extension on FOLDER until Ctrl-C")
    serve.add_argument("--folder", type=Path, required=True, help="the workspace folder to open")
    serve.add_argument("--state", type=Path, required=True, help="where the editor keeps its user data")
    serve.add_argument("--port", type=int, help="the port on 127.0.0.1 (default: a free one)")
    args = parser.parse_args(argv)
    if args.command == "package":
        try:
            print(build_vsix())
        except (OSError, subprocess.CalledProcessError) as exc:
            print(_failure(exc), file=sys.stderr)
            return 1
        return 0
    return _serve(args.folder.resolve(), args.state.resolve(), args.port)


if __name__ == "__main__":
    sys.exit(main())
