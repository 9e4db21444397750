"""Agent updates: what an MCP agent loads, and its observation-bound writes with their audit trail.

The service here is synchronous and knows nothing of JSON-RPC or the event loop: the daemon's
`server/agent_methods.py` adapts it, and any process that composes the daemon's handlers (the
daemon, `--no-daemon`, the MCP server in-process) runs the same protocol under the same locks.
"""
