"""RIHS01 type hashes (REP-2011) of ROS 2 types, computed from our own type model.

From Iron on, rosbag2 stores per topic the `type_description_hash` rosidl computed when the
type was built (`rosidl_generator_type_description`): the sha256 of one JSON text describing
the type and every type it references, written `RIHS01_<64 hex>`. A bag we write should carry
the same string, so this module rebuilds that JSON from a `MsgType` and the types it names,
whatever their source (a bag's definitions, a stock bundle): the caller gives a mapping.

What rosidl hashes, and so what this module does (`calculate_type_hash`,
`extract_full_type_description`): `{"type_description": T, "referenced_type_descriptions":
[R...]}`, each description `{"type_name": "pkg/msg/T", "fields": [...]}`, each field
`{"name", "type": {"type_id", "capacity", "string_capacity", "nested_type_name"}}` in
declaration order; default values and constants left out; the referenced types are every type
reachable from T (T itself only when it refers to itself), sorted by name; `json.dumps` with
separators `", "` and `": "`, ASCII only, keys in that order. `type_id` is
`type_description_interfaces/msg/FieldType`'s constant: the value type's id, plus 48 for a
fixed array, 96 for a bounded and 144 for an unbounded sequence.

rosidl hashes the IDL that `rosidl_adapter` makes from a `.msg`, where `char` became `uint8`:
a `char` of a type read from a `.msg` is hashed as `uint8`, one read from an `.idl`
(`MsgType.from_idl`) as FIELD_TYPE_CHAR.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Final

from nanorec.errors import FormatError

from .msgdef import BUILTINS, Field, MsgType, canonical, parse_definition, service_of
from .storage import Definition

PREFIX: Final = "RIHS01_"
#: `FieldType.msg`'s value type ids (a `.msg` `char` as rosidl_adapter turns it: see the module).
TYPE_IDS: Final = {
    "nested": 1, "int8": 2, "uint8": 3, "int16": 4, "uint16": 5, "int32": 6, "uint32": 7,
    "int64": 8, "uint64": 9, "float32": 10, "float64": 11, "char": 3, "wchar": 14, "bool": 15,
    "byte": 16, "string": 17, "wstring": 18,
}  # fmt: skip
#: FIELD_TYPE_CHAR: a `char` of an `.idl`.
IDL_CHAR: Final = 13
#: FIELD_TYPE_BOUNDED_STRING / _WSTRING, for a string with a most length.
BOUNDED_STRING_IDS: Final = {"string": 21, "wstring": 22}
#: What a fixed array, a bounded and an unbounded sequence add to the value type's id.
FIXED_ARRAY, BOUNDED_SEQUENCE, UNBOUNDED_SEQUENCE = 48, 96, 144

#: The distributions whose rosbag2 stores no type hash (they came with Iron).
BEFORE_IRON: Final = frozenset(
    {"ardent", "bouncy", "crystal", "dashing", "eloquent", "foxy", "galactic", "humble"}
)

#: A type description as rosidl's JSON holds it (str / int / list / dict values).
Description = dict[str, object]


def stores_type_hashes(distro: str) -> bool:
    """Whether a bag naming `distro` (its `ros_distro`, "" when unsaid) has type hashes:
    a Humble-era bag keeps what Humble's rosbag2 wrote, none."""
    return distro.strip().lower() not in BEFORE_IRON


def field_description(field: Field, *, from_idl: bool = False) -> Description:
    """One field as `serialize_field` gives it, less its default value (`from_idl`: of a type
    read from an `.idl`)."""
    nested = "/" in field.type
    if nested:
        type_id = TYPE_IDS["nested"]
    elif field.type == "char" and from_idl:
        type_id = IDL_CHAR
    elif field.string_bound and field.type in BOUNDED_STRING_IDS:
        type_id = BOUNDED_STRING_IDS[field.type]
    elif field.type in TYPE_IDS:
        type_id = TYPE_IDS[field.type]
    else:
        raise FormatError(f"field {field.name}: no type hash id for type {field.type!r}")
    capacity = 0
    if field.array is None:
        pass
    elif field.array > 0:
        type_id, capacity = type_id + FIXED_ARRAY, field.array
    elif field.bound:
        type_id, capacity = type_id + BOUNDED_SEQUENCE, field.bound
    else:
        type_id += UNBOUNDED_SEQUENCE
    return {
        "name": field.name,
        "type": {
            "type_id": type_id,
            "capacity": capacity,
            "string_capacity": field.string_bound if field.type in BOUNDED_STRING_IDS else 0,
            "nested_type_name": field.type if nested else "",
        },
    }


def _individual(name: str, types: Mapping[str, MsgType]) -> MsgType:
    """`name` from `types`; a service `pkg/srv/Foo` as rosidl describes one (`add_srv`: its
    request, response and event messages as three nested fields)."""
    found = types.get(name)
    if found is not None:
        return found
    if service_of(name) == name and f"{name}_Request" in types:
        return MsgType(
            name,
            (
                Field(f"{name}_Request", "request_message"),
                Field(f"{name}_Response", "response_message"),
                Field(f"{name}_Event", "event_message"),
            ),
        )
    raise FormatError(f"cannot hash the type: no definition of {name}")


def type_description(type_name: str, types: Mapping[str, MsgType]) -> Description:
    """The full `TypeDescription` of `type_name` rosidl hashes: the type and every type it
    references (from `types`, keyed "pkg/msg/Type"), default values left out.

    Raises FormatError when a referenced type is missing or a field's type has no id."""
    top = _individual(type_name, types)
    described: dict[str, Description] = {}
    pending = [f.type for f in top.fields if "/" in f.type]
    while pending:
        name = pending.pop()
        if name in described:
            continue
        msg = _individual(name, types)
        described[name] = _describe(msg)
        pending.extend(f.type for f in msg.fields if "/" in f.type)
    return {
        "type_description": _describe(top),
        "referenced_type_descriptions": [described[name] for name in sorted(described)],
    }


def _describe(msg: MsgType) -> Description:
    fields = [field_description(f, from_idl=msg.from_idl) for f in msg.fields]
    return {"type_name": msg.name, "fields": fields}


def hash_description(description: Description) -> str:
    """`RIHS01_<sha256 hex>` of a description, serialized exactly as rosidl does."""
    text = json.dumps(description, ensure_ascii=True, allow_nan=False, separators=(", ", ": "))
    return PREFIX + hashlib.sha256(text.encode("utf-8")).hexdigest()


def rihs01(type_name: str, types: Mapping[str, MsgType]) -> str:
    """The RIHS01 hash of `type_name` ("pkg/msg/Type", "pkg/srv/Foo_Event", "pkg/srv/Foo"),
    its types looked up in `types`. Raises FormatError as `type_description` does."""
    return hash_description(type_description(canonical(type_name), types))


def definition_hash(type_name: str, encoding: str, text: str) -> str:
    """The RIHS01 hash of `type_name` from a definition as rosbag2 stores it ("ros2msg" or
    "ros2idl" text, service events with their `.srv`), with `BUILTINS` for the types such
    definitions leave out. Raises FormatError when it does not parse or misses a type."""
    types = {**BUILTINS, **parse_definition(type_name, encoding, text)}
    return rihs01(type_name, types)


def hash_of_definition(type_name: str, definition: Definition | None) -> str:
    """`definition_hash` of the definition a bag stores for `type_name`, or "" when it has
    none or one we cannot read (no hash rather than a wrong one)."""
    if definition is None or not definition.text:
        return ""
    try:
        return definition_hash(type_name, definition.encoding, definition.text)
    except FormatError:
        return ""
