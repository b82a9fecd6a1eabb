"""CARLA's three recorder queries, reproduced byte for byte without the simulator.

`client.show_recorder_file_info`, `show_recorder_collisions` and
`show_recorder_actors_blocked` run on the server and return text that users parse, diff
and paste into bug reports. Reproducing that text exactly needs more than the file
layout: the per-release labels (spec §7.3/§7.4), the C library's number formatting and
local time (§7.1, §7.8, see `textfmt`), the hash-map order of the blocked query (see
`hashorder`), and CARLA's slips, which are kept on purpose:

- EventDel erases the id of the *last EventAdd record read*, not the deleted id (§7.5);
- the collision query's stream stays `fixed`/precision 0 after its first row, so its
  trailer prints `Duration: 46 seconds` (§7.5);
- category letters are indexed by the actor type number, so type 4 is `h` and 5 is `a`;
- the blocked query adds the last frame's duration of -1 (§7.6);
- the read loop checks end-of-file only before a header, so at the end the last packet is
  handled once more with a failed stream: stale counts and records are reused (§7.7).
  For a normal file that is a harmless second FrameEnd (a newline in the 2026 form); for
  a file cut after another packet it repeats that packet's lines, as CARLA does. A cut
  inside a packet overlays the bytes that are there onto the previous record (field by
  field reads on a little-endian machine); variable-length records after a cut are not
  reproduced (CARLA reads uninitialised lengths there).

Every function walks the file once from a read-only memory map and yields text chunks, so
a 1 GB recording streams. Packet sizes are trusted for framing (CARLA ignores them for
packets it reads, which only matters for corrupt files).

Label forms (`TextForm`), chosen from the detected release family unless forced:
`0.9.4` (no frame lines, no positions, Parenting prints the child twice, "Unknown packet
id" lines), `0.9.5` (frame lines, `Location (`), `0.9.6` (0.9.6 to 0.9.14: `Location: (`,
`Rotation (`, `Brake `), `0.9.15` (0.9.15, nightlies, 0.9.16 and UE5 0.10: `Rotation: (`,
`Brake: `; the door section wherever the family has a door packet), `2026` (ue4-dev after
Feb 2026: Weather lines, a newline at every FrameEnd, no blank line after WalkerBones).
`labels="old"|"new"` overrides just the colon question.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import tzinfo
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from nanorec.errors import BadMagicError, NanorecError

from .detect import resolve
from .hashorder import KeyOrder, key_order
from .ids import Engine, Family, Kind
from .records import (
    CURVE_DTYPE,
    GEAR_DTYPE,
    PHYSICS_UE4_DTYPE,
    PHYSICS_UE5_DTYPE,
    PHYSICS_WHEEL_DTYPES,
    ActorAdd,
    Cursor,
    fixed_dtype,
)
from .textfmt import fmt_f0, fmt_g, format_date, pad_left, pad_right, parse_zone
from .walk import iter_walk, walk

NOT_A_RECORDER = "File is not a CARLA recorder\n"
MAGIC = b"CARLA_RECORDER"
_U16 = struct.Struct("<H")
_HEADER = struct.Struct("<BI")
_FRAME = struct.Struct("<Qdd")

Labels = Literal["old", "new"]
HashOrderName = Literal["libc++", "libstdc++", "msvc", "file"]


# --------------------------------------------------------------------------- text forms


@dataclass(frozen=True)
class TextForm:
    """What one era of CARLA's query code prints (spec §7.2-7.4)."""

    name: str
    frame_line: bool = True  # show_all prints "Frame ..." at every FrameStart
    positions: bool = True  # show_all prints the Position section
    parent_twice: bool = False  # Parenting prints the child id twice
    unknown_ids: bool = False  # unknown packet ids print a line (ids 0-7 known)
    location_colon: bool = True  # "Location: (" rather than "Location ("
    colon_labels: bool = False  # "Rotation: (" and "Brake: "
    bones_blank_line: bool = True  # an empty line after each WalkerBones section
    frame_end_newline: bool = False  # every FrameEnd prints "\n"
    weather: bool = False  # Weather packets print
    invalid_other: bool = True  # collision id 0xFFFFFFFF is forced to category 'o'


FORMS: dict[str, TextForm] = {
    form.name: form
    for form in (
        TextForm(
            "0.9.4",
            frame_line=False,
            positions=False,
            parent_twice=True,
            unknown_ids=True,
            location_colon=False,
            invalid_other=False,
        ),
        TextForm(
            "0.9.5", parent_twice=True, unknown_ids=True, location_colon=False, invalid_other=False
        ),
        TextForm("0.9.6", invalid_other=False),
        TextForm("0.9.15", colon_labels=True),
        TextForm(
            "2026",
            colon_labels=True,
            bones_blank_line=False,
            frame_end_newline=True,
            weather=True,
        ),
    )
}

# The default form per release family. 0.9.10-0.9.14 keep the old `Rotation (`/`Brake `
# labels: real 0.9.10/0.9.11 servers print them (spec §7.8), the query of a 0.9.13-based
# fork (HARPLab/carla @0d399b1, DReyeVR) and the 0.9.14-era upstream source (@828cb76)
# still have them; real 0.9.15-era servers print the colon forms (spec §7.8). So the
# switch lies between 0.9.14 and 0.9.15; `labels="new"` overrides.
_FAMILY_FORMS = {
    "0.9.4-0.9.9": "0.9.6",
    "0.9.10-0.9.13": "0.9.6",
    "0.9.14": "0.9.6",
    "0.9.15": "0.9.15",
    "nightly-2023": "0.9.15",
    "0.9.16": "0.9.15",
    "ue4-dev-2026": "2026",
    "ue5-0.10": "0.9.15",
    "ue5-dev-2026": "2026",
}

# `gear_switch_time` is not in the file; the query prints LibCarla's default of the
# `rpc::VehiclePhysicsControl` it reads into. Every LibCarla with `final_ratio` and
# `forward_gears` (0.9.10+, i.e. every release that writes PhysicsControl) defaults it to
# 0.5; only 2019 LibCarla had 0.0, and no release of that era wrote the packet.
GEAR_SWITCH_TIME_DEFAULT = 0.5


def _resolve_form(
    fam: Family, has_anims: bool, form: str | None, labels: Labels | None
) -> TextForm:
    if form is not None:
        try:
            chosen = FORMS[form]
        except KeyError:
            raise ValueError(
                f"unknown text form {form!r}; choose one of {', '.join(FORMS)}"
            ) from None
    else:
        name = _FAMILY_FORMS.get(fam.name, "0.9.15")
        if fam.name == "0.9.4-0.9.9" and not has_anims:
            name = "0.9.5"  # 0.9.4/0.9.5 files (no animation packets); 0.9.4 only if forced
        chosen = FORMS[name]
    if labels is not None:
        if labels not in ("old", "new"):
            raise ValueError(f"labels must be 'old' or 'new', not {labels!r}")
        chosen = replace(chosen, colon_labels=labels == "new")
    return chosen


# --------------------------------------------------------------------------- file access


@dataclass(frozen=True)
class RecorderHeader:
    """The file header as CARLA's query reads it (missing bytes read as zero)."""

    version: int
    date: int  # Unix seconds
    map_name: str
    size: int  # offset of the first packet
    complete: bool


def _cstring(raw: bytes) -> str:
    # CARLA copies an FString's bytes into a zero-filled buffer and converts from UTF-8, so
    # an embedded NUL ends the string.
    cut = raw.find(b"\0")
    return (raw if cut < 0 else raw[:cut]).decode("utf-8", "surrogateescape")


def _overlay(fresh: bytes, stale: bytes) -> bytes:
    """A partial read over a previous value: the new bytes first, the old ones after."""
    return fresh + stale[len(fresh) :]


