"""Readers of the harness formats other than DSH: Claude Code transcripts and Codex rollouts.

Each reader is a pure function over one file's bytes (`claude_code.read_transcript`,
`codex.read_rollout`) returning a frozen summary in the shared vocabulary of `model`: turns
with line addresses, branches, lineage edges and per-file problems. Nothing here finds or opens
a file (`jsonl.read_bounded` reads one its caller opened); finding files, caching and the tree
are the catalog's.
"""
