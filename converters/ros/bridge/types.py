"""Which ROS 2 type a ROS1 type becomes, and back, with its definition text and transcoder.

A bag written for the other ROS must name each topic's type as that ROS does and carry the
definition text its tools read: rosbag2's `ros2msg` text (the root `.msg`, then each type it
uses after 80 `=` and `MSG: pkg/Type`, depth first in name order, as
`rosbag2_cpp/.../local_message_definition_source.cpp` builds it), or ROS1's `message_definition`
(genmsg's full text: the root, then every dependency in field order, whose md5 ROS checks).

Most types keep their fields: `time`/`duration` become `builtin_interfaces/Time`/`Duration`
(the same 8 bytes). The rest is the list ROS itself changed between 1 and 2: `Header` lost its
`seq`; `rosgraph_msgs/Log` became `rcl_interfaces/msg/Log` (a flat stamp, levels 10..50, no
frame or topics); `tf/tfMessage` became `tf2_msgs/msg/TFMessage`; `CameraInfo`'s `D K R P`
became `d k r p`. A type ROS 2 does not know is copied by structure when its names are valid
ROS 2 names; when they are not, or a field has no counterpart (`wstring`), `Unmappable` says
why in one line, so that the exporter can tell which topic it leaves out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from nanorec.errors import FormatError

from ..ros1 import msgdef as ros1def
from ..ros2 import msgdef as ros2def
from . import texts
from .transcode import SIZE, Slot, cdr_to_ros1, ros1_to_cdr

SEPARATOR: Final = "=" * 80
_PACKAGE: Final = re.compile(r"^[a-z]([a-z0-9_]?[a-z0-9]+)*$")
_TYPE: Final = re.compile(r"^[A-Z][A-Za-z0-9]*$")
_CONSTANT: Final = re.compile(r"^[A-Z]([A-Z0-9_]?[A-Z0-9]+)*$")
_LINE: Final = re.compile(r"^(\s*)([A-Za-z][\w/]*)(\s*\[\d*\])?(\s+)([A-Za-z]\w*)(.*)$")

HEADER1: Final = "std_msgs/Header"
LOG1: Final = "rosgraph_msgs/Log"
HEADER_SLOTS: Final = (
    Slot("uint32", "seq", ros2=False),
    Slot("time", "stamp"),
    Slot("string", "frame_id"),
)
LOG_SLOTS: Final = (
    Slot("uint32", "seq", ros2=False),
    Slot("time", "stamp"),
    Slot("string", "frame_id", ros2=False),
    Slot("uint8", "level", level=True),
    *(Slot("string", name) for name in ("name", "msg", "file", "function")),
    Slot("uint32", "line"),
    Slot("string", "topics", -1, ros2=False),
)
#: ROS1 type -> ROS 2 type, where the name changed.
RENAMED: Final = {
    HEADER1: "std_msgs/msg/Header",
    LOG1: "rcl_interfaces/msg/Log",
    "tf/tfMessage": "tf2_msgs/msg/TFMessage",
}
#: ROS1 type -> {ROS1 field: ROS 2 field}, where field names changed.
FIELD_RENAMES: Final = {"sensor_msgs/CameraInfo": {"D": "d", "K": "k", "R": "r", "P": "p"}}
NOTE_HEADER: Final = "std_msgs/Header.seq does not exist in ROS 2: dropped (0 when coming back)"
NOTE_LOG: Final = (
    "rosgraph_msgs/Log <-> rcl_interfaces/msg/Log: levels 1/2/4/8/16 <-> 10/20/30/40/50 "
    "(others unchanged); header.seq, header.frame_id and topics do not exist in ROS 2 "
    "(0, empty and none when coming back)"
)
_ROS2_TEXTS: Final = {
    "builtin_interfaces/Time": texts.ROS2_TIME,
    "builtin_interfaces/Duration": texts.ROS2_DURATION,
    "std_msgs/Header": texts.ROS2_HEADER,
    "rcl_interfaces/Log": texts.ROS2_LOG,
}
_ROS2_DEPS: Final = {
    "builtin_interfaces/Time": [],
    "builtin_interfaces/Duration": [],
    "std_msgs/Header": ["builtin_interfaces/Time"],
    "rcl_interfaces/Log": ["builtin_interfaces/Time"],
}


class Unmappable(Exception):
    """A type that has no counterpart on the other side; `reason` is one line."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


