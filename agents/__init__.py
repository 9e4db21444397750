"""remem's MCP server: agents read and write memory through the daemon, bound to what they saw."""
