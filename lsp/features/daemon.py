"""The daemon, as the editor sees it: the link opened once the editor is ready and closed at
shutdown, its state sent as `remem/status`, a daemon that cannot be used said once as a warning,
so is a daemon that misses a harness folder of the editor's environment (once per connection),
and the daemon's news passed on (`remem/memoryChanged`, `remem/treeChanged` — also when a
consolidation finished anywhere —, `remem/sessionsProgress`) with the lenses it may have
changed asked for again. A daemon usable again (rejoined after a stop, replaced after a crash,
or found after a degraded spell) is news of both kinds: the editor's views re-read what they
showed, a refusal included.
"""

from __future__ import annotations

from lsprotocol import types

from .. import ids
from ..daemon_link import ELSEWHERE, FAILED, RECONNECTED, STATUS
from ..server import RememServer


def register(server: RememServer) -> None:
    @server.feature(types.INITIALIZED)
    async def initialized(ls: RememServer, params: types.InitializedParams) -> None:
        ls.link.open()

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: RememServer, params: None) -> None:
        for stop in ls.on_shutdown:
            stop()
        await ls.link.close()

    link, editor = server.link, server.protocol
    link.on(STATUS, lambda status: editor.notify(ids.STATUS, status))
    link.on(FAILED, lambda failure: _warn(server, failure["message"]))
    link.on(ELSEWHERE, lambda said: _warn(server, said["message"]))
    link.on("memory/changed", lambda news: editor.notify(ids.MEMORY_CHANGED, news))
    link.on("sessions/changed", lambda news: editor.notify(ids.TREE_CHANGED, news))
    # A run that ended anywhere changes its session's review badge and adds a receipt to the
    # Memory view's recent ones, though a failed or cancelled run changes no memory.
    link.on("consolidation/finished", lambda news: editor.notify(ids.TREE_CHANGED, news))
    link.on("consolidation/finished", lambda news: editor.notify(ids.MEMORY_CHANGED, news))
    link.on("sessions/progress", lambda news: editor.notify(ids.SESSIONS_PROGRESS, news))
    link.on(RECONNECTED, lambda _: editor.notify(ids.MEMORY_CHANGED, {}))
    link.on(RECONNECTED, lambda _: editor.notify(ids.TREE_CHANGED, {}))
    # Lenses are pulled: a record's provenance and a transcript's forkable turns may have changed
    # with this news, and only the client can ask again.
    for method in ("memory/changed", "sessions/changed", RECONNECTED):
        link.on(method, lambda _: server.refresh_lenses())


def _warn(server: RememServer, message: str) -> None:
    warning = types.ShowMessageParams(type=types.MessageType.Warning, message=f"remem: {message}")
    server.window_show_message(warning)
