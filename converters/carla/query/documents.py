"""The facts behind the three queries as JSON-ready documents (`--json`)."""

from __future__ import annotations

import os
from datetime import tzinfo
from typing import Any

import numpy as np

from nanorec.errors import BadMagicError
from nanorec.untyped import JsonObject

from ..ids import Family, Kind
from ..records import (
    ActorAdd,
)
from ..textfmt import format_date
from .base import (
    U16,
    HashOrderName,
    LogFile,
    RecorderHeader,
    Truncation,
    flat_dtype,
    iter_packets,
    parse_header,
    var_records,
)
from .blocked import (
    BlockedRow,
    default_order,
    run_blocked,
)
from .collisions import (
    CollisionRow,
    TrailerMark,
    check_category,
    iter_collision_rows,
)
from .info import (
    FrameFacts,
    QueryOptions,
    text_options,
)

# --------------------------------------------------------------------------- JSON documents


def _json_float(x: float) -> float | None:
    return x if np.isfinite(x) else None


def _open_checked(rec: LogFile) -> RecorderHeader:
    header = parse_header(rec.buf)
    if header is None:
        raise BadMagicError(
            "file is not a CARLA recorder: the magic string CARLA_RECORDER is missing", offset=2
        )
    return header


def _json_header(header: RecorderHeader, opts: QueryOptions) -> JsonObject:
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
    with LogFile(path) as rec:
        header = _open_checked(rec)
        opts = text_options(
            rec.buf, header.size, tz=tz, windows=False, fam=family, labels=None, form=None
        )
        engine = opts.family.engine
        counts: dict[str, int] = {}
        actors: list[dict[str, Any]] = []
        alive: dict[int, dict[str, Any]] = {}
        parents = 0
        collision_count = 0
        complete_frames = 0
        frame = FrameFacts()
        truncated: dict[str, Any] | None = None
        for item in iter_packets(rec.buf, header.size, rerun=False) if header.complete else ():
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
                for add in var_records(item, lambda cur: ActorAdd.parse(cur, engine))[1]:
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
                dtype = flat_dtype(Kind.EVENT_DEL, engine)
                for (actor_id,) in np.frombuffer(item.body, dtype, offset=2).tolist():
                    gone = alive.pop(actor_id, None)
                    if gone is not None:
                        gone["destroyed_frame"] = frame.id
                        gone["destroyed_time"] = _json_float(frame.elapsed)
            elif kind is Kind.EVENT_PARENT:
                parents += _count(item.body)
            elif kind is Kind.COLLISION:
                collision_count += _count(item.body)
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
    check_category("type1", type1)
    check_category("type2", type2)
    with LogFile(path) as rec:
        header = _open_checked(rec)
        opts = text_options(
            rec.buf, header.size, tz=tz, windows=False, fam=family, labels=None, form=None
        )
        rows: list[dict[str, Any]] = []
        end = TrailerMark(0, 0.0)
        source = (
            iter_collision_rows(rec.buf, header.size, opts, type1, type2, carla_eof=False)
            if header.complete
            else iter(())
        )
        for row in source:
            if isinstance(row, TrailerMark):
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
    with LogFile(path) as rec:
        header = _open_checked(rec)
        opts = text_options(
            rec.buf, header.size, tz=tz, windows=False, fam=family, labels=None, form=None
        )
        rows: list[BlockedRow] = []
        frame = FrameFacts()
        if header.complete:
            rows, frame = run_blocked(
                rec.buf, header.size, opts, min_time, min_distance,
                default_order(False, hash_order), carla_eof=False, unknown=[],
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


def _count(body: bytes | memoryview) -> int:
    """A packet's record count (its first u16); 0 for a body too short to hold one (a
    damaged packet: the walk keeps its bytes, the count is not believed)."""
    return int(U16.unpack_from(body, 0)[0]) if len(body) >= 2 else 0


__all__ = ["actors_blocked_json", "collisions_json", "file_info_json"]
