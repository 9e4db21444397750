"""The per-user daemon: singleton process, JSON-RPC over a Unix socket, one shared protocol."""
