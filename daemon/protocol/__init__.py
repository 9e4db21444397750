"""The wire contract between the daemon and its clients, a leaf: it imports only pydantic.

`rpc` is the daemon's JSON-RPC surface (methods, notifications, error codes, `DaemonInfo`);
`memory`, `sessions`, `forks` and `consolidation` hold the wire types the domain packages
produce and consume, so a client reads the contract without loading the code behind it; `api`
is `DaemonApi`, the one typed client of those methods, over whichever transport carries them.
"""
