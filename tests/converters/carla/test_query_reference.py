"""A second, independent implementation of CARLA's three queries, diffed with `query.py`.

Everything under "the reference" is written straight from spec §7 (with §3, §5 and §9),
with `struct` only: it imports nothing from `nanorec.converters.carla`. It models CARLA's read
loop the way the spec describes it (§7.7): a `std::ifstream` whose failed reads leave the
target untouched, or partly overwritten by the bytes that were there; members and the
`Total` counter that keep their last value; a header read that fails at end of file and
so handles the last packet once more. Where CARLA would print uninitialised memory
(variable-length records read from a failed stream) the reference raises `Unknowable`
and the case is not compared.

The tests then compare the reference with `nanorec.converters.carla.query` byte for byte on the
real recordings, the committed samples and freshly generated recordings of several
families, cut short in both ways a crashed server leaves a file.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from nanorec.converters.carla.generate import generate
from nanorec.converters.carla.query import actors_blocked, collisions, file_info

# ==================================================================== the reference


class Unknowable(Exception):
    """CARLA would print uninitialised memory here (spec §7.7, §9): nothing to compare."""


@dataclass(frozen=True)
class Release:
    """What one CARLA release's query knows: packet ids (§4), vector width, labels (§7.3)."""

    ids: dict[int, str]
    vec: str = "f"  # "f": UE4 3 x f32; "d": UE5 3 x f64 (§1)
    colons: bool = False  # "Rotation: (" / "Brake: " (0.9.15-era servers on, §7.8)
    bones_blank: bool = True  # the empty line after WalkerBones (0.9.14 to 0.9.16, §7.2)
    frame_end_newline: bool = False  # 2026 ue4-dev (§7.4)
    invalid_other: bool = True  # id 0xFFFFFFFF forced to 'o' (~0.9.13+, §7.5)


_BASE = {0: "start", 1: "end", 2: "add", 3: "del", 4: "parent", 5: "collision"}
_096 = {**_BASE, 6: "position", 7: "state", 8: "anim_vehicle", 9: "anim_walker"}
_0910 = {
    **_096,
    10: "vehicle_light",
    11: "scene_light",
    12: "kinematics",
    13: "bounding_box",
    14: "platform_time",
    15: "physics",
    16: "light_time",
    17: "trigger_volume",
}
_0914 = {**_0910, 19: "bones", 20: "visual_time"}
_0915 = {**_0914, 21: "wheels", 22: "biker"}

RELEASES = {
    "0.9.4-0.9.9": Release(_096, invalid_other=False),
    "0.9.10-0.9.13": Release(_0910, invalid_other=False),
    "0.9.14": Release(_0914),
    "0.9.15": Release(_0915, colons=True),
    "nightly-2023": Release({**_0914, 21: "door", 22: "wheels", 23: "biker"}, colons=True),
    "0.9.16": Release({**_0915, 23: "door"}, colons=True),
    "ue4-dev-2026": Release(
        {**_0915, 23: "door", 24: "weather"},
        colons=True,
        bones_blank=False,
        frame_end_newline=True,
    ),
    "ue5-0.10": Release({**_0914, 21: "door", 22: "wheels", 23: "biker"}, vec="d", colons=True),
}


def g(x: float) -> str:
    """C `%g` of a double (§7.1); glibc prints a NaN's sign."""
    if math.isnan(x):
        return "-nan" if math.copysign(1.0, x) < 0 else "nan"
    return "%g" % x  # noqa: UP031 - the C format, on purpose


def f0(x: float) -> str:
    """C `%.0f` (`std::fixed`, `setprecision(0)`), half to even on the exact value."""
    return "%.0f" % x  # noqa: UP031


def c_string(raw: bytes) -> str:
    """An FString as the reader rebuilds it: zero-filled buffer, so a NUL ends it (§1)."""
    return raw.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")


