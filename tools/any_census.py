"""Count `Any` in nanorec/ and converters/, by what it stands for (issue #35: `Any` only
where a value is truly untyped, msgpack payloads and JSON, not for options or reports).

Why a script: `grep -c` counts docstrings and comments and says nothing of *why* each `Any`
is there. This reads the tokens (code only) and sorts each use by its line, first match
wins: imports, the named untyped aliases (`nanorec.untyped`), numpy's generic parameters,
options/requests/hooks/reports/callbacks (what the issue wants typed), payloads/JSON (what
may stay), buffers (bytes, mmap: typable), third-party objects (click, typer, pyarrow...),
and the rest. A heuristic, stable enough to compare before and after.

    python tools/any_census.py              # the table
    python tools/any_census.py --list hooks # the lines of one category
"""

from __future__ import annotations

import argparse
import io
import re
import sys
import tokenize
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("nanorec", "converters")

#: (category, pattern searched in the line), in order; the first match names the use.
RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("aliases", re.compile(r"^\w+: TypeAlias = .*\bAny\b")),
    ("numpy", re.compile(r"NDArray\[|ndarray\[|dtype\[|np\.generic|ArrayLike")),
    (
        "hooks",
        re.compile(
            r"option|request|report|hook|extra|progress|callback|Callable|VerbCall|\*\*\w+: Any"
            r"|kwargs|factory|pace|selection",
            re.IGNORECASE,
        ),
    ),
    (
        "payloads",
        re.compile(
            r"json|summary|payload|meta|msgpack|message|value|row|record|document|details"
            r"|entry|entries|fields|decode|encode|frame|item|dict\[str, Any\]|Mapping\[str, Any\]"
            r"|list\[Any\]|tuple\[Any",
            re.IGNORECASE,
        ),
    ),
    ("buffers", re.compile(r"\bbuf\b|\bdata\b|mmap|buffer|view|\braw\b|bytes", re.IGNORECASE)),
    (
        "third-party",
        re.compile(
            r"ctx|command|param|formatter|click|typer|pyarrow|arrow|dask|module|figure|axes"
            r"|plt|matplotlib|polars|duckdb|lz4|zstd|protobuf|proto",
            re.IGNORECASE,
        ),
    ),
)
#: What each category means in the table.
MEANING = {
    "imports": "`from typing import Any`",
    "aliases": "named untyped aliases (nanorec.untyped, cli._click)",
    "numpy": "numpy generics (NDArray[Any], dtype[Any], shape parameters)",
    "hooks": "options, requests, hooks, reports, callbacks (to type)",
    "payloads": "msgpack payloads, JSON, decoded values (may stay)",
    "buffers": "bytes-like buffers (bytes | mmap | memoryview: typable)",
    "third-party": "objects of untyped or loosely typed libraries",
    "other": "the rest",
}


def uses(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, line) of every `Any` name in `path`'s code (not docstrings, comments)."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    in_import = False
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        at_start = token.start[1] == 0
        if token.type == tokenize.NAME and token.string in ("import", "from") and at_start:
            in_import = True
        elif token.type == tokenize.NEWLINE:
            in_import = False
        if token.type == tokenize.NAME and token.string == "Any":
            line = lines[token.start[0] - 1]
            yield token.start[0], ("\0import" if in_import else line)


def category(line: str) -> str:
    """The category of a line using `Any` (see `RULES`)."""
    if line == "\0import":
        return "imports"
    for name, pattern in RULES:
        if pattern.search(line):
            return name
    return "other"


Use = tuple[str, str, int, str]  # category, file, line number, line


def census(root: Path = ROOT, folders: tuple[str, ...] = FOLDERS) -> list[Use]:
    """(category, file, line number, line) for every `Any` in the folders' code."""
    found: list[Use] = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            rel = str(path.relative_to(root))
            for number, line in uses(path):
                found.append((category(line), rel, number, line.strip()))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", metavar="CATEGORY", help="print the lines of one category")
    parser.add_argument("--root", type=Path, default=ROOT)
    args = parser.parse_args(argv)
    found = census(args.root)
    if args.list:
        for name, rel, number, line in found:
            if name == args.list:
                print(f"{rel}:{number}: {line}")
        return 0
    counts = Counter(name for name, *_ in found)
    files = Counter(rel.split("/")[0] for _, rel, *_ in found)
    print(f"`Any` in code: {len(found)} ({', '.join(f'{k}/: {v}' for k, v in files.items())})")
    for name in MEANING:
        print(f"  {counts.get(name, 0):5d}  {name:12s} {MEANING[name]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
