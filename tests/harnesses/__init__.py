"""The real Claude Code and Codex CLIs run against scripted local model servers, for session tests."""
