"""The peak memory of one `nanorec` command, run in a child process (the bounded-memory
tests of #34 items 1 and 3)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

_CHILD = """
import os, sys
from nanorec.cli import main
def peak_kb():  # this program's own peak (VmHWM): getrusage's ru_maxrss keeps, across exec,
    # the peak of the forked copy of a big parent (a test worker grown to 500 MB)
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
sys.argv = ["nanorec", *sys.argv[1:]]
sys.stdout = open(sys.argv.pop(), "w")
try:
    main()
except SystemExit as exit:
    assert exit.code in (0, None, *map(int, os.environ["PEAK_OK"].split())), exit.code
sys.stdout.close()
print(peak_kb(), file=sys.stderr)
"""


def peak_mb(*args: object, out: Path | str = os.devnull, damaged: bool = False) -> float:
    """The peak RSS of `nanorec ARGS` (its standard output written to `out`), in MB;
    `damaged`: the input is, so exit 1 (converted with losses) is success too."""
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, *map(str, args), str(out)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PEAK_OK": "1" if damaged else ""},
    )
    return int(done.stderr.split()[-1]) / 1024
