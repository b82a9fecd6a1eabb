"""`show_recorder_file_info`: the text, packet by packet, as the server prints it."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import tzinfo
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from nanorec.buffers import Buffer
from nanorec.errors import NanorecError

if TYPE_CHECKING:
    from typing_extensions import Unpack

from ..ids import Engine, Family, Kind
from ..records import (
    CURVE_DTYPE,
    GEAR_DTYPE,
    PHYSICS_UE4_DTYPE,
    PHYSICS_UE5_DTYPE,
    PHYSICS_WHEEL_DTYPES,
    ActorAdd,
    Cursor,
)
from ..textfmt import fmt_g, format_date, parse_zone
from .base import (
    DOORS,
    FRAME,
    GEAR_SWITCH_TIME_DEFAULT,
    LIGHT_NAMES,
    NOT_A_RECORDER,
    WEATHER_LABELS,
    Labels,
    LogFile,
    Packet,
    RecorderHeader,
    Row,
    Stale,
    TextForm,
    Truncation,
    byte_char,
    choose_family,
    clean_text,
    flat_dtype,
    flat_dtype_of,
    iter_packets,
    overlay,
    parse_header,
    resolve_form,
    rich_curve,
    var_records,
)

# --------------------------------------------------------------------------- file info


@dataclass(frozen=True)
class QueryOptions:
    """How to print: the server's zone and C library, and the release form."""

    zone: tzinfo
    windows: bool
    family: Family
    form: TextForm


class TextOptions(TypedDict, total=False):
    """The options every CARLA text query takes (`iter_file_info`, `iter_collisions`,
    `iter_actors_blocked`): the server's zone and C library, the release family and form."""

    tz: str | tzinfo | None
    windows: bool
    family: str | Family | None
    form: str | None


class FileInfoOptions(TextOptions, total=False):
    """`file_info`'s options: the text queries', and show_all and the label forms."""

    show_all: bool
    labels: Labels | None


def text_options(
    buf: Buffer,
    start: int,
    *,
    tz: str | tzinfo | None,
    windows: bool,
    fam: str | Family | None,
    labels: Labels | None,
    form: str | None,
) -> QueryOptions:
    zone = tz if isinstance(tz, tzinfo) else parse_zone(tz)
    chosen, has_anims = choose_family(buf, start, fam)
    return QueryOptions(zone, windows, chosen, resolve_form(chosen, has_anims, form, labels))


def header_text(header: RecorderHeader, opts: QueryOptions) -> str:
    return (
        f"Version: {header.version}\nMap: {header.map_name}\n"
        f"Date: {format_date(header.date, opts.zone)}\n\n"
    )


class FrameFacts:
    """The query object's `Frame` member: id, duration and elapsed of the last FrameStart."""

    def __init__(self) -> None:
        self.raw = bytes(24)
        self.id, self.duration, self.elapsed = 0, 0.0, 0.0

    def read(self, packet: Packet) -> None:
        if packet.rerun:
            return
        self.raw = overlay(packet.body[:24], self.raw)
        self.id, self.duration, self.elapsed = FRAME.unpack(self.raw)


def trailer(frame: FrameFacts, elapsed_text: str) -> str:
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
KNOWN_0_9_5 = frozenset(range(8))


