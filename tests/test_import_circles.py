"""No import circle among nanorec's modules and the converters' (issue #35 item 5).

import-linter's `layers` contracts (pyproject.toml) hold each converter's modules in order,
but only the modules they list. This test draws the whole graph from the source: every
import, at module level or deferred into a function (a deferred import still ties the two
modules together), except those under `if TYPE_CHECKING:` (never run). A circle fails the
test with its modules named.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import REPO


def module_name(path: Path, root: Path) -> str:
    """The installed name of a source file: `converters/` installs as `nanorec.converters`."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[0] == "converters":
        parts.insert(0, "nanorec")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _run_time(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements of `body`, at any depth (functions, classes, branches), but
    not those under `if TYPE_CHECKING:`."""
    for node in body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from _run_time(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                yield from _run_time([child])
            elif isinstance(child, ast.excepthandler):
                yield from _run_time(child.body)


def imports_of(path: Path, name: str, known: set[str]) -> set[str]:
    """The modules of `known` that module `name` (file `path`) imports when run."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in _run_time(ast.parse(path.read_text(), str(path)).body):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
            continue
        base = node.module or ""
        if node.level:
            parts = package.split(".")
            base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
        for alias in node.names:
            whole = f"{base}.{alias.name}"
            found.add(whole if whole in known else base)
    return (found & known) - {name}


def circles(root: Path, folders: tuple[str, ...] = ("nanorec", "converters")) -> list[list[str]]:
    """The import circles among the modules under `root`'s `folders`: each a sorted list of
    the modules that all reach each other (a strongly connected component of two or more)."""
    files = {module_name(p, root): p for f in folders for p in sorted((root / f).rglob("*.py"))}
    known = set(files)
    graph = {name: imports_of(path, name, known) for name, path in files.items()}
    reach: dict[str, set[str]] = {}
    for start in graph:
        seen: set[str] = set()
        todo = list(graph[start])
        while todo:
            module = todo.pop()
            if module not in seen:
                seen.add(module)
                todo.extend(graph[module])
        reach[start] = seen
    found: list[list[str]] = []
    placed: set[str] = set()
    for name in sorted(graph):
        if name in placed:
            continue
        ring = sorted({name} | {m for m in reach[name] if name in reach[m]})
        if len(ring) > 1:
            found.append(ring)
            placed.update(ring)
    return found


def test_no_import_circle() -> None:
    found = circles(REPO)
    assert not found, "import circles: " + "; ".join(" <-> ".join(ring) for ring in found)


def _package(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_a_deferred_import_makes_a_circle(tmp_path: Path) -> None:
    """A circle hidden in a function body is still one; a TYPE_CHECKING import is not."""
    _package(
        tmp_path,
        {
            "converters/__init__.py": "",
            "converters/fmt/__init__.py": "",
            "converters/fmt/low.py": "def f():\n    from .high import g\n    return g\n",
            "converters/fmt/high.py": "from . import low\n",
            "converters/fmt/typed.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .user import U\n"
            ),
            "converters/fmt/user.py": "from .typed import TYPE_CHECKING\n",
            "nanorec/__init__.py": "",
        },
    )
    assert circles(tmp_path) == [["nanorec.converters.fmt.high", "nanorec.converters.fmt.low"]]


def test_a_circle_through_from_imports(tmp_path: Path) -> None:
    """`from package import module` and `import package.module` both tie modules."""
    _package(
        tmp_path,
        {
            "nanorec/__init__.py": "",
            "nanorec/a.py": "from nanorec import b\n",
            "nanorec/b.py": "class B:\n    def m(self):\n        import nanorec.c\n",
            "nanorec/c.py": "try:\n    pass\nexcept ImportError:\n    from .a import x\n",
        },
    )
    assert circles(tmp_path, ("nanorec",)) == [["nanorec.a", "nanorec.b", "nanorec.c"]]
