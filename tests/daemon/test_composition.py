"""The one composition of the daemon's handlers.

Every host (the daemon, a command run without it, the MCP server in-process) composes the same
handlers for every domain method; what differs is what the host gives them.
"""

from __future__ import annotations

import pytest

from remem.daemon.home import Home
from remem.daemon.protocol import rpc
from remem.daemon.server.composition import Host, Services

DOMAIN_METHODS = {name for name in rpc.METHODS if not name.startswith("daemon/")}


@pytest.mark.parametrize("host", [Host(), Host(watch=False), Host(watch=True)], ids=["files", "stat", "feed"])
def test_every_host_is_served_every_domain_method(home: Home, host: Host) -> None:
    services = Services(home, host)
    try:
        assert set(services.handlers()) == DOMAIN_METHODS
    finally:
        services.close()
