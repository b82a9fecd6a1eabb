"""The bundled Humble definitions (`ros2/stock.py`) are Humble's: every type's fields and
constants equal those of `rosbags`' Humble type store, and each parses with our parser."""

from __future__ import annotations

import pytest

pytest.importorskip("rosbags")

from rosbags.typesys import Stores, get_typestore

from nanorec.converters.ros.ros2.msgdef import load
from nanorec.converters.ros.ros2.stock import PACKAGES, STOCK

STORE = get_typestore(Stores.ROS2_HUMBLE)


def test_every_message_type_of_the_packages_is_bundled() -> None:
    wanted = {t for t in STORE.fielddefs if t.split("/")[0] in PACKAGES and "/msg/" in t}
    assert wanted == set(STOCK)


@pytest.mark.parametrize("type_name", sorted(STOCK))
def test_bundled_definition_matches_humble(type_name: str) -> None:
    definitions = {name: ("ros2msg", text) for name, text in STOCK.items()}
    ours = load(definitions, type_name)[type_name]
    consts, fields = STORE.fielddefs[type_name]
    assert [f.name for f in ours.fields] == [name for name, _ in fields]
    assert [c.name for c in ours.constants] == [name for name, _, _ in consts]