class Stream:
    """A `std::ifstream`: a short read keeps the bytes it got and fails the stream."""

    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data = data
        self.pos = pos
        self.good = True

    def value(self, old: bytes) -> bytes:
        """`ReadValue` into a variable that holds `old`: the new value (maybe partial)."""
        if not self.good:
            return old
        got = self.data[self.pos : self.pos + len(old)]
        self.pos += len(got)
        if len(got) < len(old):
            self.good = False
        return got + old[len(got) :]

    def u16(self, old: int) -> int:
        return int.from_bytes(self.value(old.to_bytes(2, "little")), "little")

    def string(self) -> str:
        length = self.value(b"\0\0")
        if not self.good:
            raise Unknowable("a string length read from a failed stream")
        raw = self.value(bytes(int.from_bytes(length, "little")))
        if not self.good:
            raise Unknowable("a cut string")
        return c_string(raw)

    def take(self, fmt: str) -> tuple[Any, ...]:
        """A whole record that must be there (variable-length records)."""
        raw = self.value(bytes(struct.calcsize(fmt)))
        if not self.good:
            raise Unknowable("a variable-length record cut short")
        return struct.unpack(fmt, raw)

    def skip(self, size: int) -> None:
        if self.good:
            self.pos += size  # seekg past the end does not fail the stream


def header_of(data: bytes, tz: str) -> tuple[str, int] | None:
    """The four header lines (§7.2) and where the packets start; None for a bad magic."""
    s = Stream(data)
    version = int.from_bytes(s.value(b"\0\0"), "little")
    try:
        magic = s.string()
        date = int.from_bytes(s.value(bytes(8)), "little", signed=True)
        map_name = s.string()
    except Unknowable:
        if len(data) < 18:  # the magic itself is cut: it cannot compare equal
            return None
        raise
    if magic != "CARLA_RECORDER":
        return None
    zone = timezone.utc if tz == "UTC" else ZoneInfo(tz)
    stamp = datetime.fromtimestamp(date, zone).strftime("%m/%d/%y %H:%M:%S")
    return f"Version: {version}\nMap: {map_name}\nDate: {stamp}\n\n", s.pos


# Fixed records, file order (§5): the struct format of one record (V = the vector).
_RECORDS = {
    "del": "<I",
    "parent": "<II",
    "collision": "<IIIBB",
    "position": "<I{v}{v}",
    "state": "<IBfB",
    "anim_vehicle": "<IfffBi",
    "anim_walker": "<If",
    "door": "<IBB",
    "vehicle_light": "<II",
    "scene_light": "<ifffffBB",
    "kinematics": "<I{v}{v}",
    "bounding_box": "<I{v}{v}",
    "trigger_volume": "<I{v}{v}",
    "light_time": "<Ifff",
    "weather": "<14f",
}
# CARLA reads BoundingBox and TriggerVolume into one member (ActorBoundingBox).
_MEMBER = {"trigger_volume": "bounding_box"}


@dataclass
class Loop:
    """CARLA's query loop state: header, frame, `Total` and the record members (§7.7)."""

    data: bytes
    release: Release
    s: Stream
    header_id: int = 0  # the query object's members start zeroed
    header_size: int = 0
    frame: bytes = bytes(24)
    total: int = 0
    members: dict[str, bytes] = field(default_factory=dict)

    @property
    def frame_id(self) -> int:
        return int(struct.unpack("<Q", self.frame[:8])[0])

    @property
    def duration(self) -> float:
        return float(struct.unpack("<d", self.frame[8:16])[0])

    @property
    def elapsed(self) -> float:
        return float(struct.unpack("<d", self.frame[16:])[0])

    def packets(self) -> Iterator[str | None]:
        """The kind of each packet as the `while (File)` loop meets it."""
        while self.s.good:
            self.header_id = self.s.value(bytes([self.header_id]))[0]
            self.header_size = int.from_bytes(
                self.s.value(self.header_size.to_bytes(4, "little")), "little"
            )
            yield self.release.ids.get(self.header_id)

    def read_frame(self) -> None:
        self.frame = self.s.value(self.frame)

    def count(self) -> int:
        self.total = self.s.u16(self.total)
        return self.total

    def record(self, kind: str) -> tuple[Any, ...]:
        fmt = _RECORDS[kind].format(v="3" + self.release.vec)
        slot = _MEMBER.get(kind, kind)
        old = self.members.get(slot, bytes(struct.calcsize(fmt)))
        self.members[slot] = self.s.value(old)
        return struct.unpack(fmt, self.members[slot])

    def actor(self) -> tuple[int, int, tuple[float, ...], str, list[tuple[str, str]]]:
        """One EventAdd record (§5.2): id, type, location, blueprint id, attributes."""
        if not self.s.good:
            raise Unknowable("EventAdd read from a failed stream")
        v = "3" + self.release.vec
        actor_id, actor_type, *rest = self.s.take(f"<IB{v}{v}I")
        location = tuple(float(x) for x in rest[:3])
        blueprint = self.s.string()
        (n,) = self.s.take("<H")
        attributes = []
        for _ in range(int(n)):
            self.s.take("<B")
            key = self.s.string()
            attributes.append((key, self.s.string()))
        return int(actor_id), int(actor_type), location, blueprint, attributes


