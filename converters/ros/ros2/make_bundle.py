"""Writes `bundle.json` (the definitions `bundle.py` serves) from `rosbags`' type stores.

Run from the repository root with rosbags installed (a dev dependency):
`python -m nanorec.converters.ros.ros2.make_bundle`. rosbags' stores are generated from each
distro's released `.msg`/`.idl` files; every message type of each store is written out as
its own `.msg` text (constants first, then fields; comments dropped), the way rosbags writes a
`ros2msg` definition. A text shared by several distros is stored once, with the distros that
have it. rosbags' stores hold no services, so neither does the bundle.
`tests/converters/ros/test_stock.py` checks the bundle against the stores.
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Final

#: Our distro name -> rosbags' store (`Stores.ROS2_<NAME>`). Rolling takes the newest
#: release's store: rosbags keeps no Rolling of its own, and Rolling branched that release.
STORES: Final = {
    "humble": "humble",
    "iron": "iron",
    "jazzy": "jazzy",
    "kilted": "kilted",
    "lyrical": "lyrical",
    "rolling": "lyrical",
}
OUTPUT: Final = Path(__file__).with_name("bundle.json")


def own_texts(store_name: str) -> dict[str, str]:
    """Every message type of one rosbags store -> its own `.msg` text."""
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores(f"ros2_{store_name}"))
    return {
        name: store.gendefhash(name, {}, ros_version=2)[0]
        for name in sorted(store.fielddefs)
        if "/msg/" in name
    }


def bundle() -> dict[str, object]:
    """The bundle's JSON value: each type's distinct texts, each with its distros."""
    by_store = {store: own_texts(store) for store in sorted(set(STORES.values()))}
    types: dict[str, list[list[object]]] = {}
    for store, texts in by_store.items():
        for name, text in texts.items():
            variants = types.setdefault(name, [])
            for variant in variants:
                if variant[0] == text:
                    assert isinstance(variant[1], list)
                    variant[1].append(store)
                    break
            else:
                variants.append([text, [store]])
    return {
        "source": f"rosbags {version('rosbags')} type stores",
        "distros": STORES,
        "types": dict(sorted(types.items())),
    }


def main() -> None:
    value = bundle()
    types = value.pop("types")
    assert isinstance(types, dict)
    lines = [f"{json.dumps(name)}: {json.dumps(variants)}" for name, variants in types.items()]
    head = json.dumps(value)[:-1]
    text = head + ', "types": {\n' + ",\n".join(lines) + "\n}}\n"  # a type per line
    OUTPUT.write_text(text, encoding="utf-8")
    sys.stdout.write(f"{OUTPUT}: {len(text.encode())} bytes\n")


if __name__ == "__main__":
    main()