def _parse_header(buf: Any) -> RecorderHeader | None:
    """The header, or None when the magic string is wrong (CARLA's only check)."""
    size = len(buf)
    raw = bytes(buf[: min(size, 4 + 0xFFFF)])
    version = int.from_bytes(_overlay(raw[0:2], b"\0\0"), "little")
    if len(raw) < 4:
        return None
    (magic_size,) = _U16.unpack_from(raw, 2)
    if _cstring(raw[4 : 4 + magic_size]) != MAGIC.decode():
        return None
    pos = 4 + magic_size
    date_raw = bytes(buf[pos : pos + 8])
    date = int.from_bytes(_overlay(date_raw, bytes(8)), "little", signed=True)
    pos += 8
    name_size_raw = bytes(buf[pos : pos + 2])
    name_size = int.from_bytes(_overlay(name_size_raw, b"\0\0"), "little")
    pos += 2
    name_raw = bytes(buf[pos : pos + name_size])
    complete = pos + name_size <= size
    return RecorderHeader(version, date, _cstring(name_raw), min(pos + name_size, size), complete)


@dataclass(frozen=True)
class _Packet:
    """One packet as the query loop meets it.

    `body` holds the bytes present (fewer than `size` when the file is cut inside the
    body). `rerun` marks the extra pass CARLA makes at end of file: the header read failed,
    so the previous (or partially read) id is handled again with no data at all.
    """

    pid: int
    offset: int  # absolute offset of the body
    size: int
    body: bytes
    rerun: bool = False

    @property
    def complete(self) -> bool:
        return not self.rerun and len(self.body) == self.size


@dataclass(frozen=True)
class Truncation:
    """Where a cut-short recording stops: the offset of the incomplete packet and why."""

    offset: int
    reason: str


def _iter_packets(buf: Any, start: int, *, rerun: bool = True) -> Iterator[_Packet | Truncation]:
    """Walk the packets with the codec's walker; yield a `Truncation` for a cut tail.

    A body cut short is yielded with the bytes present. With `rerun`, the walk ends the
    way CARLA's loop does (see `_Packet.rerun`): the last id is handled once more, or the
    id of a header cut after its first byte.
    """
    size = len(buf)
    last_pid = 0  # the query object's header starts zeroed: id 0 (FrameStart)
    cut: Truncation | None = None
    for packets in iter_walk(buf, start):
        _release(buf, packets.start)
        ids = packets.ids.tolist()
        offsets = packets.offsets.tolist()
        sizes = packets.sizes.tolist()
        for pid, off, length in zip(ids, offsets, sizes, strict=True):
            yield _Packet(pid, off + 5, length, bytes(buf[off + 5 : off + 5 + length]))
        if ids:
            last_pid = ids[-1]
        if packets.truncation is not None:
            cut = Truncation(packets.truncation.offset, packets.truncation.reason)
    if cut is not None:
        yield cut
        if cut.offset + 5 <= size:
            pid, length = _HEADER.unpack_from(buf, cut.offset)
            yield _Packet(pid, cut.offset + 5, length, bytes(buf[cut.offset + 5 : size]))
            return
        last_pid = buf[cut.offset]
    if rerun:
        yield _Packet(last_pid, -1, 0, b"", rerun=True)


_DONTNEED = getattr(mmap, "MADV_DONTNEED", None)


def _release(buf: Any, upto: int) -> None:
    """Let the kernel drop the mapped pages already walked, so a 1 GB file's resident
    size stays flat (they are clean file pages: re-reading them just faults them in)."""
    if _DONTNEED is not None and isinstance(buf, mmap.mmap):
        aligned = upto - upto % mmap.PAGESIZE
        if aligned > 0:
            buf.madvise(_DONTNEED, 0, aligned)


