"""Helpers of the demo that the tests and benchmarks share (run from the repository root)."""
