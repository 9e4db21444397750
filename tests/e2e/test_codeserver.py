"""scripts/codeserver.py's `CodeServer`: the demo's editor is behind its password; `stop()` ends it all.

Without a password (the tests' short-lived editors) the workbench answers at once; with one (the
demo's), every page redirects to the login until the password is given.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from scripts.codeserver import CodeServer, short_scratch

from .harness import Tools

pytestmark = pytest.mark.e2e


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *_args: object, **_kwargs: object) -> None:
        return None


def answer(url: str, form: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Status, Location and Set-Cookie of one request, redirects not followed."""
    data = urllib.parse.urlencode(form).encode() if form is not None else None
    opener = urllib.request.build_opener(_NoRedirects)
    try:
        with opener.open(url, data=data, timeout=30) as response:
            return response.status, "", response.headers.get("Set-Cookie", "")
    except urllib.error.HTTPError as redirect:
        return redirect.code, redirect.headers.get("Location", ""), redirect.headers.get("Set-Cookie", "")


@pytest.mark.parametrize("password", [None, "a-password-for-this-test"])
def test_the_workbench_is_open_only_without_a_password(
    tools: Tools, tmp_path: Path, password: str | None
) -> None:
    with short_scratch() as scratch:
        server = CodeServer(
            tools.editor, tmp_path / "extensions", tmp_path / "user-data", scratch, dict(os.environ), {},
            password=password,
        )  # fmt: skip
        with server:
            status, location, _ = answer(server.folder_url(tmp_path))
            if password is None:
                assert status == 200
            else:
                assert status == 302 and "login" in location
                wrong = answer(f"{server.url}/login", {"password": "not-it"})
                assert "code-server-session" not in wrong[2]
                status, _, cookie = answer(f"{server.url}/login", {"password": password})
                assert status == 302 and "code-server-session" in cookie
    assert server.process.poll() is not None
    with pytest.raises(ProcessLookupError):
        os.killpg(server.process.pid, 0)  # nothing of its process group is left
