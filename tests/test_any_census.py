"""`Any` only where a value is truly untyped (issue #35): none in the contract's and the
command line's signatures (options, requests, reports, hooks, callbacks), none in a
format's options or hooks; msgpack payloads, JSON and click's objects go by a name saying
so (`nanorec.untyped`, `nanorec.cli._click`). `tools/any_census.py` counts the rest."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parent.parent


def _census() -> ModuleType:
    spec = importlib.util.spec_from_file_location("any_census", REPO / "tools" / "any_census.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


census = _census()
#: Where an untyped value is named (`X: TypeAlias = Any`), and nothing else uses `Any`.
ALIASES = (REPO / "nanorec" / "untyped.py", REPO / "nanorec" / "cli" / "_click.py")
#: The contract, what a caller asks, and the command line.
SURFACE = [
    REPO / "nanorec" / "contract.py",
    REPO / "nanorec" / "requests.py",
    *(p for p in sorted((REPO / "nanorec" / "cli").glob("*.py")) if p not in ALIASES),
]
_ALIAS = re.compile(r"^\w+: TypeAlias = .*\bAny\b")


def _uses(paths: list[Path]) -> list[str]:
    return [
        f"{path.name}:{number}: {line.strip()}"
        for path in paths
        for number, line in census.uses(path)
    ]


def test_no_any_in_the_contract_and_the_command_line() -> None:
    assert _uses(SURFACE) == []


def test_untyped_values_are_named_where_they_are_declared() -> None:
    for path in ALIASES:
        for number, line in census.uses(path):
            assert line == "\0import" or _ALIAS.match(line), f"{path.name}:{number}: {line}"


def test_no_any_in_a_formats_options_or_hooks() -> None:
    converters = REPO / "converters"
    options = sorted(converters.rglob("verb_options.py")) + sorted(
        converters.rglob("export_options.py")
    )
    assert options and _uses(options) == []
    hooks = [
        use
        for use in _uses(sorted(converters.rglob("*.py")))
        if re.search(r"VerbCall\[[^]]*\bAny\b|_options: .*\bAny\b|\bHook\b.*\bAny\b", use)
    ]
    assert hooks == []


#: Folders where every `Any` is named or typed (issue #35): options, hooks, callbacks,
#: buffers and library objects have real types or a named alias, not a bare `Any`.
TYPED = ("nanorec/", "converters/ros/")
#: The census's categories that must stay empty there.
TYPED_CATEGORIES = ("hooks", "buffers", "third-party", "other")


def _untyped(root: Path = REPO) -> list[str]:
    return [
        f"{rel}:{number}: {name}: {line}"
        for name, rel, number, line in census.census(root)
        if rel.startswith(TYPED) and name in TYPED_CATEGORIES
    ]


def test_no_bare_any_for_hooks_buffers_or_objects_in_the_core_and_ros() -> None:
    assert _untyped() == []


def test_a_bare_any_in_the_core_or_ros_is_found(tmp_path: Path) -> None:
    """It can fail: a callback, a buffer, a library object and an unnamed value planted in
    the core and in ROS are found; the same in another format's folder is not this test's."""
    planted = (
        "from typing import Any\n"
        "def f(callback: Any) -> None: ...\n"
        "def g(buf: Any) -> None: ...\n"
        "def h(axes: Any) -> None: ...\n"
        "def k(x: Any) -> None: ...\n"
    )
    for folder in ("nanorec", "converters/ros/ros2", "converters/carla"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "planted.py").write_text(planted)
    found = [use.split(": ")[:2] for use in _untyped(tmp_path)]
    assert found == [
        [f"{rel}:{number}", name]
        for rel in ("nanorec/planted.py", "converters/ros/ros2/planted.py")
        for number, name in zip((2, 3, 4, 5), TYPED_CATEGORIES, strict=True)
    ]


def test_the_census_sees_what_it_counts(tmp_path: Path) -> None:
    """It can fail: a planted `Any` in a signature is found and sorted; one in a docstring
    or a comment is not code."""
    folder = tmp_path / "nanorec"
    folder.mkdir()
    (folder / "planted.py").write_text(
        "from typing import Any\n"
        '"""Any format."""\n'
        "def f(options: Any) -> dict[str, Any]:  # Any\n"
        "    return {}\n"
    )
    found = census.census(tmp_path, ("nanorec",))
    assert [(name, number) for name, _, number, _ in found] == [
        ("imports", 1),
        ("hooks", 3),
        ("hooks", 3),
    ]
    assert _uses([folder / "planted.py"])


def test_the_census_adds_up() -> None:
    found = census.census()
    assert found and {name for name, *_ in found} <= set(census.MEANING)


#: Formats whose options, hooks and buffers are all typed: no `Any` may come back there.
TYPED_FORMATS = ("converters/carla/", "converters/pbstream/")
#: The categories that must stay empty in them (payloads go by `nanorec.untyped`'s names).
TYPED_CATEGORIES = ("hooks", "buffers")


def _untyped_in_typed_formats(root: Path = REPO) -> list[str]:
    return [
        f"{rel}:{number}: {name}: {line}"
        for name, rel, number, line in census.census(root, ("converters",))
        if name in TYPED_CATEGORIES and rel.startswith(TYPED_FORMATS)
    ]


def test_no_untyped_hooks_or_buffers_in_carla_and_pbstream() -> None:
    assert _untyped_in_typed_formats() == []


def test_an_untyped_hook_or_buffer_in_carla_or_pbstream_is_found(tmp_path: Path) -> None:
    """It can fail: an options dict or a buffer typed `Any` in either format is reported;
    the same line in another converter is not this test's business."""
    for folder in ("carla", "pbstream", "ros"):
        (tmp_path / "converters" / folder).mkdir(parents=True)
        (tmp_path / "converters" / folder / "planted.py").write_text(
            "from typing import Any\n"
            "def parse(buf: Any, start: int) -> None: ...\n"
            "def run(options: dict[str, Any]) -> None: ...\n"
        )
    assert _untyped_in_typed_formats(tmp_path) == [
        "converters/carla/planted.py:2: buffers: def parse(buf: Any, start: int) -> None: ...",
        "converters/carla/planted.py:3: hooks: def run(options: dict[str, Any]) -> None: ...",
        "converters/pbstream/planted.py:2: buffers: def parse(buf: Any, start: int) -> None: ...",
        "converters/pbstream/planted.py:3: hooks: def run(options: dict[str, Any]) -> None: ...",
    ]
