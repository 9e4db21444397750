"""remem's language server: a thin pygls layer over the daemon's validators and RPC."""
