"""`show_recorder_file_info`: the text, packet by packet, as the server prints it.

PhysicsControl records print from `info_physics`; the options and the header, frame and
trailer lines every text query shares come from `options` and `framing`."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from datetime import tzinfo
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from typing_extensions import Unpack

from ..ids import Engine, Family, Kind
from ..records import ActorAdd, Cursor
from ..textfmt import fmt_g
from .base import (
    DOORS,
    LIGHT_NAMES,
    NOT_A_RECORDER,
    WEATHER_LABELS,
    Labels,
    LogFile,
    Packet,
    Row,
    Stale,
    Truncation,
    byte_char,
    clean_text,
    flat_dtype,
    iter_packets,
    parse_header,
    var_records,
)

# The options and the framing every text query shares live in their own modules (the
# collision and blocked queries print them too); imported from here as before.
from .framing import KNOWN_0_9_5, FrameFacts, header_text, trailer
from .info_physics import physics_blocks
from .options import FileInfoOptions, QueryOptions, TextOptions, text_options

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
        blocks = physics_blocks(packet, self.engine, self.g)
        parts = [self._count_line(count), f" Physics Control events: {count}\n"]
        parts += blocks
        return "".join(parts)

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


__all__ = [
    "KNOWN_0_9_5",
    "FileInfoOptions",
    "FrameFacts",
    "QueryOptions",
    "TextOptions",
    "file_info",
    "header_text",
    "iter_file_info",
    "text_options",
    "trailer",
]
