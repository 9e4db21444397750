"""The attack on remem, kept in the suite (marked slow, run by `.ci/run`), each part time-bounded.

- `test_hand_edit_race`: an editor saving by hand against CAS commits (`REMEM_RACE_SECONDS`).
- `test_cross_scope_settle`: a review killed between its Global and workspace commits, read
  through every reader; the settle killed at each of its fault points.
- `test_kill_loop`: kill -9 at random moments and at the fault points over CLI commits and forks
  (`REMEM_KILL_SECONDS`): 0 lost updates or forks, parents unchanged.
- `test_hostile_clients`: garbage, nesting bombs, oversized and half-open frames, all at once,
  while a good client is answered.
- `test_hostile_files`: the attack's hostile logs and memory files (`hostile.py`, also fed to
  the `daemon.hostile-rss` benchmark) and corrupt state, each refused alone.
"""
