"""Forks: branch a session from a completed turn into a new child log, exactly once per operation."""