@dataclass(frozen=True)
class Crossing:
    """One type's crossing: the other side's name and full definition text, and the
    function converting each payload (ROS1 -> CDR or CDR -> ROS1)."""

    source_type: str
    target_type: str
    target_text: str
    transcode: Callable[[bytes | memoryview], bytes | bytearray]
    notes: tuple[str, ...]


def _short2(name: str) -> str:
    """`pkg/msg/Type` -> `pkg/Type`, as ROS 2 `.msg` texts and `MSG:` lines write it."""
    parts = name.split("/")
    return f"{parts[0]}/{parts[-1]}"


def ros2_name(ros1_type: str) -> str:
    """The ROS 2 name of a ROS1 type (`pkg/Type` -> `pkg/msg/Type`, or its new name)."""
    if ros1_type in RENAMED:
        return RENAMED[ros1_type]
    package, _, name = ros1_type.partition("/")
    if not _PACKAGE.match(package) or not _TYPE.match(name):
        raise Unmappable(f"{ros1_type} is not a valid ROS 2 type name")
    return f"{package}/msg/{name}"


def _named(ros1_type: str) -> bool:
    """Whether a ROS1 field type is a named type in ROS 2 (time, duration, messages)."""
    return ros1_type in ("time", "duration") or (ros1_type not in SIZE and ros1_type != "string")


def _token2(ros1_type: str) -> str:
    """A field type as a ROS 2 `.msg` text writes it."""
    if not _named(ros1_type):
        return ros1_type
    if ros1_type in ("time", "duration"):
        return f"builtin_interfaces/{ros1_type.capitalize()}"
    return _short2(ros2_name(ros1_type))


def _sections(root: str, text: str) -> dict[str, str]:
    """Each type's own text in a ROS1 full definition (as written, comments and all)."""
    out: dict[str, list[str]] = {root: []}
    current = root
    lines = text.splitlines()
    for i, line in enumerate(lines):
        following = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if re.fullmatch(r"={3,}", line.strip()) and following.startswith("MSG:"):
            current = ""
            continue
        if not current and line.strip().startswith("MSG:"):
            current = line.strip()[4:].strip()
            out.setdefault(current, [])
            continue
        out.setdefault(current, []).append(line)
    return {name: "\n".join(body).strip("\n") + "\n" for name, body in out.items() if name}


def _check(
    name: str, fields: list[ros1def.Field], expected: list[tuple[str, str, int | None]]
) -> None:
    if [(f.type, f.name, f.array) for f in fields] != expected:
        raise Unmappable(f"{name} does not have the fields of ROS's {name}")


