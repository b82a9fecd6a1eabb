"""`show_recorder_collisions`: collisions between actor categories, once per contact."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import tzinfo
from typing import TYPE_CHECKING

from nanorec.buffers import Buffer
from nanorec.errors import UsageError

from ..ids import Family, Kind
from ..textfmt import fmt_f0, fmt_g, pad_left, pad_right
from .base import (
    NOT_A_RECORDER,
    LogFile,
    Stale,
    Truncation,
    byte_char,
    flat_dtype,
    iter_packets,
    parse_header,
    table_entries,
)
from .info import (
    KNOWN_0_9_5,
    FrameFacts,
    QueryOptions,
    TextOptions,
    header_text,
    text_options,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

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


def iter_collision_rows(
    buf: Buffer, start: int, opts: QueryOptions, type1: str, type2: str, *, carla_eof: bool
) -> Iterator[CollisionRow | str | TrailerMark]:
    """Rows of the collision query in print order (str items are unknown-id lines)."""
    engine = opts.family.engine
    form = opts.form
    actors: dict[int, tuple[int, str]] = {}
    old: set[tuple[int, int]] = set()
    new: set[tuple[int, int]] = set()
    last_add = 0
    last_bytes = bytes(5)  # the EventAdd member's id and type
    stale = Stale()
    frame = FrameFacts()
    dtype = flat_dtype(Kind.COLLISION, engine)
    for item in iter_packets(buf, start, rerun=carla_eof):
        if isinstance(item, Truncation):
            continue
        if form.unknown_ids and item.pid not in KNOWN_0_9_5:
            offset = -1 if item.rerun else item.offset
            yield f"Unknown packet id: {byte_char(item.pid)} at offset {offset}\n"
            continue
        kind = opts.family.kind_of(item.pid)
        if kind is Kind.FRAME_START:
            frame.read(item)
            old, new = new, set()
        elif kind is Kind.EVENT_ADD:
            entries, last_bytes = table_entries(item, engine, stale, last_bytes)
            for actor_id, actor_type, name in entries:
                actors[actor_id] = (actor_type, name)
                last_add = actor_id
        elif kind is Kind.EVENT_DEL:
            got = stale.records(item, "event_del", flat_dtype(Kind.EVENT_DEL, engine))
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
    yield TrailerMark(frame.id, frame.elapsed)


@dataclass(frozen=True)
class TrailerMark:
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


def check_category(name: str, value: str) -> str:
    if value not in CATEGORY_LETTERS:
        raise UsageError(
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
    check_category("type1", type1)
    check_category("type2", type2)
    with LogFile(path) as rec:
        header = parse_header(rec.buf)
        if header is None:
            yield NOT_A_RECORDER
            return
        opts = text_options(
            rec.buf, header.size, tz=tz, windows=windows, fam=family, labels=None, form=form
        )
        yield header_text(header, opts) + _collision_columns()
        f0 = (lambda x: fmt_f0(x, windows=True)) if windows else fmt_f0
        g = (lambda x: fmt_g(x, windows=True)) if windows else fmt_g
        fixed = False
        end = TrailerMark(0, 0.0)
        if header.complete:
            for row in iter_collision_rows(
                rec.buf, header.size, opts, type1, type2, carla_eof=True
            ):
                if isinstance(row, str):
                    yield row
                elif isinstance(row, TrailerMark):
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
    path: str | os.PathLike[str],
    type1: str = "a",
    type2: str = "a",
    **options: Unpack[TextOptions],
) -> str:
    """The whole text of `show_recorder_collisions` (see `iter_collisions`)."""
    return "".join(iter_collisions(path, type1, type2, **options))
