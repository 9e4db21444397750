"""The watchdog a child Python process (a daemon) imports, made other than the one installed:
one whose C library has no inotify (as on macOS or BSD), or a release that renamed an internal
remem reads. Each is a PYTHONPATH for the child; nothing changes in this process."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

import watchdog

from tests.scratch import hooked_pythonpath, process_folder

# watchdog's inotify bindings refuse to load where the C library has no inotify, with this error.
_NO_INOTIFY_HOOK = """
import importlib.abc, sys


class _NoInotify(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "watchdog.observers.inotify_c":
            from watchdog.utils import UnsupportedLibcError

            raise UnsupportedLibcError("Unsupported libc version found: libc without inotify")
        return None


sys.meta_path.insert(0, _NoInotify())
"""
NO_INOTIFY_SAID = "Unsupported libc version found: libc without inotify"


def no_inotify_pythonpath() -> str:
    """A PYTHONPATH under which importing watchdog's inotify fails as where libc has none."""
    return hooked_pythonpath(_NO_INOTIFY_HOOK, "remem-no-inotify-")


def renamed_pythonpath(renames: Mapping[str, str], *modules: str) -> str:
    """A PYTHONPATH whose watchdog is a copy of the installed one with each old name of
    `renames` given its new one throughout `modules` (paths in the package): a release that
    renamed an internal, working (its uses renamed with it)."""
    folder = process_folder("remem-watchdog-renamed-")
    package = folder / "watchdog"
    shutil.copytree(Path(watchdog.__file__).parent, package, ignore=shutil.ignore_patterns("__pycache__"))
    texts = {module: (package / module).read_text() for module in modules}
    for old in renames:
        assert any(old in text for text in texts.values()), f"{old} is in none of watchdog's {modules}"
    for module, text in texts.items():
        for old, new in renames.items():
            text = text.replace(old, new)
        (package / module).write_text(text)
    return os.pathsep.join([str(folder), *filter(None, [os.environ.get("PYTHONPATH")])])
