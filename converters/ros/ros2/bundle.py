"""The message definitions of a standard ROS 2 install, per distro, bundled; and the one
place a bag's types get their definitions.

rosbag2 stored no definitions before Iron (sqlite3 schema < 4, no MCAP schema text), so a
Humble bag names its types only. For the packages a standard install records
(`common_interfaces`, `builtin_interfaces`, `rcl_interfaces`, `rosgraph_msgs`, `tf2_msgs`,
`lifecycle_msgs`, `action_msgs`, `unique_identifier_msgs`, `statistics_msgs`, and
`service_msgs`/`type_description_interfaces` from Iron), each distro's message types are in
`bundle.json` (written by `make_bundle.py` from `rosbags`' type stores; a text shared by
several distros is stored once), read on first use. Services are not bundled (rosbags'
stores have none): only Jazzy and later record service events, and they store their
definitions.

`resolve` gives every reader of messages (decoding, tables, plots, MCAP and ROS1 export) the
same definitions: the bag's own always wins, then `.msg` files under `--msg-path`, then the
bundle of the bag's distro (`ros_distro` in its metadata, else Humble, or as the user says).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cache
from importlib.resources import files
from pathlib import Path
from types import MappingProxyType
from typing import Final

from nanorec.errors import FormatError, UsageError

from ..about import ROS2_DISTROS
from .msgdef import SEPARATOR, canonical, dependencies, from_msg_path, parse_msg

#: The distros bundled, oldest first (Rolling has the newest release's definitions).
DISTROS: Final = ROS2_DISTROS
#: The distro of a bag that names none (or one before Humble): rosbag2 wrote
#: `ros_distro` only from Iron on, so a bag without it is most likely Humble's.
DEFAULT: Final = "humble"

Definitions = dict[str, tuple[str, str]]


@cache
def _bundle() -> dict[str, object]:
    data = files(__package__).joinpath("bundle.json").read_text(encoding="utf-8")
    value = json.loads(data)
    if not isinstance(value, dict):
        raise FormatError("bundle.json: not a JSON object")
    return value


@cache
def texts(distro: str) -> Mapping[str, str]:
    """`pkg/msg/Type` -> its own `.msg` text (no nested types) in `distro` (read-only:
    shared by every caller)."""
    bundle = _bundle()
    stores = bundle["distros"]
    types = bundle["types"]
    assert isinstance(stores, dict) and isinstance(types, dict)
    store = stores[check_distro(distro)]
    return MappingProxyType(
        {name: text for name, variants in types.items() for text, of in variants if store in of}
    )


def check_distro(name: str) -> str:
    """`name` (any case) if bundled; else a `UsageError` listing the bundled ones."""
    distro = name.strip().lower()
    if distro not in DISTROS:
        raise UsageError(
            f"no bundled definitions for ROS 2 {name!r} (bundled: {', '.join(DISTROS)})"
        )
    return distro


def distro_of(named: str | None) -> str:
    """The bundled distro for a bag whose metadata names `named` (`DEFAULT` when it names
    none or one not bundled: those before Humble are closest to it)."""
    distro = (named or "").strip().lower()
    return distro if distro in DISTROS else DEFAULT


def short(type_name: str) -> str:
    """`pkg/Type` of `pkg/msg/Type`."""
    package, _, name = type_name.rpartition("/")
    return f"{package.split('/')[0]}/{name}"


def bundled(distro: str, type_name: str) -> tuple[str, str] | None:
    """rosbag2's `ros2msg` definition of a bundled type: its text, then every type it uses
    once, depth first in name order (as `local_message_definition_source.cpp`) after 80 `=`
    and `MSG: pkg/Type`. None when `type_name` or a type it uses is not bundled."""
    own = texts(distro)
    root = canonical(type_name)
    if root not in own:
        return None
    seen: set[str] = set()

    def full(name: str) -> str:
        text = own[name]
        for used in sorted(dependencies(parse_msg(name, text))):
            if used not in seen:
                seen.add(used)
                if used not in own:
                    raise KeyError(used)
                text += f"\n{SEPARATOR}\nMSG: {short(used)}\n" + full(used)
        return text

    try:
        return "ros2msg", full(root)
    except KeyError:
        return None


#: Whether a definition (`(encoding, text)`) decodes a message of the type the bag has.
Fits = Callable[[str, tuple[str, str]], bool]


def resolve(
    types: Iterable[str],
    stored: Mapping[str, tuple[str, str]],
    msg_path: Sequence[Path] = (),
    distro: str = DEFAULT,
    fits: Fits | None = None,
    notes: list[str] | None = None,
) -> Definitions:
    """A definition for each of `types` that has one: the bag's (`stored`, kept whole),
    else one made of `.msg` files under `msg_path` (types they leave out taken from the
    bundle), else the bundle's of `distro`. A type none of them knows is left out.

    With `fits`, a stored definition that does not fit the bag's messages (rosbag2's own
    test bags store placeholders, `uint8 level` for a Log) gives way to the one `msg_path`
    or the bundle would give, if that one fits; each such change is said in `notes`."""
    definitions = dict(stored)
    for type_name in sorted(set(types)):
        if type_name in stored and (fits is None or fits(type_name, stored[type_name])):
            continue
        found, origin = None, "the .msg files under --msg-path"
        if msg_path:
            with contextlib.suppress(UsageError):  # not there either: the bundle's
                found = from_msg_path(msg_path, type_name, texts(distro))
        if found is None:
            found, origin = bundled(distro, type_name), f"ROS 2 {distro}'s bundled definition"
        if found is None:
            continue
        if type_name in stored:
            if fits is None or not fits(type_name, found):
                continue
            if notes is not None:
                notes.append(
                    f"the bag's definition of {type_name} does not fit its messages; "
                    f"decoded with {origin} instead"
                )
        definitions[type_name] = found
    return definitions
