"""Playwright driving the real VS Code of scripts/codeserver.py (code-server with the extension).

`find_tools` finds everything a scenario needs — code-server and Node 24 (`Toolchain`), Debian's
Chromium and the Python package playwright — and says exactly what is missing. `open_browser`
starts headless Chromium; `open_workbench` opens a folder in a new code-server window.
`Workbench` wraps the page with the few gestures the scenarios and the editor benchmark use,
each waiting for what a person would wait for — no fixed sleeps.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scripts.codeserver import CodeServer, Toolchain

CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
UI_TIMEOUT_MS = 30_000  # a bound for each wait on the workbench; never a speed assertion


@dataclass(frozen=True)
class Tools:
    """The editor's toolchain and the browser that drives it."""

    editor: Toolchain
    chromium: Path


def find_tools() -> tuple[Tools | None, list[str]]:
    """Everything the end-to-end tests need, or None and what is missing (with how to install it)."""
    editor, missing = Toolchain.find()
    chromium = shutil.which("chromium")
    if chromium is None:
        missing.append("Debian's chromium (/usr/bin/chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("the Python package playwright (pip install -e '.[dev]')")
    if missing or editor is None or chromium is None:
        return None, missing
    return Tools(editor, Path(chromium)), []


def unavailable_reason(missing: list[str]) -> str:
    return "the end-to-end toolchain is not installed (bash scripts/setup installs it): " + "; ".join(missing)


@contextmanager
def open_browser(tools: Tools, profile: Path) -> Iterator[Any]:
    """Headless Debian Chromium (never a downloaded browser) with a fresh profile; yields its context."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=str(tools.chromium),
            headless=True,
            viewport={"width": 1400, "height": 900},
            args=CHROMIUM_FLAGS,
        )
        try:
            yield context
        finally:
            context.close()


def open_workbench(context: Any, server: CodeServer, folder: Path, artifacts: Path) -> Workbench:
    """A new window of `server` on `folder`, once the workbench has rendered."""
    bench = Workbench(context.new_page(), artifacts, server)
    bench.open_folder(folder)
    return bench


class Workbench:
    """The code-server page, with the gestures the scenarios use."""

    def __init__(self, page: Any, artifacts: Path, server: CodeServer) -> None:
        self.page = page
        self.artifacts = artifacts
        self.server = server
        self._shots = 0

    def open_folder(self, folder: Path) -> None:
        """Load `folder` in this window (as a reload does, when it is the same folder)."""
        self.page.goto(self.server.folder_url(folder))
        self.wait_ready()

    def reload_window(self) -> None:
        """ "Developer: Reload Window": unlike loading the page again, the workbench shuts down as it
        does when a person reloads, so state kept for the next window (workspace state) is saved."""
        with self.page.expect_navigation(timeout=UI_TIMEOUT_MS):
            self.run_command("Developer: Reload Window")
        self.wait_ready()

    # -- waiting and looking --

    def wait_ready(self) -> None:
        self.page.wait_for_selector(".monaco-workbench .part.activitybar", timeout=UI_TIMEOUT_MS)

    def widen_sidebar(self, pixels: int = 260) -> None:
        """Drag the side bar's edge so tree descriptions (badges) show in full on screenshots."""
        box = self.page.locator(".part.sidebar").bounding_box()
        if box is None:
            return
        edge_x, middle_y = box["x"] + box["width"], box["y"] + box["height"] / 2
        self.page.mouse.move(edge_x, middle_y)
        self.page.mouse.down()
        self.page.mouse.move(edge_x + pixels, middle_y, steps=5)
        self.page.mouse.up()

    def screenshot(self, name: str) -> Path:
        self._shots += 1
        self.page.mouse.move(700, 450)  # no hover tooltip left over from the last click
        self.page.wait_for_timeout(300)  # let toasts and hovers finish animating before the picture
        path = self.artifacts / f"{self._shots:02d}-{name}.png"
        self.page.screenshot(path=str(path))
        return path

    def notification(self, pattern: str) -> Any:
        """The toast whose text matches `pattern` (a regular expression), once it shows."""
        toast = self.page.locator(".notifications-toasts .notification-toast", has_text=re.compile(pattern))
        toast.first.wait_for(timeout=UI_TIMEOUT_MS)
        return toast.first

    def notification_button(self, pattern: str, button: str) -> None:
        """Click `button` of the notification matching `pattern`: on its toast, held by the mouse over
        it, or in the notification center once the toast has timed out (info toasts do, on a slow machine)."""
        toast = self.page.locator(".notifications-toasts .notification-toast", has_text=re.compile(pattern))
        if toast.count():
            toast.first.hover()  # the mouse over a toast keeps it from timing out
        else:
            self.run_command("Notifications: Show Notifications")
            center = self.page.locator(".notifications-center .notification-list-item")
            toast = center.filter(has_text=re.compile(pattern))
        toast.first.locator(".monaco-button", has_text=button).first.click()

    def status_bar_item(self, pattern: str) -> Any:
        item = self.page.locator(".part.statusbar .statusbar-item", has_text=re.compile(pattern))
        item.first.wait_for(timeout=UI_TIMEOUT_MS)
        return item.first

    # -- views --

    def show_container(self, title: str) -> None:
        """Show the activity bar's view container `title` in the side bar (a click, unless it shows)."""
        link = self.page.locator(f'.part.activitybar .action-item a[aria-label^="{title}"]').first
        link.wait_for(timeout=UI_TIMEOUT_MS)
        if link.get_attribute("aria-expanded") != "true":
            link.click()
        self.page.locator(".part.sidebar").wait_for(timeout=UI_TIMEOUT_MS)

    def open_container(self, title: str) -> None:
        """Show the container `title`, with the side bar widened for screenshots."""
        self.show_container(title)
        self.widen_sidebar()

    def view(self, name: str) -> Any:
        """A view pane of the side bar by its title (e.g. "Session Branches")."""
        header = self.page.locator(".part.sidebar .pane-header", has_text=name).first
        header.wait_for(timeout=UI_TIMEOUT_MS)
        if header.get_attribute("aria-expanded") == "false":
            header.click()
        # `has` is matched inside each pane, so it names the header without the side bar around it.
        return self.page.locator(".part.sidebar .pane", has=self.page.locator(".pane-header", has_text=name))

    def wait_view_description(self, view: str, text: str) -> None:
        """Until the header of `view` reads `text` beside its title ("" for none: a header that
        was never given a description has no element for it)."""
        header = self.page.locator(".part.sidebar .pane-header", has_text=view).first
        self.page.wait_for_function(
            "([header, text]) => (header.querySelector('.description')?.textContent ?? '').trim() === text",
            arg=[header.element_handle(timeout=UI_TIMEOUT_MS), text],
            timeout=UI_TIMEOUT_MS,
        )

    def row(self, view: str, pattern: str) -> Any:
        """The tree row of `view` whose text (label and description) matches `pattern`."""
        rows = self.view(view).locator(".monaco-list-row", has_text=re.compile(pattern))
        rows.first.wait_for(timeout=UI_TIMEOUT_MS)
        return rows.first

    def count_rows(self, view: str, pattern: str) -> int:
        return int(self.view(view).locator(".monaco-list-row", has_text=re.compile(pattern)).count())

    def wait_rows(self, view: str, pattern: str, count: int) -> None:
        """Until `view` shows exactly `count` rows matching `pattern`."""
        # Imported late, as everywhere here, so that find_tools can report playwright missing.
        from playwright.sync_api import expect

        rows = self.view(view).locator(".monaco-list-row", has_text=re.compile(pattern))
        expect(rows).to_have_count(count, timeout=UI_TIMEOUT_MS)

    def rows(self, view: str) -> list[tuple[int, str]]:
        """(depth, text) of every visible row of `view`, top to bottom."""
        found = []
        for row in self.view(view).locator(".monaco-list-row").all():
            found.append((int(row.get_attribute("aria-level") or 0), row.inner_text().replace("\n", " ")))
        return found

    # -- commands and editors --

    def run_command(self, title: str) -> None:
        self.page.keyboard.press("F1")
        box = self.page.locator(".quick-input-widget input")
        box.wait_for(timeout=UI_TIMEOUT_MS)
        box.fill(f">{title}")
        self.page.locator(".quick-input-list .monaco-list-row", has_text=title).first.wait_for(
            timeout=UI_TIMEOUT_MS
        )
        box.press("Enter")

    def quick_pick(self, pattern: str) -> None:
        """Choose the quick-pick row matching `pattern` (the picker must be showing it)."""
        row = self.page.locator(".quick-input-list .monaco-list-row", has_text=re.compile(pattern)).first
        row.wait_for(timeout=UI_TIMEOUT_MS)
        row.click()

    def quick_pick_rows(self, title: str) -> list[str]:
        """The rows of the picker titled `title`, once it replaced the command palette."""
        self.page.locator(".quick-input-widget .quick-input-title", has_text=title).wait_for(
            timeout=UI_TIMEOUT_MS
        )
        rows = self.page.locator(".quick-input-list .monaco-list-row")
        rows.first.wait_for(timeout=UI_TIMEOUT_MS)
        return [r.inner_text().replace("\n", " ") for r in rows.all()]

    def webview(self) -> Any:
        """The page inside the active webview (remem's receipt view), inside VS Code's two frames."""
        return self.page.frame_locator("iframe.webview.ready").frame_locator("iframe#active-frame")

    def editor(self, tab: str) -> Any:
        """The active editor, once its tab named `tab` is there."""
        self.page.locator(".tabs-container .tab", has_text=tab).first.wait_for(timeout=UI_TIMEOUT_MS)
        lines = self.page.locator(".editor-instance .monaco-editor .view-lines").first
        lines.wait_for(timeout=UI_TIMEOUT_MS)
        return lines

    @staticmethod
    def text_of(editor: Any) -> str:
        """An editor's visible text (Monaco renders spaces as no-break spaces)."""
        return str(editor.inner_text()).replace("\xa0", " ")

    def go_to(self, line: int, column: int = 1) -> None:
        """Focus the active editor and put the cursor at `line`:`column` (1-based), via Go to Line."""
        self.page.keyboard.press("Control+1")
        self.page.keyboard.press("Control+G")
        box = self.page.locator(".quick-input-widget input")
        box.wait_for(timeout=UI_TIMEOUT_MS)
        box.fill(f":{line}:{column}")
        box.press("Enter")

    def replace_line(self, line: int, text: str) -> None:
        """Type `text` over line `line` (1-based) of the active editor."""
        self.go_to(line)
        self.page.keyboard.press("Home")
        self.page.keyboard.press("Shift+End")
        self.page.keyboard.type(text)

    def problems(self) -> list[str]:
        """The rows of the Problems panel (opened if needed)."""
        panel = self.page.locator(".markers-panel")
        if not panel.is_visible():
            self.page.keyboard.press("Control+Shift+M")
            panel.wait_for(timeout=UI_TIMEOUT_MS)
        return [r.inner_text().replace("\n", " ") for r in panel.locator(".monaco-list-row").all()]