def ros1_to_ros2(ros1_type: str, ros1_definition: str) -> Crossing:
    """The ROS 2 side of a ROS1 connection's type (`message_definition` as the bag has it)."""
    try:
        types = ros1def.parse_definition(ros1_type, ros1_definition)
    except FormatError as error:
        raise Unmappable(f"the definition of {ros1_type} does not parse: {error.message}") from None
    raw = _sections(ros1_type, ros1_definition)
    plan: dict[str, tuple[Slot, ...]] = {}
    texts2: dict[str, str] = {}
    deps2: dict[str, list[str]] = {}
    notes: list[str] = []

    def visit(name: str, within: frozenset[str]) -> None:
        if name in plan:
            return
        if name in within:
            raise Unmappable(f"{name} contains itself, which ROS 2 cannot express")
        if name not in types:
            raise Unmappable(f"the definition of {ros1_type} has no type {name}")
        fields = types[name]
        key2 = _short2(ros2_name(name))
        if name == HEADER1:
            _check(name, fields, [("uint32", "seq", None), ("time", "stamp", None),
                                  ("string", "frame_id", None)])  # fmt: skip
            plan[name], texts2[key2] = HEADER_SLOTS, texts.ROS2_HEADER
            notes.append(NOTE_HEADER)
        elif name == LOG1:
            _check(name, fields, [(HEADER1, "header", None), ("byte", "level", None),
                   *(("string", n, None) for n in ("name", "msg", "file", "function")),
                   ("uint32", "line", None), ("string", "topics", -1)])  # fmt: skip
            plan[name], texts2[key2] = LOG_SLOTS, texts.ROS2_LOG
            notes.append(NOTE_LOG)
        else:
            renames = FIELD_RENAMES.get(name, {})
            slots = []
            for f in fields:
                new = renames.get(f.name, f.name)
                if not _PACKAGE.match(new):
                    raise Unmappable(f"field {f.name!r} of {name} is not a valid ROS 2 field name")
                slots.append(Slot(f.type, new, f.array))
            plan[name] = tuple(slots)
            texts2[key2] = _ros2_text(name, raw.get(name, ""), fields, renames, notes)
            if renames:
                notes.append(
                    f"{name}: fields " + ", ".join(f"{a} -> {b}" for a, b in renames.items())
                )
        deps2[key2] = sorted({_token2(s.type) for s in plan[name] if s.ros2 and _named(s.type)})
        for s in plan[name]:
            if s.type not in SIZE and s.type != "string":
                visit(s.type, within | {name})

    visit(ros1_type, frozenset())
    for key, text in _ROS2_TEXTS.items():
        texts2.setdefault(key, text)
        deps2.setdefault(key, _ROS2_DEPS[key])
    seen: set[str] = set()

    def full(key: str) -> str:
        result = texts2[key]
        for dep in deps2[key]:
            if dep not in seen:
                seen.add(dep)
                result += f"\n{SEPARATOR}\nMSG: {dep}\n" + full(dep)
        return result

    target = ros2_name(ros1_type)
    text = full(_short2(target))
    try:
        transcode = ros1_to_cdr(plan, ros1_type)
    except FormatError as error:
        raise Unmappable(error.message) from None
    return Crossing(ros1_type, target, text, transcode, tuple(dict.fromkeys(notes)))


def _ros2_text(
    name: str, text: str, fields: list[ros1def.Field], renames: Mapping[str, str], notes: list[str]
) -> str:
    """A ROS1 type's own text with ROS 2 type tokens and names (comments kept)."""
    out: list[str] = []
    index = 0
    for line in text.splitlines():
        code = line.split("#", 1)[0].strip()
        match = _LINE.match(line)
        if not code or match is None:
            out.append(line)
            continue
        indent, base, array, space, field, rest = match.groups()
        if "=" in code:  # a constant
            if (base not in SIZE or base in ("time", "duration")) and base != "string":
                notes.append(f"{name}: constant {field} ({base}) dropped")
                continue
            if not _CONSTANT.match(field):
                notes.append(f"{name}: constant {field} dropped (not a ROS 2 constant name)")
                continue
            if base == "string":
                value = rest.strip()[1:].strip()
                escaped = value.replace("\\", "\\\\").replace('"', '\\"')
                out.append(f'{indent}string {field}="{escaped}"')
            else:
                out.append(line)
            continue
        f = fields[index]
        index += 1
        out.append(
            f"{indent}{_token2(f.type)}{(array or '').strip()}{space}"
            f"{renames.get(field, field)}{rest}"
        )
    return "\n".join(out) + "\n"


