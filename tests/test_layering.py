"""The layering import-linter enforces (see pyproject.toml), for the spelling it cannot see.

import-linter analyses the source tree, where converters live in the top-level folder
`converters`; once installed they are `nanorec.converters.*`. This test reads every module's
imports (static and `importlib.import_module("...")` strings) and checks both spellings: the
core names no converter, and a converter names no other converter.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO


def _imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and _converter_of(node.value.split(":")[0])  # "pkg.module" or "pkg.module:attr"
        ):
            names.add(node.value)
    return names


def _converter_of(name: str) -> str | None:
    parts = name.split(".")
    if parts[0] == "converters" and len(parts) > 1:
        return parts[1]
    if parts[:2] == ["nanorec", "converters"] and len(parts) > 2:
        return parts[2]
    return None


def test_the_core_imports_no_converter() -> None:
    for path in sorted((REPO / "nanorec").rglob("*.py")):
        bad = {name for name in _imported(path) if _converter_of(name)}
        bad |= {n for n in _imported(path) if n in ("converters", "nanorec.converters")}
        assert not bad, f"{path.relative_to(REPO)} imports {sorted(bad)}"


def test_converters_import_no_other_converter() -> None:
    for package in sorted(p for p in (REPO / "converters").iterdir() if p.is_dir()):
        for path in sorted(package.rglob("*.py")):
            others = {
                name for name in _imported(path) if _converter_of(name) not in (None, package.name)
            }
            assert not others, f"{path.relative_to(REPO)} imports {sorted(others)}"


def test_installed_name_only() -> None:
    """Converters import their own modules relatively: `converters.` as a module name would
    be a second copy of the package (and does not exist once installed)."""
    for path in sorted((REPO / "converters").rglob("*.py")):
        assert not {n for n in _imported(path) if n.split(".")[0] == "converters"}, path


def test_every_package_is_installed() -> None:
    """pyproject.toml lists packages explicitly (the converters/ folder maps onto
    nanorec.converters); a package left out would be missing from wheels only."""
    import re

    listed = set(re.findall(r'"(nanorec[\w.]*)"', (REPO / "pyproject.toml").read_text()))
    for root, prefix in (
        (REPO / "nanorec", "nanorec"),
        (REPO / "converters", "nanorec.converters"),
    ):
        for init in root.rglob("__init__.py"):
            parts = init.parent.relative_to(root).parts
            name = ".".join((prefix, *parts))
            assert name in listed, f"{name} is missing from [tool.setuptools] packages"