def _actor_entry(loop: Loop) -> tuple[int, int, str]:
    """EventAdd.Read as the collision and blocked queries use it: id, type, blueprint.

    Deterministic even on a cut: the fixed part keeps the member's old bytes under the
    new ones, and a string read from a failed stream is empty (CARLA zero-fills the buffer
    before reading); the attribute count is an uninitialised local then, but attributes
    do not reach these queries.
    """
    v = struct.calcsize("3" + loop.release.vec)
    old = loop.members.get("add", bytes(4 + 1 + 2 * v + 4))
    loop.members["add"] = raw = loop.s.value(old)
    actor_id, actor_type = struct.unpack_from("<IB", raw)

    def string() -> str:
        length = loop.s.value(b"\0\0") if loop.s.good else b""
        if not loop.s.good:
            return ""
        text = loop.s.value(bytes(int.from_bytes(length, "little")))
        return c_string(text) if loop.s.good else c_string(text.rstrip(b"\0"))

    name = string()
    if loop.s.good:
        for _ in range(loop.s.u16(0)):
            loop.s.value(b"\0")
            string()
            string()
    return actor_id, actor_type, name


def _light_names(flags: int) -> str:
    # §7.2: this order, Interior before Fog; "None" when none of the 11 bits is set.
    order = (
        ("Position", 0x1),
        ("LowBeam", 0x2),
        ("HighBeam", 0x4),
        ("Brake", 0x8),
        ("RightBlinker", 0x10),
        ("LeftBlinker", 0x20),
        ("Reverse", 0x40),
        ("Interior", 0x100),
        ("Fog", 0x80),
        ("Special1", 0x200),
        ("Special2", 0x400),
    )
    return " ".join(name for name, bit in order if flags & bit) or "None"


_DOOR_NAMES = (
    " Front Left ",
    " Front Right ",
    " Rear Left ",
    " Rear Right ",
    " Hood ",
    " Trunk ",
    " All ",
)


def _vec(values: tuple[Any, ...]) -> str:
    return ", ".join(g(float(v)) for v in values)


def _section_line(kind: str, r: tuple[Any, ...], release: Release) -> str:
    """One record line of a show_all section (§7.2/§7.3)."""
    if kind == "position":
        rot = "Rotation: (" if release.colons else "Rotation ("
        return f"  Id: {r[0]} Location: ({_vec(r[1:4])}) {rot}{_vec(r[4:7])})\n"
    if kind == "state":
        state = chr(0x30 + int(r[3]))
        return f"  Id: {r[0]} state: {state} frozen: {r[1]} elapsedTime: {_vec(r[2:3])}\n"
    if kind == "anim_vehicle":
        brake = "Brake: " if release.colons else "Brake "
        return (
            f"  Id: {r[0]} Steering: {_vec(r[1:2])} Throttle: {_vec(r[2:3])} "
            f"{brake}{_vec(r[3:4])} Handbrake: {r[4]} Gear: {r[5]}\n"
        )
    if kind == "anim_walker":
        return f"  Id: {r[0]} speed: {_vec(r[1:2])}\n"
    if kind == "door":
        door = int(r[1])
        tail = _DOOR_NAMES[door] + "\n" if door < len(_DOOR_NAMES) else ""
        return f"  Id: {r[0]}\n  Doors opened: {tail}"
    if kind == "vehicle_light":
        return f"  Id: {r[0]} {_light_names(int(r[1]))}\n"
    if kind == "scene_light":
        on = "True" if r[6] else "False"
        return f"  Id: {r[0]} enabled: {on} intensity: {_vec(r[1:2])} RGB_color: ({_vec(r[2:5])})\n"
    if kind == "kinematics":
        return (
            f"  Id: {r[0]} linear_velocity: ({_vec(r[1:4])}) angular_velocity: ({_vec(r[4:7])})\n"
        )
    if kind in ("bounding_box", "trigger_volume"):
        return f"  Id: {r[0]} origin: ({_vec(r[1:4])}) extension: ({_vec(r[4:7])})\n"
    if kind == "light_time":
        return (
            f"  Id: {r[0]} green_time: {_vec(r[1:2])} yellow_time: {_vec(r[2:3])} "
            f"red_time: {_vec(r[3:4])}\n"
        )
    raise AssertionError(kind)