def ros2_to_ros1(ros2_type: str, definitions: Mapping[str, tuple[str, str]]) -> Crossing:
    """The ROS1 side of a ROS 2 topic's type (`definitions` as the bag stores them)."""
    root2 = ros2def.canonical(ros2_type)
    if ros2def.service_of(root2):
        raise Unmappable(f"{root2} is a service type: ROS1 bags hold no service messages")
    try:
        types = ros2def.load(definitions, root2)
    except FormatError as error:
        raise Unmappable(f"the definition of {root2} does not parse: {error.message}") from None
    plan: dict[str, tuple[Slot, ...]] = {}
    texts1: dict[str, str] = {}
    deps1: dict[str, list[str]] = {}
    notes: list[str] = []
    reverse = {RENAMED[k]: k for k in (HEADER1, LOG1)}  # tf2_msgs/TFMessage exists in ROS1

    def ros1_name(name2: str) -> str:
        if name2 == "builtin_interfaces/msg/Time":
            return "time"
        if name2 == "builtin_interfaces/msg/Duration":
            return "duration"
        return reverse.get(name2, _short2(name2))

    def visit(name2: str, within: frozenset[str]) -> str:
        name1 = ros1_name(name2)
        if name1 in plan or name1 in ("time", "duration"):
            return name1
        if name2 in within:
            raise Unmappable(f"{name2} contains itself, which ROS1 cannot express")
        if name2 not in types:
            raise Unmappable(f"the definition of {root2} has no type {name2}")
        msg = types[name2]
        shape = [(f.type, f.name, f.array) for f in msg.fields]
        if name1 == HEADER1:
            if shape != [
                ("builtin_interfaces/msg/Time", "stamp", None),
                ("string", "frame_id", None),
            ]:
                raise Unmappable(f"{name2} does not have the fields of ROS's {name2}")
            plan[name1], texts1[name1], deps1[name1] = HEADER_SLOTS, texts.ROS1_HEADER, []
            notes.append(NOTE_HEADER)
            return name1
        if name1 == LOG1:
            expected = [("builtin_interfaces/msg/Time", "stamp", None), ("uint8", "level", None),
                        *(("string", n, None) for n in ("name", "msg", "file", "function")),
                        ("uint32", "line", None)]  # fmt: skip
            if shape != expected:
                raise Unmappable(f"{name2} does not have the fields of ROS's {name2}")
            plan[name1], texts1[name1], deps1[name1] = LOG_SLOTS, texts.ROS1_LOG, [HEADER1]
            notes.append(NOTE_LOG)
            visit("std_msgs/msg/Header", within | {name2})
            return name1
        renames = {v: k for k, v in FIELD_RENAMES.get(name1, {}).items()}
        fields = [f for f in msg.fields if f.name != ros2def.EMPTY_FIELD or len(msg.fields) > 1]
        slots, lines = [], []
        for c in msg.constants:
            if c.type not in SIZE and c.type != "string":
                notes.append(f"{name2}: constant {c.name} ({c.type}) dropped")
                continue
            value = c.value
            if (
                c.type == "string"
                and len(value) >= 2
                and value[0] == value[-1]
                and value[0] in "'\""
            ):
                value = value[1:-1]
            elif c.type == "bool":  # genmsg reads a Python literal: ROS 2's true is True
                value = {"true": "True", "false": "False"}.get(value.strip().lower(), value)
            lines.append(f"{c.type} {c.name}={value}")
        for f in fields:
            if f.type in ("wstring", "wchar"):
                raise Unmappable(f"field {f.name!r} of {name2} is a {f.type}, which ROS1 lacks")
            if f.bound:
                notes.append(f"{name2}.{f.name}: the bound of {f.bound} elements is dropped")
            kind = (
                f.type if f.type in SIZE or f.type == "string" else visit(f.type, within | {name2})
            )
            name = renames.get(f.name, f.name)
            slots.append(Slot(kind, name, f.array))
            array = "" if f.array is None else ("[]" if f.array < 0 else f"[{f.array}]")
            lines.append(f"{kind}{array} {name}")
        if renames:
            notes.append(f"{name2}: fields " + ", ".join(f"{a} -> {b}" for a, b in renames.items()))
        plan[name1] = tuple(slots)
        texts1[name1] = "".join(line + "\n" for line in lines)
        deps1[name1] = list(dict.fromkeys(s.type for s in slots if s.type in plan))
        return name1

    root1 = visit(root2, frozenset())
    if root1 in ("time", "duration"):
        raise Unmappable(f"{root2} is a ROS1 builtin ({root1}), not a message type")

    def every(name: str) -> list[str]:
        out: list[str] = []
        for dep in deps1[name]:
            out += [dep, *every(dep)]
        return list(dict.fromkeys(out))

    parts = [texts1[root1] + "\n"]
    parts += [f"{SEPARATOR}\nMSG: {dep}\n{texts1[dep]}\n" for dep in every(root1)]
    try:
        transcode = cdr_to_ros1(plan, root1)
    except FormatError as error:
        raise Unmappable(error.message) from None
    return Crossing(root2, root1, "".join(parts)[:-1], transcode, tuple(dict.fromkeys(notes)))