class _Recording:
    """A read-only view of a recording file; closes what it opened."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._file = open(path, "rb")  # noqa: SIM115 - closed in close()
        length = os.fstat(self._file.fileno()).st_size
        self._map: mmap.mmap | None = None
        if length:
            self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
            self.buf: Any = self._map
        else:
            self.buf = b""

    def close(self) -> None:
        if self._map is not None:
            self._map.close()
        self._file.close()

    def __enter__(self) -> _Recording:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --------------------------------------------------------------------------- family detection


def _choose_family(buf: Any, start: int, fam: str | Family | None) -> tuple[Family, bool]:
    """The release family (the codec's detector unless forced) and whether the file has
    animation packets (8/9, written every frame since 0.9.6): 0.9.4/0.9.5 files have none.
    Only a complete frame (a FrameEnd) without them says so; a file cut inside its first
    frame is taken as 0.9.6+."""
    chosen = resolve(buf, start, fam).family
    head = walk(buf, start, limit=start + (1 << 20))
    has_anims = (
        bool(np.isin(head.ids, (8, 9)).any())
        or not bool((head.ids == 1).any())
        or chosen.name != "0.9.4-0.9.9"
    )
    return chosen, has_anims


# --------------------------------------------------------------------------- record helpers


def _flat(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The same bytes with every sub-array field split into scalars (fast `tolist`)."""
    names: list[str] = []
    formats: list[Any] = []
    offsets: list[int] = []
    assert dtype.fields is not None
    for name, (field, offset, *_rest) in dtype.fields.items():
        if field.subdtype is not None:
            base, shape = field.subdtype
            count = int(np.prod(shape))
            for i in range(count):
                names.append(f"{name}_{i}")
                formats.append(base)
                offsets.append(offset + i * base.itemsize)
        else:
            names.append(name)
            formats.append(field)
            offsets.append(offset)
    return np.dtype(
        {"names": names, "formats": formats, "offsets": offsets, "itemsize": dtype.itemsize}
    )


_FLAT: dict[tuple[Kind, Engine], np.dtype[Any]] = {}


def _flat_dtype(kind: Kind, engine: Engine) -> np.dtype[Any]:
    key = (kind, engine)
    if key not in _FLAT:
        _FLAT[key] = _flat(fixed_dtype(kind, engine))
    return _FLAT[key]


Row = tuple[Any, ...]


class _Stale:
    """CARLA's reused member records: the last bytes read per record slot."""

    def __init__(self) -> None:
        self.raw: dict[str, bytes] = {}
        self.total = 0  # the shared `uint16_t Total` local

    def count(self, packet: _Packet) -> int:
        """The `Total` CARLA reads at a packet's start: missing bytes keep the old ones."""
        old = self.total.to_bytes(2, "little")
        self.total = int.from_bytes(_overlay(packet.body[:2], old), "little")
        return self.total

    def records(
        self, packet: _Packet, slot: str, dtype: np.dtype[Any], *, counted: bool = True
    ) -> tuple[int, list[Row]]:
        """(count, records) as CARLA's loop sees them, stale values included."""
        body = packet.body
        size = dtype.itemsize
        if counted:
            if len(body) >= 2:
                count = _U16.unpack_from(body, 0)[0]
                self.total = count
                data = body[2:]
            else:
                if len(body) == 1:
                    self.total = (self.total & 0xFF00) | body[0]
                count = self.total
                data = b""
        else:
            count = 1
            data = body
        whole = min(count, len(data) // size)
        rows: list[Row] = []
        if whole:
            array = np.frombuffer(data, dtype=dtype, count=whole)
            rows = array.tolist()
            self.raw[slot] = data[(whole - 1) * size : whole * size]
        if whole < count:
            stale = self.raw.get(slot, bytes(size))
            partial = data[whole * size : (whole + 1) * size]
            if partial:
                stale = _overlay(partial, stale)
                self.raw[slot] = stale
            row = np.frombuffer(stale, dtype=dtype, count=1).tolist()[0]
            rows.extend([row] * (count - whole))
        return count, rows


def _var_records(packet: _Packet, parse: Callable[[Cursor], Any]) -> tuple[int, list[Any]]:
    """Complete variable-length records of a packet (none after a cut; see module doc)."""
    body = packet.body
    if len(body) < 2:
        return 0, []
    count = _U16.unpack_from(body, 0)[0]
    cur = Cursor(body, packet.offset, 2)
    records = []
    for _ in range(count):
        try:
            records.append(parse(cur))
        except NanorecError:
            break
    return count, records


def _table_entries(
    packet: _Packet, engine: Engine, stale: _Stale, last: bytes
) -> tuple[list[tuple[int, int, str]], bytes]:
    """EventAdd records as the collision and blocked actor tables see them (id, type,
    blueprint), failed-stream reads included (§7.7): after a cut the id and type keep the
    previous record's bytes under the new ones, and every string read after the failure is
    empty (CARLA zero-fills its buffer before reading). The attributes, read into an
    uninitialised count then, never reach these tables. `last` holds the previous id and
    type bytes; the updated value is returned with the entries."""
    count = stale.count(packet)
    body = packet.body
    cur = Cursor(body, packet.offset, min(2, len(body)))
    fixed = 5 + 2 * (12 if engine is Engine.UE4 else 24) + 4  # id, type, 2 vectors, uid
    entries: list[tuple[int, int, str]] = []
    while len(entries) < count:
        start = cur.pos
        try:
            rec = ActorAdd.parse(cur, engine)
        except NanorecError:
            rest = body[start:]
            last = _overlay(rest[:5], last)
            actor_id, actor_type = struct.unpack("<IB", last)
            name = ""
            if len(rest) >= fixed + 2:
                (length,) = _U16.unpack_from(rest, fixed)
                name = _cstring(rest[fixed + 2 : fixed + 2 + length])
            entries.append((actor_id, actor_type, name))
            entries += [(actor_id, actor_type, "")] * (count - len(entries))
            break
        last = struct.pack("<IB", rec.id, rec.type)
        entries.append((rec.id, rec.type, _clean(rec.blueprint)))
    return entries, last


def _byte_char(value: int) -> str:
    """A `char` streamed raw: one byte (non-ASCII kept via surrogateescape)."""
    return bytes([value & 0xFF]).decode("utf-8", "surrogateescape")


_LIGHT_NAMES = (
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
_DOORS = (
    " Front Left ",
    " Front Right ",
    " Rear Left ",
    " Rear Right ",
    " Hood ",
    " Trunk ",
    " All ",
)
_WEATHER_LABELS = (
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
)


def _rich_curve(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Keys as UE's `FRichCurve::AddKey` stores them: before the first key not earlier."""
    keys: list[tuple[float, float]] = []
    for x, y in points:
        index = 0
        while index < len(keys) and keys[index][0] < x:
            index += 1
        keys.insert(index, (x, y))
    return keys


# --------------------------------------------------------------------------- file info


@dataclass(frozen=True)
class QueryOptions:
    """How to print: the server's zone and C library, and the release form."""

    zone: tzinfo
    windows: bool
    family: Family
    form: TextForm


def _options(
    buf: Any,
    start: int,
    *,
    tz: str | tzinfo | None,
    windows: bool,
    fam: str | Family | None,
    labels: Labels | None,
    form: str | None,
) -> QueryOptions:
    zone = tz if isinstance(tz, tzinfo) else parse_zone(tz)
    chosen, has_anims = _choose_family(buf, start, fam)
    return QueryOptions(zone, windows, chosen, _resolve_form(chosen, has_anims, form, labels))


def _header_text(header: RecorderHeader, opts: QueryOptions) -> str:
    return (
        f"Version: {header.version}\nMap: {header.map_name}\n"
        f"Date: {format_date(header.date, opts.zone)}\n\n"
    )


class _Frame:
    """The query object's `Frame` member: id, duration and elapsed of the last FrameStart."""

    def __init__(self) -> None:
        self.raw = bytes(24)
        self.id, self.duration, self.elapsed = 0, 0.0, 0.0

    def read(self, packet: _Packet) -> None:
        if packet.rerun:
            return
        self.raw = _overlay(packet.body[:24], self.raw)
        self.id, self.duration, self.elapsed = _FRAME.unpack(self.raw)


def _trailer(frame: _Frame, elapsed_text: str) -> str:
    return f"\nFrames: {frame.id}\nDuration: {elapsed_text} seconds\n"


_SECTIONS = {
    Kind.POSITION: " Positions: ",
    Kind.STATE: " State traffic lights: ",
    Kind.ANIM_VEHICLE: " Vehicle animations: ",
    Kind.ANIM_WALKER: " Walker animations: ",
    Kind.VEHICLE_DOOR: " Vehicle door animations: ",
    Kind.VEHICLE_LIGHT: " Vehicle light animations: ",
    Kind.SCENE_LIGHT: " Scene light changes: ",
    Kind.KINEMATICS: " Dynamic actors: ",
    Kind.BOUNDING_BOX: " Actor bounding boxes: ",
    Kind.TRIGGER_VOLUME: " Actor trigger volumes: ",
    Kind.TRAFFIC_LIGHT_TIME: " Traffic Light time events: ",
    Kind.PHYSICS_CONTROL: " Physics Control events: ",
    Kind.WALKER_BONES: " Walkers Bones: ",
    Kind.WEATHER: " Weathers: ",
}
_SLOTS = {Kind.TRIGGER_VOLUME: "bounding_box"}  # CARLA reads both into one member
_KNOWN_0_9_5 = frozenset(range(8))


class _InfoPrinter:
    """`QueryInfo`: the per-packet text of `show_recorder_file_info`."""

    def __init__(self, opts: QueryOptions, show_all: bool) -> None:
        self.opts = opts
        self.show_all = show_all
        self.form = opts.form
        self.engine = opts.family.engine
        self.frame = _Frame()
        self.printed = False
        self.stale = _Stale()
        self.last_walker = 0  # CARLA's WalkerBones member keeps the last id read
        w = opts.windows
        self.g: Callable[[float], str] = (lambda x: fmt_g(x, windows=True)) if w else fmt_g

    def frame_line(self) -> str:
        self.printed = True
        return f"Frame {self.frame.id} at {self.g(self.frame.elapsed)} seconds\n"

    def packet(self, packet: _Packet) -> str:
        kind = self.opts.family.kind_of(packet.pid)
        form = self.form
        if form.unknown_ids and packet.pid not in _KNOWN_0_9_5:
            offset = -1 if packet.rerun else packet.offset
            return f"Unknown packet id: {_byte_char(packet.pid)} at offset {offset}\n"
        if kind is Kind.FRAME_START:
            self.frame.read(packet)
            if self.show_all and form.frame_line:
                return self.frame_line()
            self.printed = False
            return ""
        if kind is Kind.FRAME_END:
            return "\n" if form.frame_end_newline else ""
        if kind is Kind.EVENT_ADD:
            return self.event_add(packet)
        if kind in (Kind.EVENT_DEL, Kind.EVENT_PARENT, Kind.COLLISION):
            return self.events(kind, packet)
        if kind is Kind.WEATHER:
            return self.section(kind, packet) if form.weather else ""
        if not self.show_all or kind is None:
            return ""
        if kind is Kind.POSITION and not form.positions:
            return ""
        if kind is Kind.PLATFORM_TIME:
            out = "" if self.printed else self.frame_line()
            got = self.stale.records(
                packet, "platform_time", _flat_dtype(kind, self.engine), counted=False
            )
            return out + f" Current platform time: {self.g(got[1][0][0])}\n"
        if kind is Kind.PHYSICS_CONTROL:
            return self.physics(packet)
        if kind is Kind.WALKER_BONES:
            return self.bones(packet)
        if kind in _SECTIONS:
            return self.section(kind, packet)
        return ""

    def _count_line(self, count: int) -> str:
        return self.frame_line() if count > 0 and not self.printed else ""

    def event_add(self, packet: _Packet) -> str:
        count = self.stale.count(packet)
        records = _var_records(packet, lambda cur: ActorAdd.parse(cur, self.engine))[1]
        parts = [self._count_line(count)]
        g = self.g
        for rec in records:
            x, y, z = (float(v) for v in rec.location)
            parts.append(
                f" Create {rec.id}: {_clean(rec.blueprint)}"
                f" ({rec.type}) at ({g(x)}, {g(y)}, {g(z)})\n"
            )
            for attr in rec.attributes:
                parts.append(f"  {_clean(attr.id)} = {_clean(attr.value)}\n")
        return "".join(parts)

    def events(self, kind: Kind, packet: _Packet) -> str:
        got = self.stale.records(packet, kind.value, _flat_dtype(kind, self.engine))
        count, rows = got
        parts = [self._count_line(count)]
        if kind is Kind.EVENT_DEL:
            parts += [f" Destroy {row[0]}\n" for row in rows]
        elif kind is Kind.EVENT_PARENT:
            twice = self.form.parent_twice
            parts += [
                f" Parenting {row[0]} with {row[0] if twice else row[1]} (parent)\n" for row in rows
            ]
        else:
            for _cid, id1, id2, hero1, hero2 in ((r[0], r[1], r[2], r[3], r[4]) for r in rows):
                parts.append(
                    f" Collision id {_cid} between {id1}{' (hero) ' if hero1 else ''}"
                    f" with {id2}{' (hero) ' if hero2 else ''}\n"
                )
        return "".join(parts)

    def section(self, kind: Kind, packet: _Packet) -> str:
        got = self.stale.records(
            packet, _SLOTS.get(kind, kind.value), _flat_dtype(kind, self.engine)
        )
        count, rows = got
        parts = [self._count_line(count), f"{_SECTIONS[kind]}{count}\n"]
        line = self._line(kind)
        parts += [line(row) for row in rows]
        return "".join(parts)

    def _line(self, kind: Kind) -> Callable[[Row], str]:
        g = self.g
        form = self.form
        if kind is Kind.POSITION:
            loc = "Location: (" if form.location_colon else "Location ("
            rot = "Rotation: (" if form.colon_labels else "Rotation ("
            return lambda r: (
                f"  Id: {r[0]} {loc}{g(r[1])}, {g(r[2])}, {g(r[3])})"
                f" {rot}{g(r[4])}, {g(r[5])}, {g(r[6])})\n"
            )
        if kind is Kind.STATE:
            return lambda r: (
                f"  Id: {r[0]} state: {_byte_char(0x30 + r[3])} frozen: {r[1]}"
                f" elapsedTime: {g(r[2])}\n"
            )
        if kind is Kind.ANIM_VEHICLE:
            brake = "Brake: " if form.colon_labels else "Brake "
            return lambda r: (
                f"  Id: {r[0]} Steering: {g(r[1])} Throttle: {g(r[2])} {brake}{g(r[3])}"
                f" Handbrake: {r[4]} Gear: {r[5]}\n"
            )
        if kind is Kind.ANIM_WALKER:
            return lambda r: f"  Id: {r[0]} speed: {g(r[1])}\n"
        if kind is Kind.VEHICLE_DOOR:
            return lambda r: (
                f"  Id: {r[0]}\n  Doors opened: "
                + (f"{_DOORS[r[1]]}\n" if r[1] < len(_DOORS) else "")
            )
        if kind is Kind.VEHICLE_LIGHT:
            return lambda r: (
                f"  Id: {r[0]} "
                + (" ".join(name for name, bit in _LIGHT_NAMES if r[1] & bit) or "None")
                + "\n"
            )
        if kind is Kind.SCENE_LIGHT:
            return lambda r: (
                f"  Id: {r[0]} enabled: {'True' if r[6] else 'False'} intensity: {g(r[1])}"
                f" RGB_color: ({g(r[2])}, {g(r[3])}, {g(r[4])})\n"
            )
        if kind is Kind.KINEMATICS:
            return lambda r: (
                f"  Id: {r[0]} linear_velocity: ({g(r[1])}, {g(r[2])}, {g(r[3])})"
                f" angular_velocity: ({g(r[4])}, {g(r[5])}, {g(r[6])})\n"
            )
        if kind in (Kind.BOUNDING_BOX, Kind.TRIGGER_VOLUME):
            return lambda r: (
                f"  Id: {r[0]} origin: ({g(r[1])}, {g(r[2])}, {g(r[3])})"
                f" extension: ({g(r[4])}, {g(r[5])}, {g(r[6])})\n"
            )
        if kind is Kind.TRAFFIC_LIGHT_TIME:
            return lambda r: (
                f"  Id: {r[0]} green_time: {g(r[1])} yellow_time: {g(r[2])} red_time: {g(r[3])}\n"
            )
        if kind is Kind.WEATHER:
            return lambda r: (
                "  "
                + " ".join(f"{label}: {g(v)}" for label, v in zip(_WEATHER_LABELS, r, strict=True))
                + "\n"
            )
        raise AssertionError(kind)

    def physics(self, packet: _Packet) -> str:
        count = self.stale.count(packet)
        if packet.rerun:
            # Read again from a failed stream (§7.7): the stale `Total` prints; the records
            # would be a default control with uninitialised array sizes, not reproduced.
            return self._count_line(count) + f" Physics Control events: {count}\n"
        if self.engine is Engine.UE4:
            records = _var_records(packet, _physics_ue4_parser(packet))[1]
            block = self._physics_ue4
        else:
            records = _var_records(packet, _physics_ue5_parser(packet))[1]
            block = self._physics_ue5
        parts = [self._count_line(count), f" Physics Control events: {count}\n"]
        parts += [block(rec) for rec in records]
        return "".join(parts)

    def _curve_line(self, name: str, arrays: dict[str, list[Row]]) -> str:
        """`   <name> = (x, y) ...` with the points as the engine's curve holds them."""
        g = self.g
        points = "".join(f" ({g(x)}, {g(y)})" for x, y in _rich_curve(_pairs(arrays[name])))
        return f"   {name} ={points}\n"

    def _physics_ue4(self, rec: tuple[Row, dict[str, list[Row]]]) -> str:
        g = self.g
        head, arrays = rec
        (pid, max_rpm, moi, dfull, dengaged, ddisengaged, autobox, clutch, final, mass, drag,
         cx, cy, cz) = head  # fmt: skip
        lines = [
            f"  Id: {pid}\n",
            f"   max_rpm = {g(max_rpm)}\n",
            f"   MOI = {g(moi)}\n",
            f"   damping_rate_full_throttle = {g(dfull)}\n",
            f"   damping_rate_zero_throttle_clutch_engaged = {g(dengaged)}\n",
            f"   damping_rate_zero_throttle_clutch_disengaged = {g(ddisengaged)}\n",
            f"   use_gear_auto_box = {'true' if autobox else 'false'}\n",
            f"   gear_switch_time = {g(GEAR_SWITCH_TIME_DEFAULT)}\n",
            f"   clutch_strength = {g(clutch)}\n",
            f"   final_ratio = {g(final)}\n",
            f"   mass = {g(mass)}\n",
            f"   drag_coefficient = {g(drag)}\n",
            f"   center_of_mass = ({g(cx)}, {g(cy)}, {g(cz)})\n",
            self._curve_line("torque_curve", arrays),
            self._curve_line("steering_curve", arrays),
            "   forward_gears:\n",
        ]
        lines += [
            f"    gear {i}: ratio {g(r[0])} down_ratio {g(r[1])} up_ratio {g(r[2])}\n"
            for i, r in enumerate(arrays["forward_gears"])
        ]
        lines.append("   wheels:\n")
        for i, w in enumerate(arrays["wheels"]):
            px, py, pz = w[-3:]
            lines.append(
                f"    wheel {i}: tire_friction {g(w[0])} damping_rate {g(w[1])}"
                f" max_steer_angle {g(w[2])} radius {g(w[3])} max_brake_torque {g(w[4])}"
                f" max_handbrake_torque {g(w[5])} position ({g(px)}, {g(py)}, {g(pz)})\n"
            )
        return "".join(lines)

    def _physics_ue5(self, rec: tuple[Row, dict[str, list[Row]]]) -> str:
        # UE5 (spec §5.15): the wheel elements are raw memory with heap pointers, so only
        # their headings are printed; every other field is as CARLA 0.10 prints it.
        g = self.g
        head, arrays = rec
        names = _flat(PHYSICS_UE5_DTYPE).names or ()
        h = dict(zip(names, head, strict=True))
        lines = [
            f"  Id: {h['id']}\n",
            f"   max_torque = {g(h['max_torque'])}\n",
            f"   max_rpm = {g(h['max_rpm'])}\n",
            f"   MOI = {g(h['rev_up_moi'])}\n",
            f"   rev_down_rate = {g(h['rev_down_rate'])}\n",
            f"   differential_type = {_byte_char(h['differential_type'])}\n",
            f"   front_rear_split = {g(h['front_rear_split'])}\n",
            f"   use_gear_auto_box = {'true' if h['use_automatic_gears'] else 'false'}\n",
            f"   gear_change_time = {g(h['gear_change_time'])}\n",
            f"   final_ratio = {g(h['final_ratio'])}\n",
            f"   change_up_rpm = {g(h['change_up_rpm'])}\n",
            f"   change_down_rpm = {g(h['change_down_rpm'])}\n",
            f"   transmission_efficiency = {g(h['transmission_efficiency'])}\n",
            f"   mass = {g(h['mass'])}\n",
            f"   drag_coefficient = {g(h['drag_coefficient'])}\n",
            f"   center_of_mass = ({g(h['center_of_mass_0'])}, {g(h['center_of_mass_1'])},"
            f" {g(h['center_of_mass_2'])})\n",
            self._curve_line("torque_curve", arrays),
            self._curve_line("steering_curve", arrays),
            "   forward_gear_ratios:\n",
        ]
        lines += [
            f"    gear {i}: ratio {g(r[0])}\n" for i, r in enumerate(arrays["forward_gear_ratios"])
        ]
        lines.append("   reverse_gear_ratios:\n")
        lines += [
            f"    gear {i}: ratio {g(r[0])}\n" for i, r in enumerate(arrays["reverse_gear_ratios"])
        ]
        lines.append("   wheels:")
        lines += [f"\nwheel #{i}:\n" for i in range(len(arrays["wheels"]))]
        lines.append("\n")
        return "".join(lines)

    def bones(self, packet: _Packet) -> str:
        vec = "<f4" if self.engine is Engine.UE4 else "<f8"
        count = self.stale.count(packet)
        records = _var_records(packet, lambda cur: _parse_bones(cur, vec))[1]
        g = self.g
        parts = [self._count_line(count), f" Walkers Bones: {count}\n"]
        if len(packet.body) < 2:
            # Read again from a failed stream (§7.7; a crashed server's file ends after
            # this back-patched packet, §9): the stale count and walker id print, the bone
            # count is an uninitialised local in CARLA (bones not reproduced).
            parts += [f"  Id: {self.last_walker}\n"] * count
        for walker_id, bones in records:
            self.last_walker = walker_id
            parts.append(f"  Id: {walker_id}\n")
            parts += [
                f'     Bone: "{name}" relative: Loc({g(v[0])}, {g(v[1])}, {g(v[2])})'
                f" Rot({g(v[3])}, {g(v[4])}, {g(v[5])})\n"
                for name, v in bones
            ]
        if self.form.bones_blank_line:
            parts.append("\n")
        return "".join(parts)


def _clean(text: str) -> str:
    return _cstring(text.encode("utf-8", "surrogateescape"))


def _pairs(rows: list[Row]) -> list[tuple[float, float]]:
    return [(float(r[0]), float(r[1])) for r in rows]


def _parse_bones(cur: Cursor, vec: str) -> tuple[int, list[tuple[str, list[float]]]]:
    walker_id = cur.u32("WalkerBones walker id")
    count = cur.u16("WalkerBones bone count")
    vec_dtype = np.dtype(vec)
    bones = []
    for _ in range(count):
        name = _clean(cur.string("bone name"))
        values = cur.array(vec_dtype, 6, "bone transform").tolist()
        bones.append((name, values))
    return walker_id, bones


def _array_rows(cur: Cursor, dtype: np.dtype[Any], what: str) -> list[Row]:
    count = cur.u32(f"PhysicsControl {what} count")
    flat = _flat(dtype) if dtype.fields else np.dtype([("v", dtype)])
    rows: list[Row] = cur.array(flat, count, f"PhysicsControl {what}").tolist()
    return rows


def _physics_ue4_parser(packet: _Packet) -> Callable[[Cursor], tuple[Row, dict[str, list[Row]]]]:
    # Try 48-byte wheels, then 36 (spec §10.5), on the whole packet once.
    wheel = _physics_wheel_size(packet)

    def parse(cur: Cursor) -> tuple[Row, dict[str, list[Row]]]:
        head = cur.array(_flat(PHYSICS_UE4_DTYPE), 1, "PhysicsControl").tolist()[0]
        arrays = {
            "torque_curve": _array_rows(cur, CURVE_DTYPE, "torque_curve"),
            "forward_gears": _array_rows(cur, GEAR_DTYPE, "forward_gears"),
            "steering_curve": _array_rows(cur, CURVE_DTYPE, "steering_curve"),
            "wheels": _array_rows(cur, PHYSICS_WHEEL_DTYPES[wheel], "wheels"),
        }
        return head, arrays

    return parse


def _physics_wheel_size(packet: _Packet) -> int:
    for size in (48, 36):
        cur = Cursor(packet.body, packet.offset, 0)
        try:
            count = cur.u16("count")
            for _ in range(count):
                cur.take(PHYSICS_UE4_DTYPE.itemsize, "head")
                for element in (8, 12, 8, size):
                    cur.take(cur.u32("n") * element, "array")
        except NanorecError:
            continue
        if cur.remaining == 0:
            return size
    return 48


def _physics_ue5_parser(packet: _Packet) -> Callable[[Cursor], tuple[Row, dict[str, list[Row]]]]:
    def parse(cur: Cursor) -> tuple[Row, dict[str, list[Row]]]:
        head = cur.array(_flat(PHYSICS_UE5_DTYPE), 1, "PhysicsControl").tolist()[0]
        arrays = {
            "torque_curve": _array_rows(cur, CURVE_DTYPE, "torque_curve"),
            "forward_gear_ratios": _array_rows(cur, np.dtype("<f4"), "forward_gear_ratios"),
            "reverse_gear_ratios": _array_rows(cur, np.dtype("<f4"), "reverse_gear_ratios"),
            "steering_curve": _array_rows(cur, CURVE_DTYPE, "steering_curve"),
        }
        wheels = cur.u32("PhysicsControl wheels count")
        # The element size is not portable (raw memory); derive it from what is left when
        # this is the packet's last record, else use the computed 208 bytes.
        size = 208
        if wheels and cur.remaining % wheels == 0 and cur.remaining // wheels < 4096:
            size = cur.remaining // wheels
        cur.take(wheels * size, "PhysicsControl wheels")
        arrays["wheels"] = [()] * wheels
        return head, arrays

    return parse


def iter_file_info(
    path: str | os.PathLike[str],
    *,
    show_all: bool = False,
    tz: str | tzinfo | None = None,
    windows: bool = False,
    family: str | Family | None = None,
    labels: Labels | None = None,
    form: str | None = None,
) -> Iterator[str]:
    """Yield the text of `client.show_recorder_file_info(path, show_all)`, in chunks.

    `tz` is the server's local zone for the Date line (IANA name or `+HH:MM`; UTC by
    default); `windows` formats numbers as a Windows server does; `family` forces the
    release family (else detected); `labels` forces the old/new label forms and `form`
    a whole text form (see `FORMS`). A file that is not a recorder yields CARLA's one
    line, `File is not a CARLA recorder`. Raises OSError if the file cannot be read and
    ValueError for a bad option.
    """
    with _Recording(path) as rec:
        header = _parse_header(rec.buf)
        if header is None:
            yield NOT_A_RECORDER
            return
        opts = _options(
            rec.buf, header.size, tz=tz, windows=windows, fam=family, labels=labels, form=form
        )
        yield _header_text(header, opts)
        printer = _InfoPrinter(opts, show_all)
        if header.complete:
            chunk: list[str] = []
            pending = 0
            for item in _iter_packets(rec.buf, header.size):
                if isinstance(item, Truncation):
                    continue
                text = printer.packet(item)
                if text:
                    chunk.append(text)
                    pending += len(text)
                    if pending > 1 << 16:
                        yield "".join(chunk)
                        chunk, pending = [], 0
            if chunk:
                yield "".join(chunk)
        yield _trailer(printer.frame, printer.g(printer.frame.elapsed))


def file_info(path: str | os.PathLike[str], **options: Any) -> str:
    """The whole text of `show_recorder_file_info` (see `iter_file_info` for options)."""
    return "".join(iter_file_info(path, **options))


# --------------------------------------------------------------------------- collisions

_CATEGORIES = "ovwtha"
CATEGORY_LETTERS = frozenset(_CATEGORIES)


@dataclass(frozen=True)
class CollisionRow:
    """One printed collision: the frame's elapsed time (s), letters, ids and blueprints."""

    time: float
    frame: int
    collision_id: int
    type1: str
    type2: str
    id1: int
    id2: int
    actor1: str
    actor2: str
    hero1: bool
    hero2: bool


def _collision_letter(actor_type: int) -> str:
    # CARLA indexes a 6-letter array by the type number; types >= 6 read past it
    # (undefined behaviour), printed here as '?'.
    return _CATEGORIES[actor_type] if actor_type < len(_CATEGORIES) else "?"


def _iter_collision_rows(
    buf: Any, start: int, opts: QueryOptions, type1: str, type2: str, *, carla_eof: bool
) -> Iterator[CollisionRow | str | _TrailerMark]:
    """Rows of the collision query in print order (str items are unknown-id lines)."""
    engine = opts.family.engine
    form = opts.form
    actors: dict[int, tuple[int, str]] = {}
    old: set[tuple[int, int]] = set()
    new: set[tuple[int, int]] = set()
    last_add = 0
    last_bytes = bytes(5)  # the EventAdd member's id and type
    stale = _Stale()
    frame = _Frame()
    dtype = _flat_dtype(Kind.COLLISION, engine)
    for item in _iter_packets(buf, start, rerun=carla_eof):
        if isinstance(item, Truncation):
            continue
        if form.unknown_ids and item.pid not in _KNOWN_0_9_5:
            offset = -1 if item.rerun else item.offset
            yield f"Unknown packet id: {_byte_char(item.pid)} at offset {offset}\n"
            continue
        kind = opts.family.kind_of(item.pid)
        if kind is Kind.FRAME_START:
            frame.read(item)
            old, new = new, set()
        elif kind is Kind.EVENT_ADD:
            entries, last_bytes = _table_entries(item, engine, stale, last_bytes)
            for actor_id, actor_type, name in entries:
                actors[actor_id] = (actor_type, name)
                last_add = actor_id
        elif kind is Kind.EVENT_DEL:
            got = stale.records(item, "event_del", _flat_dtype(Kind.EVENT_DEL, engine))
            for _row in got[1]:
                actors.pop(last_add, None)  # CARLA's slip: erases the last *added* id
        elif kind is Kind.COLLISION:
            got = stale.records(item, "collision", dtype)
            for cid, id1, id2, hero1, hero2 in got[1]:
                info1 = actors.setdefault(id1, (0, ""))
                info2 = actors.setdefault(id2, (0, ""))
                letter1 = (
                    "o" if form.invalid_other and id1 == 0xFFFFFFFF else _collision_letter(info1[0])
                )
                letter2 = (
                    "o" if form.invalid_other and id2 == 0xFFFFFFFF else _collision_letter(info2[0])
                )
                ok1 = type1 == "a" or type1 == letter1 or (type1 == "h" and bool(hero1))
                ok2 = type2 == "a" or type2 == letter2 or (type2 == "h" and bool(hero2))
                if not (ok1 and ok2):
                    continue
                pair = (id1, id2)
                if pair not in old:
                    yield CollisionRow(
                        frame.elapsed, frame.id, cid, letter1, letter2, id1, id2,
                        info1[1], info2[1], bool(hero1), bool(hero2),
                    )  # fmt: skip
                new.add(pair)
        if item.rerun:
            break
    yield _TrailerMark(frame.id, frame.elapsed)


@dataclass(frozen=True)
class _TrailerMark:
    frame: int
    elapsed: float


def _collision_columns() -> str:
    return (
        pad_right("Time", 8)
        + " "
        + pad_right("Types", 6)
        + " "
        + pad_right("Id", 6)
        + " "
        + pad_left("Actor 1", 35)
        + " "
        + pad_right("Id", 6)
        + " "
        + pad_left("Actor 2", 35)
        + "\n"
    )


def _check_category(name: str, value: str) -> str:
    if value not in CATEGORY_LETTERS:
        raise ValueError(
            f"{name} must be one of o (other), v (vehicle), w (walker), t (traffic light), "
            f"h (hero), a (any); got {value!r}"
        )
    return value


def iter_collisions(
    path: str | os.PathLike[str],
    type1: str = "a",
    type2: str = "a",
    *,
    tz: str | tzinfo | None = None,
    windows: bool = False,
    family: str | Family | None = None,
    form: str | None = None,
) -> Iterator[str]:
    """Yield the text of `client.show_recorder_collisions(path, type1, type2)`.

    `type1`/`type2` are the category letters o, v, w, t, h, a. Other options as in
    `iter_file_info`. Raises ValueError for a bad letter, OSError if unreadable.
    """
    _check_category("type1", type1)
    _check_category("type2", type2)
    with _Recording(path) as rec:
        header = _parse_header(rec.buf)
        if header is None:
            yield NOT_A_RECORDER
            return
        opts = _options(
            rec.buf, header.size, tz=tz, windows=windows, fam=family, labels=None, form=form
        )
        yield _header_text(header, opts) + _collision_columns()
        f0 = (lambda x: fmt_f0(x, windows=True)) if windows else fmt_f0
        g = (lambda x: fmt_g(x, windows=True)) if windows else fmt_g
        fixed = False
        end = _TrailerMark(0, 0.0)
        if header.complete:
            for row in _iter_collision_rows(
                rec.buf, header.size, opts, type1, type2, carla_eof=True
            ):
                if isinstance(row, str):
                    yield row
                elif isinstance(row, _TrailerMark):
                    end = row
                else:
                    fixed = True
                    yield (
                        f"{pad_right(f0(row.time), 8)}   {row.type1} {row.type2}  "
                        f"{pad_right(str(row.id1), 6)} {pad_left(row.actor1, 35)} "
                        f"{pad_right(str(row.id2), 6)} {pad_left(row.actor2, 35)}\n"
                    )
        # After a row the stream stays `fixed` with precision 0 (spec §7.5).
        duration = f0(end.elapsed) if fixed else g(end.elapsed)
        yield f"\nFrames: {end.frame}\nDuration: {duration} seconds\n"


def collisions(
    path: str | os.PathLike[str], type1: str = "a", type2: str = "a", **options: Any
) -> str:
    """The whole text of `show_recorder_collisions` (see `iter_collisions`)."""
    return "".join(iter_collisions(path, type1, type2, **options))


# --------------------------------------------------------------------------- actors blocked


@dataclass(frozen=True)
class BlockedRow:
    """An actor that stayed within `min_distance` for at least `min_time` seconds."""

    time: float  # elapsed seconds when it stopped
    id: int
    actor: str  # blueprint id ('' when CARLA lost track of it, see the EventDel slip)
    duration: float  # seconds (includes the -1 of the last frame when stopped to the end)
    at_end: bool  # still stopped at the end of the file


class _Blocked:
    """`QueryBlocked`: per-actor stop tracking with CARLA's float arithmetic and map order."""

    def __init__(
        self, opts: QueryOptions, min_time: float, min_distance: float, order: KeyOrder
    ) -> None:
        self.engine = opts.family.engine
        self.min_time = min_time
        self.min_distance = min_distance
        self.order = order
        # id -> [type, blueprint, x, y, z, time, duration]
        self.actors: dict[int, list[Any]] = {}
        self.rows: list[BlockedRow] = []
        self.float_type = np.float32 if self.engine is Engine.UE4 else np.float64

    def entry(self, actor_id: int) -> list[Any]:
        state = self.actors.get(actor_id)
        if state is None:
            self.order.insert(actor_id)
            state = self.actors[actor_id] = [0, "", 0.0, 0.0, 0.0, 0.0, 0.0]
        return state

    def add(self, actor_id: int, actor_type: int, blueprint: str) -> None:
        self.order.insert(actor_id)
        self.actors[actor_id] = [actor_type, blueprint, 0.0, 0.0, 0.0, 0.0, 0.0]

    def erase(self, actor_id: int) -> None:
        if actor_id in self.actors:
            del self.actors[actor_id]
            self.order.erase(actor_id)

    def positions(self, rows: list[Row], frame: _Frame) -> None:
        ids = [r[0] for r in rows]
        if len(set(ids)) == len(ids):
            states = [self.entry(i) for i in ids]
            last = np.array([s[2:5] for s in states], dtype=self.float_type).reshape(-1, 3)
            here = np.array([r[1:4] for r in rows], dtype=self.float_type).reshape(-1, 3)
            near = (_distance(here, last).astype(np.float64) < self.min_distance).tolist()
            for row, state, close in zip(rows, states, near, strict=True):
                self._step(row, state, close, frame)
        else:  # an id twice in one packet: strictly in order
            for row in rows:
                state = self.entry(row[0])
                last = np.array([state[2:5]], dtype=self.float_type)
                here = np.array([row[1:4]], dtype=self.float_type)
                close = bool(_distance(here, last).astype(np.float64)[0] < self.min_distance)
                self._step(row, state, close, frame)

    def _step(self, row: Row, state: list[Any], close: bool, frame: _Frame) -> None:
        if close:
            if state[6] == 0:
                state[5] = frame.elapsed
            state[6] += frame.duration
            return
        if state[6] >= self.min_time:
            self.rows.append(BlockedRow(state[5], row[0], state[1], state[6], False))
        state[6] = 0.0
        state[2], state[3], state[4] = row[1], row[2], row[3]

    def finish(self) -> list[BlockedRow]:
        for actor_id in self.order:
            state = self.actors[actor_id]
            if state[6] >= self.min_time:
                self.rows.append(BlockedRow(state[5], actor_id, state[1], state[6], True))
        # std::multimap<double, string, greater<double>>: descending, equal keys in
        # insertion order (a stable sort).
        return sorted(self.rows, key=lambda r: -r.duration)


def _distance(here: npt.NDArray[Any], last: npt.NDArray[Any]) -> npt.NDArray[Any]:
    # FVector::Distance in the vector's own precision (float in UE4, double in UE5):
    # sqrt((dx*dx + dy*dy) + dz*dz), each operation rounded.
    d = here - last
    sq = d * d
    out: npt.NDArray[Any] = np.sqrt((sq[:, 0] + sq[:, 1]) + sq[:, 2])
    return out


def _run_blocked(
    buf: Any,
    start: int,
    opts: QueryOptions,
    min_time: float,
    min_distance: float,
    order: KeyOrder,
    *,
    carla_eof: bool,
    unknown: list[str],
) -> tuple[list[BlockedRow], _Frame]:
    engine = opts.family.engine
    form = opts.form
    state = _Blocked(opts, min_time, min_distance, order)
    stale = _Stale()
    frame = _Frame()
    last_add = 0
    last_bytes = bytes(5)  # the EventAdd member's id and type
    position_dtype = _flat_dtype(Kind.POSITION, engine)
    for item in _iter_packets(buf, start, rerun=carla_eof):
        if isinstance(item, Truncation):
            continue
        if form.unknown_ids and item.pid not in _KNOWN_0_9_5:
            offset = -1 if item.rerun else item.offset
            unknown.append(f"Unknown packet id: {_byte_char(item.pid)} at offset {offset}\n")
            continue
        kind = opts.family.kind_of(item.pid)
        if kind is Kind.FRAME_START:
            frame.read(item)
        elif kind is Kind.EVENT_ADD:
            entries, last_bytes = _table_entries(item, engine, stale, last_bytes)
            for actor_id, actor_type, name in entries:
                state.add(actor_id, actor_type, name)
                last_add = actor_id
        elif kind is Kind.EVENT_DEL:
            got = stale.records(item, "event_del", _flat_dtype(Kind.EVENT_DEL, engine))
            for _row in got[1]:
                state.erase(last_add)  # CARLA's slip: erases the last *added* id
        elif kind is Kind.POSITION:
            got = stale.records(item, "position", position_dtype)
            if got[1]:
                state.positions(got[1], frame)
        if item.rerun:
            break
    return state.finish(), frame


def _blocked_columns() -> str:
    return (
        pad_right("Time", 8)
        + " "
        + pad_right("Id", 6)
        + " "
        + pad_left("Actor", 35)
        + " "
        + pad_right("Duration", 10)
        + "\n"
    )


def _default_order(windows: bool, hash_order: HashOrderName | None) -> KeyOrder:
    return key_order(hash_order or ("msvc" if windows else "libc++"))


def iter_actors_blocked(
    path: str | os.PathLike[str],
    min_time: float = 60.0,
    min_distance: float = 100.0,
    *,
    tz: str | tzinfo | None = None,
    windows: bool = False,
    family: str | Family | None = None,
    form: str | None = None,
    hash_order: HashOrderName | None = None,
) -> Iterator[str]:
    """Yield the text of `client.show_recorder_actors_blocked(path, min_time, min_distance)`.

    `min_time` in seconds, `min_distance` in cm (the Python API's defaults, 60 and 100).
    Actors still stopped at the end print in the server's hash-map order: `hash_order`
    libc++ (Linux servers, the default), msvc (the default with `windows`), libstdc++ or
    file (first appearance). Other options as in `iter_file_info`.
    """
    with _Recording(path) as rec:
        header = _parse_header(rec.buf)
        if header is None:
            yield NOT_A_RECORDER
            return
        opts = _options(
            rec.buf, header.size, tz=tz, windows=windows, fam=family, labels=None, form=form
        )
        order = _default_order(windows, hash_order)
        yield _header_text(header, opts) + _blocked_columns()
        f0 = (lambda x: fmt_f0(x, windows=True)) if windows else fmt_f0
        g = (lambda x: fmt_g(x, windows=True)) if windows else fmt_g
        frame = _Frame()
        if header.complete:
            unknown: list[str] = []
            rows, frame = _run_blocked(
                rec.buf, header.size, opts, min_time, min_distance, order,
                carla_eof=True, unknown=unknown,
            )  # fmt: skip
            yield "".join(unknown)
            for row in rows:
                yield (
                    f"{pad_right(f0(row.time), 8)} {pad_right(str(row.id), 6)} "
                    f"{pad_left(row.actor, 35)} {pad_right(f0(row.duration), 10)}\n"
                )
        yield _trailer(frame, g(frame.elapsed))


def actors_blocked(
    path: str | os.PathLike[str],
    min_time: float = 60.0,
    min_distance: float = 100.0,
    **options: Any,
) -> str:
    """The whole text of `show_recorder_actors_blocked` (see `iter_actors_blocked`)."""
    return "".join(iter_actors_blocked(path, min_time, min_distance, **options))


# --------------------------------------------------------------------------- JSON documents


def _json_float(x: float) -> float | None:
    return x if np.isfinite(x) else None


def _open_checked(rec: _Recording) -> RecorderHeader:
    header = _parse_header(rec.buf)
    if header is None:
        raise BadMagicError(
            "file is not a CARLA recorder: the magic string CARLA_RECORDER is missing", offset=2
        )
    return header


def _json_header(header: RecorderHeader, opts: QueryOptions) -> dict[str, Any]:
    return {
        "version": header.version,
        "map": header.map_name,
        "date": header.date,
        "date_text": format_date(header.date, opts.zone),
        "family": opts.family.name,
        "engine": opts.family.engine.value,
    }


def _rotation_json(recorded: Any) -> dict[str, float | None]:
    """A recorded (roll, pitch, yaw) vector as a named object (degrees)."""
    roll, pitch, yaw = (_json_float(float(v)) for v in recorded)
    return {"pitch": pitch, "yaw": yaw, "roll": roll}


def file_info_json(
    path: str | os.PathLike[str],
    *,
    tz: str | tzinfo | None = None,
    family: str | Family | None = None,
) -> dict[str, Any]:
    """The facts behind `show_recorder_file_info` as a JSON-ready document.

    Keys: `header` (version, map, date in Unix s and as text, detected family),
    `frames` (last frame id, as CARLA's text counts), `complete_frames` (frames that reach
    their FrameEnd: what `convert` and `len(rec)` count; one less than `frames` when a crash
    cut the last one), `duration` (last frame's elapsed s), `actors` (each spawn:
    id, type, blueprint, uid, attributes, location cm, rotation {pitch, yaw, roll} deg,
    created/destroyed
    frame and elapsed s; destroyed matched by the real deleted id), `parents`,
    `collisions` (count), `packets` (count per kind, unknown ids as `id_<n>`) and
    `truncated` (offset and reason, or null). Non-finite numbers become null. Raises
    BadMagicError for a file that is not a recorder.
    """
    with _Recording(path) as rec:
        header = _open_checked(rec)
        opts = _options(
            rec.buf, header.size, tz=tz, windows=False, fam=family, labels=None, form=None
        )
        engine = opts.family.engine
        counts: dict[str, int] = {}
        actors: list[dict[str, Any]] = []
        alive: dict[int, dict[str, Any]] = {}
        parents = 0
        collision_count = 0
        complete_frames = 0
        frame = _Frame()
        truncated: dict[str, Any] | None = None
        for item in _iter_packets(rec.buf, header.size, rerun=False) if header.complete else ():
            if isinstance(item, Truncation):
                truncated = {"offset": item.offset, "reason": item.reason}
                continue
            kind = opts.family.kind_of(item.pid)
            name = kind.value if kind is not None else f"id_{item.pid}"
            counts[name] = counts.get(name, 0) + 1
            if not item.complete:
                continue
            if kind is Kind.FRAME_START:
                frame.read(item)
            elif kind is Kind.FRAME_END:
                complete_frames += 1
            elif kind is Kind.EVENT_ADD:
                for add in _var_records(item, lambda cur: ActorAdd.parse(cur, engine))[1]:
                    entry = {
                        "id": add.id,
                        "type": add.type,
                        "blueprint": add.blueprint,
                        "uid": add.uid,
                        "attributes": [
                            {"type": a.type, "id": a.id, "value": a.value} for a in add.attributes
                        ],
                        "location": [_json_float(float(v)) for v in add.location],
                        "rotation": _rotation_json(add.rotation),
                        "created_frame": frame.id,
                        "created_time": _json_float(frame.elapsed),
                        "destroyed_frame": None,
                        "destroyed_time": None,
                    }
                    actors.append(entry)
                    alive[add.id] = entry
            elif kind is Kind.EVENT_DEL:
                dtype = _flat_dtype(Kind.EVENT_DEL, engine)
                for (actor_id,) in np.frombuffer(item.body, dtype, offset=2).tolist():
                    gone = alive.pop(actor_id, None)
                    if gone is not None:
                        gone["destroyed_frame"] = frame.id
                        gone["destroyed_time"] = _json_float(frame.elapsed)
            elif kind is Kind.EVENT_PARENT:
                parents += _U16.unpack_from(item.body, 0)[0]
            elif kind is Kind.COLLISION:
                collision_count += _U16.unpack_from(item.body, 0)[0]
        return {
            "header": _json_header(header, opts),
            "frames": frame.id,
            "complete_frames": complete_frames,
            "duration": _json_float(frame.elapsed),
            "actors": actors,
            "parents": parents,
            "collisions": collision_count,
            "packets": counts,
            "truncated": truncated,
        }


def collisions_json(
    path: str | os.PathLike[str],
    type1: str = "a",
    type2: str = "a",
    *,
    tz: str | tzinfo | None = None,
    family: str | Family | None = None,
) -> dict[str, Any]:
    """The rows of `show_recorder_collisions` as a document (times in elapsed s)."""
    _check_category("type1", type1)
    _check_category("type2", type2)
    with _Recording(path) as rec:
        header = _open_checked(rec)
        opts = _options(
            rec.buf, header.size, tz=tz, windows=False, fam=family, labels=None, form=None
        )
        rows: list[dict[str, Any]] = []
        end = _TrailerMark(0, 0.0)
        source = (
            _iter_collision_rows(rec.buf, header.size, opts, type1, type2, carla_eof=False)
            if header.complete
            else iter(())
        )
        for row in source:
            if isinstance(row, _TrailerMark):
                end = row
            elif isinstance(row, CollisionRow):
                rows.append(
                    {
                        "time": _json_float(row.time),
                        "frame": row.frame,
                        "collision_id": row.collision_id,
                        "types": [row.type1, row.type2],
                        "actor1": {"id": row.id1, "blueprint": row.actor1, "hero": row.hero1},
                        "actor2": {"id": row.id2, "blueprint": row.actor2, "hero": row.hero2},
                    }
                )
        return {
            "header": _json_header(header, opts),
            "type1": type1,
            "type2": type2,
            "rows": rows,
            "frames": end.frame,
            "duration": _json_float(end.elapsed),
        }


def actors_blocked_json(
    path: str | os.PathLike[str],
    min_time: float = 60.0,
    min_distance: float = 100.0,
    *,
    tz: str | tzinfo | None = None,
    family: str | Family | None = None,
    hash_order: HashOrderName | None = None,
) -> dict[str, Any]:
    """The rows of `show_recorder_actors_blocked` as a document, in print order."""
    with _Recording(path) as rec:
        header = _open_checked(rec)
        opts = _options(
            rec.buf, header.size, tz=tz, windows=False, fam=family, labels=None, form=None
        )
        rows: list[BlockedRow] = []
        frame = _Frame()
        if header.complete:
            rows, frame = _run_blocked(
                rec.buf, header.size, opts, min_time, min_distance,
                _default_order(False, hash_order), carla_eof=False, unknown=[],
            )  # fmt: skip
        return {
            "header": _json_header(header, opts),
            "min_time": min_time,
            "min_distance": min_distance,
            "rows": [
                {
                    "time": _json_float(r.time),
                    "id": r.id,
                    "blueprint": r.actor,
                    "duration": _json_float(r.duration),
                    "until_end": r.at_end,
                }
                for r in rows
            ],
            "frames": frame.id,
            "duration": _json_float(frame.elapsed),
        }


__all__ = [
    "CATEGORY_LETTERS",
    "FORMS",
    "GEAR_SWITCH_TIME_DEFAULT",
    "NOT_A_RECORDER",
    "BlockedRow",
    "CollisionRow",
    "TextForm",
    "actors_blocked",
    "actors_blocked_json",
    "collisions",
    "collisions_json",
    "file_info",
    "file_info_json",
    "iter_actors_blocked",
    "iter_collisions",
    "iter_file_info",
]
