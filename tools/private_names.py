"""Which modules use another module's `_private` name (issue #35 item 5: "no import of
another module's `_private` name").

Why a script: a `_name` says "mine only"; a second module importing it (`from m import _f`)
or reading it (`m._f`) shares it without saying so, and a rename in `m` breaks the other.
A name shared is made public. A package's own private *modules* (`nanorec._checkout`,
`nanorec._version`, `nanorec.cli._click`) are modules, not names, and stay. Imports are
resolved as `deferred_imports.py` resolves them (relative imports, `converters/` as
`nanorec.converters`, PEP 562 lazy names).

    python tools/private_names.py   # each use, or a line saying there is none
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script or loaded by path
import deferred_imports as graph


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_names(root: Path = graph.ROOT, folders: tuple[str, ...] = graph.FOLDERS) -> list[str]:
    """`file:line: code` of each use of another module's `_private` name (a function, class
    or constant), imported or read from the module (`module._name`); a package's own private
    modules (`nanorec._version`) are modules, not names."""
    project = graph.project_of(root, folders)
    found: list[str] = []
    for module in project.modules.values():
        where = str(module.path.relative_to(root))
        aliases: dict[str, str] = {}  # local name -> first-party module it stands for
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        aliases[alias.asname] = alias.name
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    one = ast.ImportFrom(module=node.module, names=[alias], level=node.level)
                    targets = project.targets(module, one)
                    named = [t for t in targets if t.endswith(f".{alias.name}")]
                    if named and named[0] in project.modules:
                        aliases[alias.asname or alias.name] = named[0]
                    elif _private(alias.name) and any(map(project.first_party, targets)):
                        found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
        for node in ast.walk(module.tree):
            if (
                isinstance(node, ast.Attribute)
                and _private(node.attr)
                and ast.unparse(node.value) in aliases
                and f"{aliases[ast.unparse(node.value)]}.{node.attr}" not in project.modules
            ):
                found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--root", type=Path, default=graph.ROOT)
    args = parser.parse_args(argv)
    found = private_names(args.root)
    print("\n".join(found) or "no module uses another module's _private name")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
