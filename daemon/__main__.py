"""`python -m remem.daemon` runs the `remem` command line."""

from .cli import main

main()
