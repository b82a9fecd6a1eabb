"""Deferred imports only where they buy start-up time (issue #35 item 5): an import inside a
function whose module its importer already imports (at module level, transitively) hides
the dependency and saves nothing. `tools/deferred_imports.py` finds them; none may come back.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parent.parent


def _tool(name: str) -> ModuleType:
    path = REPO / "tools" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


tool = _tool("deferred_imports")
private = _tool("private_names")


def _package(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _buys(root: Path) -> dict[tuple[str, int], tuple[str, ...]]:
    return {(use.file, use.line): use.buys for use in tool.census(root, ("nanorec",))}


def test_no_deferred_import_buys_nothing() -> None:
    found = tool.census()
    assert len(found) > 100  # the entry points' and the heavy extras' stay
    idle = [f"{use.file}:{use.line}: {use.statement}" for use in found if not use.buys]
    assert not idle, "deferred imports buying nothing (move them up):\n" + "\n".join(idle)


def test_a_planted_deferred_import_is_found(tmp_path: Path) -> None:
    """It can fail: a function importing what its module already imports (directly, through
    another module, or through its package's `__init__`) buys nothing; one importing a
    module not yet loaded buys that module and what it imports."""
    _package(
        tmp_path,
        {
            "nanorec/__init__.py": "",
            "nanorec/low.py": "import json\n",
            "nanorec/mid.py": "from nanorec import low\n",
            "nanorec/heavy.py": "import xml.dom\nfrom . import low\n",
            "nanorec/pkg/__init__.py": "from nanorec import heavy\n",
            "nanorec/pkg/user.py": (
                "from nanorec import mid\n"
                "def a():\n    from nanorec.low import x\n"  # 3: through mid
                "def b():\n    import json\n"  # 5: low imports it
                "def c():\n    from ..heavy import y\n"  # 7: the package's __init__ does
                "class C:\n    def m(self):\n        import xml.dom\n"  # 10: heavy does
            ),
            "nanorec/top.py": (
                "import xml\n"
                "from nanorec import low\n"
                "def a():\n    from nanorec import heavy\n"  # 4: heavy, xml.dom
                "def b():\n    from xml import dom\n"  # 6: a submodule `import xml` skips
                "def c():\n    import json\n"  # 8: nothing
            ),
        },
    )
    user, top = "nanorec/pkg/user.py", "nanorec/top.py"
    assert _buys(tmp_path) == {
        (user, 3): (),
        (user, 5): (),
        (user, 7): (),
        (user, 10): (),
        (top, 4): ("nanorec.heavy", "xml.dom"),
        (top, 6): ("xml.dom",),
        (top, 8): (),
    }


def test_what_may_not_run_is_not_counted_as_imported(tmp_path: Path) -> None:
    """An import under `if TYPE_CHECKING:` is not a deferred import, and neither it, an `if`
    branch nor an optional dependency's `try` counts as already imported; a name a package
    resolves lazily (PEP 562) costs its module."""
    _package(
        tmp_path,
        {
            "nanorec/__init__.py": (
                "_HOMES = {'open': 'nanorec.registry', **dict.fromkeys(('Sel',), 'selection')}\n"
                "def __getattr__(name):\n    import importlib\n"  # 3
            ),
            "nanorec/registry.py": "",
            "nanorec/selection.py": "",
            "nanorec/user.py": (
                "import os\n"
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    import sqlite3\n"
                "if os.name == 'nt':\n    import ctypes\n"
                "try:\n    import zlib\nexcept ImportError:\n    zlib = None\n"
                "def f():\n    if TYPE_CHECKING:\n        import csv\n"
                "    import sqlite3\n"  # 14
                "    import ctypes\n"  # 15
                "    import zlib\n"  # 16
                "    from nanorec import open, Sel\n"  # 17
            ),
        },
    )
    user = "nanorec/user.py"
    assert _buys(tmp_path) == {
        ("nanorec/__init__.py", 3): ("importlib",),
        (user, 14): ("sqlite3",),
        (user, 15): ("ctypes",),
        (user, 16): ("zlib",),
        (user, 17): ("nanorec.registry", "nanorec.selection"),
    }


def test_the_table_adds_up(capsys: pytest.CaptureFixture[str]) -> None:
    assert tool.main([]) == 0
    lines = capsys.readouterr().out.splitlines()
    total = int(lines[0].split(":")[1].split()[0])
    kept, idle = (int(n) for n in lines[-1].split()[1:])
    assert kept + idle == total and idle == 0


def test_no_module_uses_another_modules_private_name() -> None:
    """A `_name` shared between modules is made public; a package's own private modules
    (`nanorec._checkout`, `nanorec._moved`, `nanorec.cli._click`) are modules, not names."""
    assert private.private_names() == []


def test_a_planted_private_name_is_found(tmp_path: Path) -> None:
    _package(
        tmp_path,
        {
            "nanorec/__init__.py": "",
            "nanorec/_own.py": "X = 1\n",
            "nanorec/a.py": "def _f(): ...\n_X = 1\nY = 2\n",
            "nanorec/b.py": (
                "from nanorec import _own, a\n"
                "from nanorec.a import Y as _y\n"
                "import nanorec.a as a_module\n"
                "def g():\n    from nanorec.a import _f\n"  # 5
                "    return a._X, a_module._X, _own.X, a.Y\n"  # 6
            ),
        },
    )
    assert private.private_names(tmp_path, ("nanorec",)) == [
        "nanorec/b.py:5: from nanorec.a import _f",
        "nanorec/b.py:6: a._X",
        "nanorec/b.py:6: a_module._X",
    ]


def test_a_verdict_the_import_belies_is_found(tmp_path: Path) -> None:
    """It can fail: a module loaded in a way the AST does not show (`import_module` at
    module level) is already there when the function imports it."""
    _package(
        tmp_path,
        {
            "nanorec/__init__.py": "",
            "nanorec/low.py": "",
            "nanorec/other.py": "",
            "nanorec/user.py": (
                "import importlib\nimportlib.import_module('nanorec.low')\n"
                "def f():\n    from nanorec import low\n"
                "def g():\n    from nanorec import other\n"
            ),
        },
    )
    found = tool.census(tmp_path, ("nanorec",))
    assert [use.buys for use in found] == [("nanorec.low",), ("nanorec.other",)]
    assert tool.disagreements(found, root=tmp_path) == [
        "nanorec/user.py:4: from nanorec import low (said buys time)"
    ]


@pytest.mark.slow
def test_the_verdicts_are_what_imports_load() -> None:
    """The static rule against the real thing: each module with a deferred import of ours,
    imported alone in a fresh interpreter, has not loaded what the rule says it buys (a
    module the rule missed would mean a verdict of "buys time" where moving it up costs
    nothing, or the reverse)."""
    found = tool.census()
    assert tool.disagreements(found, ("first-party",)) == []