_WEATHER = [
    "Cloudiness",
    "Precipitation",
    "PrecipitationDeposits",
    "WindIntensity",
    "SunAzimuthAngle",
    "SunAltitudeAngle",
    "FogDensity",
    "FogDistance",
    "FogFalloff",
    "Wetness",
    "ScatteringIntensity",
    "MieScatteringScale",
    "RayleighScatteringScale",
    "DustStorm",
]

_TITLES = {
    "position": " Positions: ",
    "state": " State traffic lights: ",
    "anim_vehicle": " Vehicle animations: ",
    "anim_walker": " Walker animations: ",
    "door": " Vehicle door animations: ",
    "vehicle_light": " Vehicle light animations: ",
    "scene_light": " Scene light changes: ",
    "kinematics": " Dynamic actors: ",
    "bounding_box": " Actor bounding boxes: ",
    "trigger_volume": " Actor trigger volumes: ",
    "light_time": " Traffic Light time events: ",
}


def _wheel_size(data: bytes, start: int, end: int) -> int:
    """48-byte wheels from 0.9.12, 36 before: the size that ends the packet exactly (§10.5)."""
    for size in (48, 36):
        pos = start + 2
        for _ in range(int.from_bytes(data[start : start + 2], "little")):
            pos += 53
            for element in (8, 12, 8, size):
                pos += 4 + element * int.from_bytes(data[pos : pos + 4], "little")
        if pos == end:
            return size
    return 48


def _physics_block(loop: Loop, body_start: int, body_end: int) -> str:
    """One UE4 PhysicsControl record (§5.15) printed as §7.2's 17 lines."""
    s = loop.s
    head = s.take("<I5fB4f3f")
    arrays = []
    for element in ("<2f", "<3f", "<2f"):
        (n,) = s.take("<I")
        arrays.append([s.take(element) for _ in range(int(n))])
    (n_wheels,) = s.take("<I")
    wheel = "<9f3f" if _wheel_size(loop.data, body_start, body_end) == 48 else "<6f3f"
    wheels = [s.take(wheel) for _ in range(int(n_wheels))]
    torque, gears, steering = arrays
    lines = [
        f"  Id: {head[0]}\n",
        f"   max_rpm = {_vec(head[1:2])}\n",
        f"   MOI = {_vec(head[2:3])}\n",
        f"   damping_rate_full_throttle = {_vec(head[3:4])}\n",
        f"   damping_rate_zero_throttle_clutch_engaged = {_vec(head[4:5])}\n",
        f"   damping_rate_zero_throttle_clutch_disengaged = {_vec(head[5:6])}\n",
        f"   use_gear_auto_box = {'true' if head[6] else 'false'}\n",
        "   gear_switch_time = 0.5\n",  # not in the file: LibCarla's default (§7.2)
        f"   clutch_strength = {_vec(head[7:8])}\n",
        f"   final_ratio = {_vec(head[8:9])}\n",
        f"   mass = {_vec(head[9:10])}\n",
        f"   drag_coefficient = {_vec(head[10:11])}\n",
        f"   center_of_mass = ({_vec(head[11:14])})\n",
        "   torque_curve ="
        + "".join(f" ({_vec(p)})" for p in sorted(torque, key=lambda p: p[0]))
        + "\n",
        "   steering_curve ="
        + "".join(f" ({_vec(p)})" for p in sorted(steering, key=lambda p: p[0]))
        + "\n",
        "   forward_gears:\n",
    ]
    lines += [
        f"    gear {i}: ratio {_vec(r[0:1])} down_ratio {_vec(r[1:2])} up_ratio {_vec(r[2:3])}\n"
        for i, r in enumerate(gears)
    ]
    lines.append("   wheels:\n")
    for i, w in enumerate(wheels):
        lines.append(
            f"    wheel {i}: tire_friction {_vec(w[0:1])} damping_rate {_vec(w[1:2])}"
            f" max_steer_angle {_vec(w[2:3])} radius {_vec(w[3:4])}"
            f" max_brake_torque {_vec(w[4:5])} max_handbrake_torque {_vec(w[5:6])}"
            f" position ({_vec(w[-3:])})\n"
        )
    return "".join(lines)


