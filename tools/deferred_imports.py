"""Which imports inside functions buy start-up time (issue #35 item 5: deferred imports only
where they do: entry points, converters' heavy extras).

Why a script: a deferred import says "this is costly, load it when used"; when importing the
importing module already imports the target (at module level, transitively), it buys nothing
and only hides the dependency from the reader and from import-linter. This reads the source
(the AST, nothing is imported) of `nanorec/` and `converters/` (installed as
`nanorec.converters`): each module's module-level import closure (parent packages included,
`if TYPE_CHECKING:` and other `if` branches and `except ImportError` fallbacks left out: only
what surely runs), then each import statement inside a function or method (TYPE_CHECKING
blocks excluded). Such an import buys time unless every module it names is already in its
importer's closure; a third-party or stdlib target is compared by name (what it imports in
turn is not read), a name a package resolves lazily (PEP 562 `__getattr__`) by the module
its table names.

    python tools/deferred_imports.py          # the table
    python tools/deferred_imports.py --list   # the deferred imports that buy nothing
    python tools/deferred_imports.py --kept   # the others, with what each one buys
    python tools/deferred_imports.py --check  # each verdict against a fresh import's modules
"""

from __future__ import annotations

import argparse
import ast
import functools
import importlib.util
import json
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("nanorec", "converters")
KINDS = ("first-party", "third-party", "stdlib")


def module_name(path: Path, root: Path) -> str:
    """The installed name of a source file: `converters/` installs as `nanorec.converters`."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[0] == "converters":
        parts.insert(0, "nanorec")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking(node: ast.If) -> bool:
    return "TYPE_CHECKING" in ast.unparse(node.test)


def _guards_import(node: ast.Try) -> bool:
    """Whether a `try` catches ImportError (an optional dependency: its body may not run)."""
    names = {ast.unparse(h.type) for h in node.handlers if h.type is not None}
    return any("ImportError" in name or "ModuleNotFoundError" in name for name in names) or any(
        h.type is None for h in node.handlers
    )


def surely_run(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements that run whenever `body` (a module's) runs: not in a function,
    an `if` (its `else` under TYPE_CHECKING is), an `except` handler or a `try` catching
    ImportError."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If):
            if _type_checking(node):
                yield from surely_run(node.orelse)
        elif isinstance(node, ast.Try):
            if not _guards_import(node):
                yield from surely_run(node.body + node.orelse + node.finalbody)
            else:
                yield from surely_run(node.finalbody)
        elif isinstance(node, (ast.With, ast.ClassDef)):
            yield from surely_run(node.body)


def deferred(body: list[ast.stmt], inside: bool = False) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements inside functions and methods, at any depth, but not those under
    `if TYPE_CHECKING:`."""
    for node in body:
        if isinstance(node, ast.If) and _type_checking(node):
            yield from deferred(node.orelse, inside)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if inside:
                yield node
            continue
        within = inside or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                yield from deferred([child], within)
            elif isinstance(child, (ast.ExceptHandler, ast.match_case)):
                yield from deferred(child.body, within)


@functools.cache
def _is_module(dotted: str) -> bool:
    """Whether a third-party or stdlib `dotted` name is a module (read from the installed
    files: importing a package to ask would run it)."""
    top, *rest = dotted.split(".")
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return False
    if spec is None:
        return False
    places = list(spec.submodule_search_locations or [])
    for i, part in enumerate(rest):
        found: list[str] = []
        for place in map(Path, places):
            if (place / part).is_dir():
                found.append(str(place / part))
            elif i == len(rest) - 1 and (
                any(place.glob(f"{part}.py")) or any(place.glob(f"{part}.*.so"))
            ):
                return True
        if not found:
            return False
        places = found
    return True


def _table(node: ast.Dict) -> dict[str, str]:
    """The string constants a dict literal maps, `**dict.fromkeys((...), "home")` included."""
    table: dict[str, str] = {}
    for key, value in zip(node.keys, node.values, strict=True):
        if isinstance(key, ast.Constant) and isinstance(value, ast.Constant):
            table[str(key.value)] = str(value.value)
        elif key is None and isinstance(value, ast.Dict):
            table.update(_table(value))
        elif (
            key is None
            and isinstance(value, ast.Call)
            and ast.unparse(value.func) == "dict.fromkeys"
            and len(value.args) == 2
            and isinstance(value.args[0], (ast.Tuple, ast.List))
            and isinstance(value.args[1], ast.Constant)
        ):
            for name in value.args[0].elts:
                if isinstance(name, ast.Constant):
                    table[str(name.value)] = str(value.args[1].value)
    return table


