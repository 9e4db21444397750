"""The language server's features: each module registers the LSP methods it serves."""