def ref_info(data: bytes, release: Release, *, show_all: bool = False, tz: str = "UTC") -> str:
    """`show_recorder_file_info` (§7.2-7.4, §7.7) for UE4 forms 0.9.6 onwards."""
    head = header_of(data, tz)
    if head is None:
        return "File is not a CARLA recorder\n"
    out = [head[0]]
    loop = Loop(data, release, Stream(data, head[1]))
    printed = False

    def frame_line() -> None:
        nonlocal printed
        out.append(f"Frame {loop.frame_id} at {g(loop.elapsed)} seconds\n")
        printed = True

    def counted_events() -> int:
        n = loop.count()
        if n > 0 and not printed:
            frame_line()
        return n

    for kind in loop.packets():
        body_start, body_end = loop.s.pos, loop.s.pos + loop.header_size
        if kind == "start":
            loop.read_frame()
            if show_all:
                frame_line()
            else:
                printed = False
        elif kind == "end":
            if release.frame_end_newline:
                out.append("\n")
        elif kind == "add":
            for _ in range(counted_events()):
                actor_id, actor_type, location, blueprint, attributes = loop.actor()
                out.append(
                    f" Create {actor_id}: {blueprint} ({actor_type}) at ({_vec(location)})\n"
                )
                out += [f"  {key} = {value}\n" for key, value in attributes]
        elif kind == "del":
            for _ in range(counted_events()):
                out.append(f" Destroy {loop.record('del')[0]}\n")
        elif kind == "parent":
            for _ in range(counted_events()):
                child, parent = loop.record("parent")
                out.append(f" Parenting {child} with {parent} (parent)\n")
        elif kind == "collision":
            for _ in range(counted_events()):
                cid, id1, id2, hero1, hero2 = loop.record("collision")
                out.append(
                    f" Collision id {cid} between {id1}{' (hero) ' if hero1 else ''}"
                    f" with {id2}{' (hero) ' if hero2 else ''}\n"
                )
        elif kind == "weather":  # 2026 ue4-dev, both modes (§7.4)
            n = counted_events()
            out.append(f" Weathers: {n}\n")
            for _ in range(n):
                values = loop.record("weather")
                out.append(
                    "  "
                    + " ".join(
                        f"{label}: {g(float(v))}" for label, v in zip(_WEATHER, values, strict=True)
                    )
                    + "\n"
                )
        elif not show_all or kind is None or kind in ("visual_time", "wheels", "biker"):
            loop.s.skip(loop.header_size)
        elif kind in _TITLES:
            n = counted_events()
            out.append(f"{_TITLES[kind]}{n}\n")
            out += [_section_line(kind, loop.record(kind), release) for _ in range(n)]
        elif kind == "platform_time":
            if not printed:
                frame_line()
            raw = loop.s.value(loop.members.get("platform_time", bytes(8)))
            loop.members["platform_time"] = raw
            out.append(f" Current platform time: {g(struct.unpack('<d', raw)[0])}\n")
        elif kind == "physics":
            n = counted_events()
            out.append(f" Physics Control events: {n}\n")
            if n and not loop.s.good:
                raise Unknowable("PhysicsControl read from a failed stream")
            out += [_physics_block(loop, body_start, body_end) for _ in range(n)]
        elif kind == "bones":
            n = counted_events()
            out.append(f" Walkers Bones: {n}\n")
            for _ in range(n):
                if not loop.s.good:
                    raise Unknowable("WalkerBones read from a failed stream")
                walker_id, bones = loop.s.take("<IH")
                out.append(f"  Id: {walker_id}\n")
                v = "3" + release.vec
                for _ in range(int(bones)):
                    name = loop.s.string()
                    values = loop.s.take(f"<{v}{v}")
                    out.append(
                        f'     Bone: "{name}" relative: Loc({_vec(values[:3])})'
                        f" Rot({_vec(values[3:])})\n"
                    )
            if release.bones_blank:
                out.append("\n")
        else:
            loop.s.skip(loop.header_size)
    out.append(f"\nFrames: {loop.frame_id}\nDuration: {g(loop.elapsed)} seconds\n")
    return "".join(out)