class _InfoPrinter:
    """`QueryInfo`: the per-packet text of `show_recorder_file_info`."""

    def __init__(self, opts: QueryOptions, show_all: bool) -> None:
        self.opts = opts
        self.show_all = show_all
        self.form = opts.form
        self.engine = opts.family.engine
        self.frame = FrameFacts()
        self.printed = False
        self.stale = Stale()
        self.last_walker = 0  # CARLA's WalkerBones member keeps the last id read
        w = opts.windows
        self.g: Callable[[float], str] = (lambda x: fmt_g(x, windows=True)) if w else fmt_g

    def frame_line(self) -> str:
        self.printed = True
        return f"Frame {self.frame.id} at {self.g(self.frame.elapsed)} seconds\n"

    def packet(self, packet: Packet) -> str:
        kind = self.opts.family.kind_of(packet.pid)
        form = self.form
        if form.unknown_ids and packet.pid not in KNOWN_0_9_5:
            offset = -1 if packet.rerun else packet.offset
            return f"Unknown packet id: {byte_char(packet.pid)} at offset {offset}\n"
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
                packet, "platform_time", flat_dtype(kind, self.engine), counted=False
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

    def event_add(self, packet: Packet) -> str:
        count = self.stale.count(packet)
        records = var_records(packet, lambda cur: ActorAdd.parse(cur, self.engine))[1]
        parts = [self._count_line(count)]
        g = self.g
        for rec in records:
            x, y, z = (float(v) for v in rec.location)
            parts.append(
                f" Create {rec.id}: {clean_text(rec.blueprint)}"
                f" ({rec.type}) at ({g(x)}, {g(y)}, {g(z)})\n"
            )
            for attr in rec.attributes:
                parts.append(f"  {clean_text(attr.id)} = {clean_text(attr.value)}\n")
        return "".join(parts)

    def events(self, kind: Kind, packet: Packet) -> str:
        got = self.stale.records(packet, kind.value, flat_dtype(kind, self.engine))
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

    def section(self, kind: Kind, packet: Packet) -> str:
        got = self.stale.records(
            packet, _SLOTS.get(kind, kind.value), flat_dtype(kind, self.engine)
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
                f"  Id: {r[0]} state: {byte_char(0x30 + r[3])} frozen: {r[1]}"
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
                + (f"{DOORS[r[1]]}\n" if r[1] < len(DOORS) else "")
            )
        if kind is Kind.VEHICLE_LIGHT:
            return lambda r: (
                f"  Id: {r[0]} "
                + (" ".join(name for name, bit in LIGHT_NAMES if r[1] & bit) or "None")
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
                + " ".join(f"{label}: {g(v)}" for label, v in zip(WEATHER_LABELS, r, strict=True))
                + "\n"
            )
        raise AssertionError(kind)

    def physics(self, packet: Packet) -> str:
        count = self.stale.count(packet)
        if packet.rerun:
            # Read again from a failed stream (§7.7): the stale `Total` prints; the records
            # would be a default control with uninitialised array sizes, not reproduced.
            return self._count_line(count) + f" Physics Control events: {count}\n"
        if self.engine is Engine.UE4:
            records = var_records(packet, _physics_ue4_parser(packet))[1]
            block = self._physics_ue4
        else:
            records = var_records(packet, _physics_ue5_parser(packet))[1]
            block = self._physics_ue5
        parts = [self._count_line(count), f" Physics Control events: {count}\n"]
        parts += [block(rec) for rec in records]
        return "".join(parts)

    def _curve_line(self, name: str, arrays: dict[str, list[Row]]) -> str:
        """`   <name> = (x, y) ...` with the points as the engine's curve holds them."""
        g = self.g
        points = "".join(f" ({g(x)}, {g(y)})" for x, y in rich_curve(_pairs(arrays[name])))
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
        names = flat_dtype_of(PHYSICS_UE5_DTYPE).names or ()
        h = dict(zip(names, head, strict=True))
        lines = [
            f"  Id: {h['id']}\n",
            f"   max_torque = {g(h['max_torque'])}\n",
            f"   max_rpm = {g(h['max_rpm'])}\n",
            f"   MOI = {g(h['rev_up_moi'])}\n",
            f"   rev_down_rate = {g(h['rev_down_rate'])}\n",
            f"   differential_type = {byte_char(h['differential_type'])}\n",
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

    def bones(self, packet: Packet) -> str:
        vec = "<f4" if self.engine is Engine.UE4 else "<f8"
        count = self.stale.count(packet)
        records = var_records(packet, lambda cur: _parse_bones(cur, vec))[1]
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


def _pairs(rows: list[Row]) -> list[tuple[float, float]]:
    return [(float(r[0]), float(r[1])) for r in rows]


def _parse_bones(cur: Cursor, vec: str) -> tuple[int, list[tuple[str, list[float]]]]:
    walker_id = cur.u32("WalkerBones walker id")
    count = cur.u16("WalkerBones bone count")
    vec_dtype = np.dtype(vec)
    bones = []
    for _ in range(count):
        name = clean_text(cur.string("bone name"))
        values = cur.array(vec_dtype, 6, "bone transform").tolist()
        bones.append((name, values))
    return walker_id, bones


def _array_rows(cur: Cursor, dtype: np.dtype[Any], what: str) -> list[Row]:
    count = cur.u32(f"PhysicsControl {what} count")
    flat = flat_dtype_of(dtype) if dtype.fields else np.dtype([("v", dtype)])
    rows: list[Row] = cur.array(flat, count, f"PhysicsControl {what}").tolist()
    return rows


def _physics_ue4_parser(packet: Packet) -> Callable[[Cursor], tuple[Row, dict[str, list[Row]]]]:
    # Try 48-byte wheels, then 36 (spec §10.5), on the whole packet once.
    wheel = _physics_wheel_size(packet)

    def parse(cur: Cursor) -> tuple[Row, dict[str, list[Row]]]:
        head = cur.array(flat_dtype_of(PHYSICS_UE4_DTYPE), 1, "PhysicsControl").tolist()[0]
        arrays = {
            "torque_curve": _array_rows(cur, CURVE_DTYPE, "torque_curve"),
            "forward_gears": _array_rows(cur, GEAR_DTYPE, "forward_gears"),
            "steering_curve": _array_rows(cur, CURVE_DTYPE, "steering_curve"),
            "wheels": _array_rows(cur, PHYSICS_WHEEL_DTYPES[wheel], "wheels"),
        }
        return head, arrays

    return parse


def _physics_wheel_size(packet: Packet) -> int:
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


def _physics_ue5_parser(packet: Packet) -> Callable[[Cursor], tuple[Row, dict[str, list[Row]]]]:
    def parse(cur: Cursor) -> tuple[Row, dict[str, list[Row]]]:
        head = cur.array(flat_dtype_of(PHYSICS_UE5_DTYPE), 1, "PhysicsControl").tolist()[0]
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
    with LogFile(path) as rec:
        header = parse_header(rec.buf)
        if header is None:
            yield NOT_A_RECORDER
            return
        opts = text_options(
            rec.buf, header.size, tz=tz, windows=windows, fam=family, labels=labels, form=form
        )
        yield header_text(header, opts)
        printer = _InfoPrinter(opts, show_all)
        if header.complete:
            chunk: list[str] = []
            pending = 0
            for item in iter_packets(rec.buf, header.size):
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
        yield trailer(printer.frame, printer.g(printer.frame.elapsed))


def file_info(path: str | os.PathLike[str], **options: Unpack[FileInfoOptions]) -> str:
    """The whole text of `show_recorder_file_info` (see `iter_file_info` for options)."""
    return "".join(iter_file_info(path, **options))
