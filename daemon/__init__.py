"""remem's domain and daemon: memory store, sessions, forks, consolidation, the CLI."""

__version__ = "0.1.0"