_LETTERS = "ovwtha"  # indexed by the actor type number (§7.5)


def ref_collisions(data: bytes, release: Release, type1: str, type2: str) -> str:
    """`show_recorder_collisions` (§7.5)."""
    head = header_of(data, "UTC")
    if head is None:
        return "File is not a CARLA recorder\n"
    columns = f"{'Time':>8} {'Types':>6} {'Id':>6} {'Actor 1':<35} {'Id':>6} {'Actor 2':<35}\n"
    out = [head[0], columns]
    loop = Loop(data, release, Stream(data, head[1]))
    actors: dict[int, tuple[int, str]] = {}
    last_add = 0
    old: set[tuple[int, int]] = set()
    new: set[tuple[int, int]] = set()
    fixed = False
    for kind in loop.packets():
        if kind == "start":
            loop.read_frame()
            old, new = new, set()
        elif kind == "add":
            for _ in range(loop.count()):
                actor_id, actor_type, blueprint = _actor_entry(loop)
                actors[actor_id] = (actor_type, blueprint)
                last_add = actor_id
        elif kind == "del":
            for _ in range(loop.count()):
                loop.record("del")
                actors.pop(last_add, None)  # the erase slip: the last *added* id
        elif kind == "collision":
            for _ in range(loop.count()):
                _cid, id1, id2, hero1, hero2 = loop.record("collision")
                letters = []
                for actor_id in (id1, id2):
                    entry = actors.setdefault(int(actor_id), (0, ""))
                    if release.invalid_other and actor_id == 0xFFFFFFFF:
                        letters.append("o")
                    else:
                        letters.append(_LETTERS[entry[0]])
                ok1 = type1 in ("a", letters[0]) or (type1 == "h" and bool(hero1))
                ok2 = type2 in ("a", letters[1]) or (type2 == "h" and bool(hero2))
                if not (ok1 and ok2):
                    continue
                pair = (int(id1), int(id2))
                if pair not in old:
                    fixed = True
                    out.append(
                        f"{f0(loop.elapsed):>8}   {letters[0]} {letters[1]}  {id1:>6} "
                        f"{actors[pair[0]][1]:<35} {id2:>6} {actors[pair[1]][1]:<35}\n"
                    )
                new.add(pair)
        else:
            loop.s.skip(loop.header_size)
    duration = f0(loop.elapsed) if fixed else g(loop.elapsed)
    out.append(f"\nFrames: {loop.frame_id}\nDuration: {duration} seconds\n")
    return "".join(out)


