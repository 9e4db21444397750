"""`python -m remem.daemon` and the `remem` script run the command line."""

import sys


def run() -> None:
    """The `remem` command: `main`, or one line and exit 130 on a Ctrl-C while it loads."""
    try:
        from .cli import main
    except KeyboardInterrupt:  # Ctrl-C while the command line loads, before `main` can say it
        try:
            sys.stderr.write("remem: interrupted\n")
            sys.stderr.flush()
        except (AttributeError, OSError):  # no stderr (`2>&-`), or one that cannot be written
            pass
        sys.exit(130)  # as `main` exits on a Ctrl-C (output.EXIT_INTERRUPTED), not yet importable
    main()


if __name__ == "__main__":
    run()
