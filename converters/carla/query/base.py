"""What CARLA's three recorder queries share: the text forms of each release, reading the
file packet by packet as the server does (cut and damaged files included), family detection,
and record helpers."""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeVar

import numpy as np

from nanorec.buffers import Buffer
from nanorec.errors import NanorecError, UsageError
from nanorec.untyped import Payload

from ..detect import resolve
from ..ids import Engine, Family, Kind
from ..records import (
    ActorAdd,
    Cursor,
    fixed_dtype,
)
from ..walk import iter_walk, walk

NOT_A_RECORDER = "File is not a CARLA recorder\n"
MAGIC = b"CARLA_RECORDER"
U16 = struct.Struct("<H")
_HEADER = struct.Struct("<BI")
R = TypeVar("R")  # what a record parser returns
FRAME = struct.Struct("<Qdd")

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


def resolve_form(fam: Family, has_anims: bool, form: str | None, labels: Labels | None) -> TextForm:
    if form is not None:
        try:
            chosen = FORMS[form]
        except KeyError:
            raise UsageError(
                f"unknown text form {form!r}; choose one of {', '.join(FORMS)}"
            ) from None
    else:
        name = _FAMILY_FORMS.get(fam.name, "0.9.15")
        if fam.name == "0.9.4-0.9.9" and not has_anims:
            name = "0.9.5"  # 0.9.4/0.9.5 files (no animation packets); 0.9.4 only if forced
        chosen = FORMS[name]
    if labels is not None:
        if labels not in ("old", "new"):
            raise UsageError(f"labels must be 'old' or 'new', not {labels!r}")
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


def overlay(fresh: bytes, stale: bytes) -> bytes:
    """A partial read over a previous value: the new bytes first, the old ones after."""
    return fresh + stale[len(fresh) :]


def parse_header(buf: Buffer) -> RecorderHeader | None:
    """The header, or None when the magic string is wrong (CARLA's only check)."""
    size = len(buf)
    raw = bytes(buf[: min(size, 4 + 0xFFFF)])
    version = int.from_bytes(overlay(raw[0:2], b"\0\0"), "little")
    if len(raw) < 4:
        return None
    (magic_size,) = U16.unpack_from(raw, 2)
    if _cstring(raw[4 : 4 + magic_size]) != MAGIC.decode():
        return None
    pos = 4 + magic_size
    date_raw = bytes(buf[pos : pos + 8])
    date = int.from_bytes(overlay(date_raw, bytes(8)), "little", signed=True)
    pos += 8
    name_size_raw = bytes(buf[pos : pos + 2])
    name_size = int.from_bytes(overlay(name_size_raw, b"\0\0"), "little")
    pos += 2
    name_raw = bytes(buf[pos : pos + name_size])
    complete = pos + name_size <= size
    return RecorderHeader(version, date, _cstring(name_raw), min(pos + name_size, size), complete)


@dataclass(frozen=True)
class Packet:
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


def iter_packets(buf: Buffer, start: int, *, rerun: bool = True) -> Iterator[Packet | Truncation]:
    """Walk the packets with the codec's walker; yield a `Truncation` for a cut tail.

    A body cut short is yielded with the bytes present. With `rerun`, the walk ends the
    way CARLA's loop does (see `Packet.rerun`): the last id is handled once more, or the
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
            yield Packet(pid, off + 5, length, bytes(buf[off + 5 : off + 5 + length]))
        if ids:
            last_pid = ids[-1]
        if packets.truncation is not None:
            cut = Truncation(packets.truncation.offset, packets.truncation.reason)
    if cut is not None:
        yield cut
        if cut.offset + 5 <= size:
            pid, length = _HEADER.unpack_from(buf, cut.offset)
            yield Packet(pid, cut.offset + 5, length, bytes(buf[cut.offset + 5 : size]))
            return
        last_pid = buf[cut.offset]
    if rerun:
        yield Packet(last_pid, -1, 0, b"", rerun=True)


_DONTNEED = getattr(mmap, "MADV_DONTNEED", None)


def _release(buf: Buffer, upto: int) -> None:
    """Let the kernel drop the mapped pages already walked, so a 1 GB file's resident
    size stays flat (they are clean file pages: re-reading them just faults them in)."""
    if _DONTNEED is not None and isinstance(buf, mmap.mmap):
        aligned = upto - upto % mmap.PAGESIZE
        if aligned > 0:
            buf.madvise(_DONTNEED, 0, aligned)


class LogFile:
    """A read-only view of a recording file; closes what it opened."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._file = open(path, "rb")  # noqa: SIM115 - closed in close()
        length = os.fstat(self._file.fileno()).st_size
        self._map: mmap.mmap | None = None
        if length:
            self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
            self.buf: Buffer = self._map
        else:
            self.buf = b""

    def close(self) -> None:
        if self._map is not None:
            self._map.close()
        self._file.close()

    def __enter__(self) -> LogFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --------------------------------------------------------------------------- family detection