def _f32(x: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", x))[0])


def _distance(a: tuple[float, ...], b: tuple[float, ...], vec: str) -> float:
    """`FVector::Distance`, in float for UE4 (each operation rounded to f32)."""
    if vec == "d":
        return math.sqrt((b[0] - a[0]) ** 2 + (b[1] - a[1]) ** 2 + (b[2] - a[2]) ** 2)
    d = [_f32(y - x) for x, y in zip(a, b, strict=True)]
    sq = [_f32(v * v) for v in d]
    return _f32(math.sqrt(_f32(_f32(sq[0] + sq[1]) + sq[2])))


def ref_blocked(data: bytes, release: Release, min_time: float, min_distance: float) -> str:
    """`show_recorder_actors_blocked` (§7.6); end-of-file actors in first-insertion order."""
    head = header_of(data, "UTC")
    if head is None:
        return "File is not a CARLA recorder\n"
    out = [head[0], f"{'Time':>8} {'Id':>6} {'Actor':<35} {'Duration':>10}\n"]
    loop = Loop(data, release, Stream(data, head[1]))
    # id -> [blueprint, last position, time, duration]; dict order = insertion order
    actors: dict[int, list[Any]] = {}
    last_add = 0
    results: list[tuple[float, str]] = []

    def row(time: float, actor_id: int, name: object, duration: float) -> None:
        results.append((duration, f"{f0(time):>8} {actor_id:>6} {name!s:<35} {f0(duration):>10}\n"))

    for kind in loop.packets():
        if kind == "start":
            loop.read_frame()
        elif kind == "add":
            for _ in range(loop.count()):
                actor_id, _type, blueprint = _actor_entry(loop)
                actors[actor_id] = [blueprint, (0.0, 0.0, 0.0), 0.0, 0.0]
                last_add = actor_id
        elif kind == "del":
            for _ in range(loop.count()):
                loop.record("del")
                actors.pop(last_add, None)
        elif kind == "position":
            for _ in range(loop.count()):
                r = loop.record("position")
                actor_id = int(r[0])
                here = tuple(float(v) for v in r[1:4])
                state = actors.setdefault(actor_id, ["", (0.0, 0.0, 0.0), 0.0, 0.0])
                if _distance(state[1], here, release.vec) < min_distance:
                    if state[3] == 0:
                        state[2] = loop.elapsed
                    state[3] = float(state[3]) + loop.duration
                else:
                    if float(state[3]) >= min_time:
                        row(float(state[2]), actor_id, state[0], float(state[3]))
                    state[3] = 0.0
                    state[1] = here
        else:
            loop.s.skip(loop.header_size)
    for actor_id, state in actors.items():
        if float(state[3]) >= min_time:
            row(float(state[2]), actor_id, state[0], float(state[3]))
    results.sort(key=lambda item: -item[0])  # multimap<greater>: stable for equal keys
    out += [text for _, text in results]
    out.append(f"\nFrames: {loop.frame_id}\nDuration: {g(loop.elapsed)} seconds\n")
    return "".join(out)


# ==================================================================== the comparisons

REPO = Path(__file__).resolve().parents[3]
REALDATA = REPO.parent / "shared" / "realdata" / "carla"
SAMPLES = REPO / "samples"

# Real recordings and their release (from their packets: spec §10; 0.9.10 has 36-byte wheels).
REAL = {
    "tkortz_isorc20_2762.rec": "0.9.4-0.9.9",
    "scenario_runner_2020_DistanceToLaneCenter.log": "0.9.10-0.9.13",
    "scenario_runner_DistanceToLaneCenter.log": "0.9.10-0.9.13",
    "mastersproj_scenic_scenario1.log": "0.9.10-0.9.13",
    "supp878_crash.log": "0.9.15",
}
SAMPLE_FILES = {
    "carla-0.9.10-0.9.13-additional-town03.log": "0.9.10-0.9.13",
    "carla-0.9.15-crash-town05.log": "0.9.15",
    "carla-0.9.15-town03.log": "0.9.15",
    "carla-0.9.16-town03.log": "0.9.16",
    "carla-ue4-dev-2026-town03.log": "ue4-dev-2026",
    "carla-ue5-0.10-town10hd.log": "ue5-0.10",
}


def _compare(expected: Callable[[], str], actual: Callable[[], str]) -> bool:
    """Byte-for-byte, with the first differing line in the message; False if unknowable."""
    try:
        want = expected()
    except Unknowable:
        return False
    got = actual()
    if got != want:
        got_lines, want_lines = got.splitlines(True), want.splitlines(True)
        for i, (a, b) in enumerate(zip(got_lines, want_lines, strict=False)):
            if a != b:
                pytest.fail(f"line {i + 1}: query.py {a!r} != reference {b!r}")
        pytest.fail(f"length: query.py {len(got_lines)} lines, reference {len(want_lines)}")
    return True


PAIRS = (("a", "a"), ("v", "a"), ("v", "v"), ("h", "a"), ("a", "o"), ("w", "v"))
THRESHOLDS = ((0.0, 1.0), (0.5, 10.0), (1.0, 100.0), (3.0, 500.0), (60.0, 100.0))


def _all_queries(
    path: Path,
    release_name: str,
    *,
    forced: bool = False,
    pairs: tuple[tuple[str, str], ...] = PAIRS,
    thresholds: tuple[tuple[float, float], ...] = THRESHOLDS,
    tz: str = "UTC",
) -> int:
    """Compare the queries on `path`; returns how many could be compared. `forced` gives
    query.py the family instead of letting it detect one (a file cut inside frame 1 may
    not show its release)."""
    data = path.read_bytes()
    fam = {"family": release_name} if forced else {}
    release = RELEASES[release_name]
    compared = 0
    modes = (False, True) if release.vec == "f" else (False,)
    for mode in modes:
        compared += _compare(
            lambda mode=mode: ref_info(data, release, show_all=mode, tz=tz),
            lambda mode=mode: file_info(path, show_all=mode, tz=tz, **fam),
        )
    for t1, t2 in pairs:
        compared += _compare(
            lambda: ref_collisions(data, release, t1, t2),  # noqa: B023
            lambda: collisions(path, t1, t2, **fam),  # noqa: B023
        )
    for min_time, min_distance in thresholds:
        compared += _compare(
            lambda: ref_blocked(data, release, min_time, min_distance),  # noqa: B023
            lambda: actors_blocked(path, min_time, min_distance, hash_order="file", **fam),  # noqa: B023
        )
    return compared


@pytest.mark.slow
@pytest.mark.realdata
@pytest.mark.parametrize("name", sorted(REAL))
def test_real_recordings_match_the_reference(name: str) -> None:
    path = REALDATA / name
    if not path.is_file():
        pytest.skip(f"{path} is not present")
    assert _all_queries(path, REAL[name]) > 0


@pytest.mark.parametrize("name", sorted(SAMPLE_FILES))
def test_samples_match_the_reference(name: str) -> None:
    # A server east of UTC (the Date line is local time, spec §7.8).
    assert _all_queries(SAMPLES / name, SAMPLE_FILES[name], tz="Asia/Kolkata") > 0


GENERATED = [
    ("0.9.4-0.9.9", {}),
    ("0.9.10-0.9.13", {"additional_data": True, "physics_wheel_size": 36}),
    ("0.9.10-0.9.13", {"additional_data": True}),
    ("0.9.14", {"additional_data": True}),
    ("0.9.15", {"additional_data": True, "crash": True}),
    ("0.9.15", {"crash": "mid-packet"}),
    ("0.9.16", {"additional_data": True, "crash": "mid-packet"}),
    ("nightly-2023", {"crash": True}),
    ("ue4-dev-2026", {"additional_data": True}),
    ("ue5-0.10", {"crash": True}),
]


@pytest.mark.parametrize(("family", "options"), GENERATED, ids=lambda v: str(v))
def test_generated_recordings_match_the_reference(
    tmp_path: Path, family: str, options: dict[str, object]
) -> None:
    path = tmp_path / "gen.log"
    path.write_bytes(generate(family, seed=7, frames=60, **options))
    assert _all_queries(path, family) > 0


def _cuts(data: bytes, start: int, count: int) -> list[int]:
    """Offsets to cut at: packet boundaries and points inside headers and bodies."""
    bounds = []
    pos = start
    while pos + 5 <= len(data):
        bounds.append(pos)
        pos += 5 + int.from_bytes(data[pos + 1 : pos + 5], "little")
    step = max(1, len(bounds) // count)
    cuts = []
    for i, at in enumerate(bounds[::step]):
        size = int.from_bytes(data[at + 1 : at + 5], "little")
        cuts += [at, at + 1 + i % 4, at + 5 + (size * (i % 3)) // 3]
    return sorted(set(cuts))


@pytest.mark.parametrize(
    ("family", "options"),
    [
        ("0.9.10-0.9.13", {"additional_data": True, "physics_wheel_size": 36}),
        ("0.9.15", {"additional_data": True}),
        ("0.9.16", {}),
    ],
    ids=lambda v: str(v),
)
@pytest.mark.slow
def test_files_cut_anywhere_match_the_reference(
    tmp_path: Path, family: str, options: dict[str, object]
) -> None:
    data = generate(family, seed=3, frames=12, walkers=2, vehicles=3, **options)
    head = header_of(data, "UTC")
    assert head is not None
    path = tmp_path / "cut.log"
    compared = 0
    for cut in _cuts(data, head[1], 40):
        path.write_bytes(data[:cut])
        compared += _all_queries(
            path,
            family,
            forced=True,
            pairs=(("a", "a"), ("v", "a")),
            thresholds=((0.0, 1.0), (0.2, 10.0)),
        )
    assert compared > 100
