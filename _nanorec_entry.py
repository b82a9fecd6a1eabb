"""The `nanorec` console script's entry point: Ctrl-C ends a command quietly (status 130)
from the script's first instruction on, start-up included.

A console script imports its function's module before calling it, and `nanorec.cli` takes
a few hundred milliseconds to import (the `nanorec` package, numpy, msgpack, typer): a
Ctrl-C then printed a KeyboardInterrupt traceback from inside some import. This module sits
outside the `nanorec` package, so importing it runs nothing else, and its first statement
after the imports makes SIGINT end the process at once with status 130 until
`nanorec.cli.main` is in the block that handles Ctrl-C itself (removing partial files on the
way out). Until then nothing has been written, so there is nothing to clean: `os._exit`,
not a raised SystemExit, which Python prints as a traceback ("Exception ignored in ...")
when the signal lands inside a finaliser or a weakref callback of some import. It is
imported only by the script: importing it elsewhere would change that process's Ctrl-C.
"""

import os
import signal


def _interrupted(signum: int, frame: object) -> None:
    os._exit(128 + signum)


signal.signal(signal.SIGINT, _interrupted)


def main() -> object:
    """Run the `nanorec` command (`nanorec.cli.main`)."""
    from nanorec.cli import main as command

    return command()