@dataclass
class Module:
    name: str
    path: Path
    tree: ast.Module
    is_package: bool

    @functools.cached_property
    def bound(self) -> set[str]:
        """The names its module level binds (a lazy `__getattr__` answers the others)."""
        names: set[str] = set()
        for node in self.tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names.update(t.id for t in targets if isinstance(t, ast.Name))
        return names

    @functools.cached_property
    def lazy(self) -> dict[str, str] | None:
        """Name -> module of a PEP 562 `__getattr__`'s table (a module-level dict of string
        constants), or None without `__getattr__`; {} if it has no such table."""
        if "__getattr__" not in self.bound:
            return None
        table: dict[str, str] = {}
        for node in self.tree.body:
            value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
            if isinstance(value, ast.Dict):
                table.update(_table(value))
        return table


class Project:
    """The modules under `root`'s folders and their module-level import closures."""

    def __init__(self, root: Path = ROOT, folders: tuple[str, ...] = FOLDERS) -> None:
        self.root = root
        self._direct: dict[str, frozenset[str]] = {}
        self._closure: dict[str, frozenset[str]] = {}
        self.modules: dict[str, Module] = {}
        for folder in folders:
            for path in sorted((root / folder).rglob("*.py")):
                name = module_name(path, root)
                tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
                self.modules[name] = Module(name, path, tree, path.name == "__init__.py")

    def first_party(self, name: str) -> bool:
        return name.split(".")[0] in self.tops

    @functools.cached_property
    def tops(self) -> set[str]:
        return {name.split(".")[0] for name in self.modules}

    def targets(self, importer: Module, node: ast.Import | ast.ImportFrom) -> set[str]:
        """The modules one import statement in `importer` imports (its own name, not its
        parents': the closure adds those)."""
        if isinstance(node, ast.Import):
            return {alias.name for alias in node.names}
        base = node.module or ""
        if node.level:
            package = importer.name if importer.is_package else importer.name.rpartition(".")[0]
            parts = package.split(".")
            parts = parts[: len(parts) - node.level + 1]
            base = ".".join([*parts, base] if base else parts)
        found: set[str] = set()
        for alias in node.names:
            whole = f"{base}.{alias.name}"
            if not self.first_party(base):
                found.add(whole if alias.name != "*" and _is_module(whole) else base)
            elif whole in self.modules:
                found.add(whole)
            else:
                found.add(base)
                home = self.modules.get(base)
                lazy = home.lazy if home is not None else None
                if home is not None and lazy is not None and alias.name not in home.bound:
                    # a PEP 562 name: its module (named whole or in the package), or
                    # (not in a table) nothing known
                    home_name = lazy.get(alias.name, f"{whole} (lazy)")
                    inside = f"{base}.{home_name}"
                    found.add(inside if inside in self.modules else home_name)
        return found

    def direct(self, name: str) -> frozenset[str]:
        """What importing module `name` surely imports itself: its parent packages and its
        module level's imports."""
        if name not in self._direct:
            self._direct[name] = self._imports(name)
        return self._direct[name]

    def _imports(self, name: str) -> frozenset[str]:
        module = self.modules.get(name)
        found = {name.rpartition(".")[0]} - {""}
        if module is not None:
            for node in surely_run(module.tree.body):
                for target in self.targets(module, node):
                    parts = target.split(".")
                    found.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
        return frozenset(found - {name})

    def closure(self, name: str) -> frozenset[str]:
        """Every module importing `name` surely imports, itself included (first-party ones
        followed; third-party and stdlib ones named, not followed)."""
        if name not in self._closure:
            self._closure[name] = self._reach(name)
        return self._closure[name]

    def _reach(self, name: str) -> frozenset[str]:
        parts = name.split(".")
        if name not in self.modules:  # third-party or stdlib: its parent packages, named
            return frozenset(".".join(parts[:i]) for i in range(1, len(parts) + 1))
        seen = {name}
        todo = [name]
        while todo:
            for target in self.direct(todo.pop()):
                if target not in seen:
                    seen.add(target)
                    if target in self.modules:
                        todo.append(target)
        return frozenset(seen)


@functools.lru_cache(maxsize=4)
def project_of(root: Path = ROOT, folders: tuple[str, ...] = FOLDERS) -> Project:
    """The tree read once (parsing ~300 files is most of the time) for every question."""
    return Project(root, folders)


@dataclass(frozen=True)
class Deferred:
    """One import statement inside a function."""

    file: str
    line: int
    statement: str
    targets: tuple[str, ...]
    #: What importing the targets adds to the importer's closure (empty: buys nothing).
    buys: tuple[str, ...]
    kind: str  # "first-party", "third-party" or "stdlib"