def choose_family(buf: Buffer, start: int, fam: str | Family | None) -> tuple[Family, bool]:
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


def flat_dtype_of(dtype: np.dtype[Any]) -> np.dtype[Any]:
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


def flat_dtype(kind: Kind, engine: Engine) -> np.dtype[Any]:
    key = (kind, engine)
    if key not in _FLAT:
        _FLAT[key] = flat_dtype_of(fixed_dtype(kind, engine))
    return _FLAT[key]


Row = tuple[Payload, ...]


class Stale:
    """CARLA's reused member records: the last bytes read per record slot."""

    def __init__(self) -> None:
        self.raw: dict[str, bytes] = {}
        self.total = 0  # the shared `uint16_t Total` local

    def count(self, packet: Packet) -> int:
        """The `Total` CARLA reads at a packet's start: missing bytes keep the old ones."""
        old = self.total.to_bytes(2, "little")
        self.total = int.from_bytes(overlay(packet.body[:2], old), "little")
        return self.total

    def records(
        self, packet: Packet, slot: str, dtype: np.dtype[Any], *, counted: bool = True
    ) -> tuple[int, list[Row]]:
        """(count, records) as CARLA's loop sees them, stale values included."""
        body = packet.body
        size = dtype.itemsize
        if counted:
            if len(body) >= 2:
                count = U16.unpack_from(body, 0)[0]
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
        if whole < count and not packet.complete:
            # At the end of a cut file CARLA's loop reads on with a failed stream: the
            # missing records repeat the last bytes read. Inside the file a count larger
            # than its packet is damage, not something CARLA's output can be matched on:
            # only the records the packet holds count, so a query stays linear in the
            # file (a forged count can no longer make it do 65535 records' work per packet).
            stale = self.raw.get(slot, bytes(size))
            partial = data[whole * size : (whole + 1) * size]
            if partial:
                stale = overlay(partial, stale)
                self.raw[slot] = stale
            row = np.frombuffer(stale, dtype=dtype, count=1).tolist()[0]
            rows.extend([row] * (count - whole))
        return count, rows


def var_records(packet: Packet, parse: Callable[[Cursor], R]) -> tuple[int, list[R]]:
    """Complete variable-length records of a packet (none after a cut; see module doc)."""
    body = packet.body
    if len(body) < 2:
        return 0, []
    count = U16.unpack_from(body, 0)[0]
    cur = Cursor(body, packet.offset, 2)
    records: list[R] = []
    for _ in range(count):
        try:
            records.append(parse(cur))
        except NanorecError:
            break
    return count, records


def table_entries(
    packet: Packet, engine: Engine, stale: Stale, last: bytes
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
            last = overlay(rest[:5], last)
            actor_id, actor_type = struct.unpack("<IB", last)
            name = ""
            if len(rest) >= fixed + 2:
                (length,) = U16.unpack_from(rest, fixed)
                name = _cstring(rest[fixed + 2 : fixed + 2 + length])
            entries.append((actor_id, actor_type, name))
            entries += [(actor_id, actor_type, "")] * (count - len(entries))
            break
        last = struct.pack("<IB", rec.id, rec.type)
        entries.append((rec.id, rec.type, clean_text(rec.blueprint)))
    return entries, last


def byte_char(value: int) -> str:
    """A `char` streamed raw: one byte (non-ASCII kept via surrogateescape)."""
    return bytes([value & 0xFF]).decode("utf-8", "surrogateescape")


LIGHT_NAMES = (
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
DOORS = (
    " Front Left ",
    " Front Right ",
    " Rear Left ",
    " Rear Right ",
    " Hood ",
    " Trunk ",
    " All ",
)
WEATHER_LABELS = (
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


def rich_curve(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Keys as UE's `FRichCurve::AddKey` stores them: before the first key not earlier."""
    keys: list[tuple[float, float]] = []
    for x, y in points:
        index = 0
        while index < len(keys) and keys[index][0] < x:
            index += 1
        keys.insert(index, (x, y))
    return keys


def clean_text(text: str) -> str:
    return _cstring(text.encode("utf-8", "surrogateescape"))
