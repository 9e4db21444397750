"""The billion-laughs YAML document: a few hundred bytes whose value, expanded, is 9^9 strings."""

from __future__ import annotations

BILLION_LAUGHS = """\
a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
"""
FIRST_ALIAS_LINE = 2  # 1-based: the `b:` line
FIRST_ALIAS_COLUMN = 7  # 0-based: its first `*a`
# Far more than any honest error about the document, far less than its expansion.
ERROR_BYTES_MAX = 4096
