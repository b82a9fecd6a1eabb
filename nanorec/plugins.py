"""The entry points of one group, read from the installed distributions' `entry_points.txt`
without `importlib.metadata` (issue 33 item 4).

`importlib.metadata` imports `email`, `csv`, `zipfile`... and builds an object per installed
distribution: ~50-100 ms CPU with a dev environment's ~130 distributions, more than `import
typer` itself, paid by `nanorec --help` (which lists the formats) and by every verb on a
file. This reads the same files the standard path finder reads (`*.dist-info` and
`*.egg-info` folders of each `sys.path` folder, the first distribution of a name winning, as
`importlib.metadata.entry_points` does), parses only the lines of the group asked for, and
imports an entry point's module only when it is loaded. Where distributions can come from
elsewhere (a zip on `sys.path`, a meta-path finder of its own), it asks `importlib.metadata`.
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import sys
from dataclasses import dataclass
from importlib.machinery import PathFinder

_SUFFIXES = (".dist-info", ".egg-info")


@dataclass(frozen=True)
class EntryPoint:
    """One `name = module:attr` line of a group (as `importlib.metadata.EntryPoint`)."""

    name: str
    value: str
    group: str

    def load(self) -> object:
        """The object named by `value`, its module imported now."""
        module, _, attrs = self.value.partition("[")[0].strip().partition(":")
        found: object = importlib.import_module(module.strip())
        for attr in filter(None, attrs.strip().split(".")):
            found = getattr(found, attr)
        return found


def entry_points(group: str) -> list[EntryPoint]:
    """The entry points of `group`, in `sys.path` order (a name's first distribution only)."""
    if not _plain_paths():
        from importlib.metadata import entry_points as standard

        return [EntryPoint(p.name, p.value, group) for p in standard(group=group)]
    return [point for text in _texts(tuple(sys.path)) for point in _parse(text, group)]


def _plain_paths() -> bool:
    """Whether every distribution is in a folder on `sys.path` (what `_texts` reads)."""
    finders = [f for f in sys.meta_path if hasattr(f, "find_distributions")]
    return all(f is PathFinder for f in finders) and all(
        not entry or os.path.isdir(entry) or not os.path.exists(entry) for entry in sys.path
    )


@functools.cache
def _texts(path: tuple[str, ...]) -> tuple[str, ...]:
    """The text of each distribution's `entry_points.txt` in the folders of `path` (read
    once for each `sys.path`: a test or a plug-in may add a folder)."""
    seen: set[str] = set()
    texts = []
    for entry in path:
        try:
            names = sorted(os.listdir(entry or "."))  # a stable order
        except OSError:
            continue
        for name in names:
            stem, ext = os.path.splitext(name)
            if ext.lower() not in _SUFFIXES:
                continue
            normal = re.sub(r"[-_.]+", "_", stem.partition("-")[0]).lower()
            if normal in seen:
                continue
            seen.add(normal)
            try:
                with open(os.path.join(entry or ".", name, "entry_points.txt")) as text:
                    texts.append(text.read())
            except OSError:  # no entry points, or an egg-info file
                continue
    return tuple(texts)


def _parse(text: str, group: str) -> list[EntryPoint]:
    """The entry points of `group` in one `entry_points.txt` (an ini file)."""
    header = f"[{group}]"
    if header not in text:
        return []
    found = []
    inside = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            inside = line == header
        elif inside and "=" in line:
            name, _, value = line.partition("=")
            found.append(EntryPoint(name.strip(), value.strip(), group))
    return found
