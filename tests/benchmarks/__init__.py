"""Benchmarks of remem against physical-limit baselines; run with `python -m tests.benchmarks`.

Not part of the pytest suite: no module here is named like a test, and timings are reported,
never asserted.
"""
