"""The bundled definitions (`ros2/bundle.py`, `bundle.json`) are each distro's: for every
distro, the message types bundled are those of `rosbags`' type store for it, and every type's
fields (types, array sizes, sequence and string bounds) and constants (types and values)
equal the store's; each full definition parses with our parser, nested types included."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

pytest.importorskip("rosbags")

from rosbags.typesys import Stores, get_typestore
from rosbags.typesys.base import Nodetype

from nanorec.converters.ros.ros2 import bundle
from nanorec.converters.ros.ros2.make_bundle import STORES, own_texts
from nanorec.converters.ros.ros2.msgdef import EMPTY_FIELD, load, parse_definition, parse_msg
from nanorec.errors import UsageError
from tests.conftest import REPO

CASES = [(d, t) for d in bundle.DISTROS for t in sorted(bundle.texts(d))]


def store(distro: str) -> Any:
    return get_typestore(Stores(f"ros2_{STORES[distro]}"))


def theirs(desc: Any) -> tuple[str, int, int | None, int]:
    """A rosbags field description as (type, string bound, array, sequence bound)."""
    kind, rest = desc
    if kind == Nodetype.NAME:
        return rest, 0, None, 0
    if kind == Nodetype.BASE:
        return rest[0], rest[1], None, 0
    (sub_kind, sub), count = rest
    base, string_bound = (sub, 0) if sub_kind == Nodetype.NAME else sub
    if kind == Nodetype.ARRAY:
        return base, string_bound, count, 0
    return base, string_bound, -1, count


def ours(type_name: str, text: str) -> list[tuple[str, tuple[str, int, int | None, int]]]:
    """Our parse of a bundled `.msg` text, in the same shape (string bounds from the text:
    our model keeps none, CDR does not need them)."""
    constant = re.compile(r"^\S+\s+\w+\s*=")
    lines = [line.split()[0] for line in text.splitlines() if line and not constant.match(line)]
    fields = parse_msg(type_name, text).fields
    if fields[0].name == EMPTY_FIELD:  # rosidl's member of an empty struct, rosbags' too
        lines = ["uint8"]
    out = []
    for field, token in zip(fields, lines, strict=True):
        bound = re.match(r"w?string<=(\d+)", token)
        string_bound = int(bound.group(1)) if bound else 0
        out.append((field.name, (field.type, string_bound, field.array, field.bound)))
    return out


def constant_value(kind: str, value: str) -> Any:
    if kind == "bool":
        return value.lower() in ("true", "1")
    if kind.startswith("float"):
        return float(value)
    if kind in ("string", "wstring"):
        return value
    return int(value, 0)


def test_every_message_type_of_each_store_is_bundled() -> None:
    for distro in bundle.DISTROS:
        wanted = {t for t in store(distro).fielddefs if "/msg/" in t}
        assert set(bundle.texts(distro)) == wanted, distro
    assert bundle.texts("rolling") == bundle.texts("lyrical")
    assert "sensor_msgs/msg/MagneticField" in bundle.texts("humble")
    assert "service_msgs/msg/ServiceEventInfo" not in bundle.texts("humble")  # from Iron
    assert "service_msgs/msg/ServiceEventInfo" in bundle.texts("jazzy")


def test_the_bundle_is_what_make_bundle_writes() -> None:
    """bundle.json is current: regenerating from the installed rosbags gives the same texts
    (run `python -m nanorec.converters.ros.ros2.make_bundle` after upgrading rosbags)."""
    for distro in bundle.DISTROS:
        assert bundle.texts(distro) == own_texts(STORES[distro]), distro


def test_a_text_shared_by_distros_is_stored_once() -> None:
    data = json.loads(
        (bundle.files(bundle.__package__) / "bundle.json").read_text(encoding="utf-8")
    )
    for name, variants in data["types"].items():
        texts = [text for text, _ in variants]
        assert len(texts) == len(set(texts)), name
    assert len(data["types"]["std_msgs/msg/Header"]) == 1


@pytest.mark.parametrize(("distro", "type_name"), CASES)
def test_bundled_definition_matches_the_store(distro: str, type_name: str) -> None:
    text = bundle.texts(distro)[type_name]
    consts, fields = store(distro).fielddefs[type_name]
    expected = [(name, theirs(desc)) for name, desc in fields]
    assert ours(type_name, text) == expected
    parsed = parse_msg(type_name, text).constants
    assert [(c.name, c.type) for c in parsed] == [(n, t) for n, t, _ in consts]
    assert [constant_value(c.type, c.value) for c in parsed] == [v for _, _, v in consts]


@pytest.mark.parametrize("distro", bundle.DISTROS)
def test_every_full_definition_parses_with_its_nested_types(distro: str) -> None:
    own = bundle.texts(distro)
    for type_name in own:
        found = bundle.bundled(distro, type_name)
        assert found is not None, type_name
        types = parse_definition(type_name, *found)
        assert type_name in types
        for name, msg in types.items():
            assert msg == parse_msg(name, own[name]), (type_name, name)
        assert load({type_name: found}, type_name)[type_name] == types[type_name]


def test_distros_named_and_unknown() -> None:
    assert bundle.check_distro(" Jazzy ") == "jazzy"
    with pytest.raises(UsageError, match="bundled: humble, iron"):
        bundle.check_distro("foxy")
    assert bundle.distro_of("kilted") == "kilted"
    assert bundle.distro_of("") == bundle.distro_of(None) == bundle.distro_of("foxy") == "humble"
    assert bundle.bundled("humble", "no_msgs/msg/Nothing") is None
    assert bundle.bundled("humble", "std_msgs/String") == ("ros2msg", "string data\n")


def test_the_bundle_is_package_data() -> None:
    """An installed wheel carries bundle.json (setuptools installs only what is listed)."""
    tomllib = pytest.importorskip("tomllib")
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    data = config["tool"]["setuptools"]["package-data"]
    assert "bundle.json" in data["nanorec.converters.ros.ros2"]
    assert (REPO / "converters" / "ros" / "ros2" / "bundle.json").is_file()