def _kind(project: Project, targets: set[str]) -> str:
    if any(project.first_party(t) for t in targets):
        return "first-party"
    stdlib: frozenset[str] = getattr(sys, "stdlib_module_names", frozenset())
    return "stdlib" if all(t.split(".")[0] in stdlib for t in targets) else "third-party"


def census(root: Path = ROOT, folders: tuple[str, ...] = FOLDERS) -> list[Deferred]:
    """Every deferred import under `root`'s folders, with what it buys."""
    project = project_of(root, folders)
    found: list[Deferred] = []
    for name, module in project.modules.items():
        have = project.closure(name)
        for node in deferred(module.tree.body):
            targets = project.targets(module, node)
            buys: set[str] = set()
            for target in targets:
                if target not in have:
                    buys |= project.closure(target) - have
            found.append(
                Deferred(
                    str(module.path.relative_to(root)),
                    node.lineno,
                    ast.unparse(node),
                    tuple(sorted(targets)),
                    tuple(sorted(buys)),
                    _kind(project, targets),
                )
            )
    return found


#: Run by a fresh interpreter: for each module named, a forked copy of this interpreter
#: (which has imported nothing beyond start-up, json and os) imports it alone and prints its
#: `sys.modules`, one JSON line a module: a fresh interpreter each, without starting one each.
_PROBE = """
import json, os, sys
for name in sys.argv[1:]:
    child = os.fork()
    if child == 0:
        try:
            __import__(name)
            sys.stdout.write(json.dumps(sorted(sys.modules)) + "\\n")
            sys.stdout.flush()
        except BaseException:
            import traceback
            traceback.print_exc()
            os._exit(1)
        os._exit(0)
    if os.waitpid(child, 0)[1]:
        sys.exit(f"importing {name} failed")
"""


def loaded_by(modules: list[str], root: Path = ROOT) -> list[set[str]]:
    """The modules in `sys.modules` once an interpreter started in `root` (its `nanorec/`
    first on the path) has imported each of `modules` alone: what the static closure stands
    for, to check it by."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *modules], capture_output=True, text=True, cwd=root
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip()[-2000:])
    return [set(json.loads(line)) for line in done.stdout.splitlines()]


def disagreements(
    found: list[Deferred], kinds: tuple[str, ...] = KINDS, root: Path = ROOT
) -> list[str]:
    """The deferred imports of `kinds` whose verdict differs from what importing their
    module really loads (a target already loaded buys nothing). Stdlib and third-party
    targets may differ by Python version (pathlib imports fnmatch on 3.11); first-party
    ones may not."""
    wrong: list[str] = []
    by_file: dict[str, list[Deferred]] = {}
    for use in found:
        if use.kind in kinds:
            by_file.setdefault(use.file, []).append(use)
    loaded = loaded_by([module_name(root / file, root) for file in by_file], root)
    for (file, uses), have in zip(by_file.items(), loaded, strict=True):
        for use in uses:
            idle = all(t in have for t in use.targets if not t.endswith("(lazy)"))
            if idle != (not use.buys):
                verdict = "buys time" if use.buys else "buys nothing"
                wrong.append(f"{file}:{use.line}: {use.statement} (said {verdict})")
    return wrong


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--list", action="store_true", help="the ones that buy nothing")
    parser.add_argument("--kept", action="store_true", help="the ones that buy time")
    parser.add_argument(
        "--check", action="store_true", help="each verdict against what importing loads"
    )
    parser.add_argument("--root", type=Path, default=ROOT)
    args = parser.parse_args(argv)
    found = census(args.root)
    if args.check:
        wrong = disagreements(found, root=args.root)
        print("\n".join(wrong) or f"all {len(found)} verdicts agree with what imports load")
        return 0
    if args.list or args.kept:
        for use in found:
            if bool(use.buys) == args.kept:
                what = f"  buys {len(use.buys)}: {' '.join(use.buys[:6])}" if use.buys else ""
                print(f"{use.file}:{use.line}: {use.statement}{what}")
        return 0
    table = Counter((use.kind, bool(use.buys)) for use in found)
    print(f"deferred imports: {len(found)} (kept: buy start-up time; buy nothing: to move up)")
    print(f"  {'':12s} {'kept':>6s} {'nothing':>8s}")
    for kind in KINDS:
        print(f"  {kind:12s} {table[kind, True]:6d} {table[kind, False]:8d}")
    kept = sum(1 for use in found if use.buys)
    print(f"  {'all':12s} {kept:6d} {len(found) - kept:8d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
