"""Write one benchmark's section into bench/RESULTS.md, between its start/end markers
(appended when the markers are not there yet), leaving the other sections as they are."""

from __future__ import annotations

from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def write_section(start: str, end: str, text: str) -> None:
    """`text` must begin with `start` and finish with `end`."""
    old = RESULTS.read_text() if RESULTS.exists() else "# Benchmarks\n"
    if start in old and end in old:
        before, rest = old.split(start, 1)
        new = before + text + rest.split(end, 1)[1]
    else:
        new = old.rstrip("\n") + "\n\n" + text + "\n"
    RESULTS.write_text(new)
