"""`show_recorder_actors_blocked`: actors that stayed put long enough, longest first."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import tzinfo
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from nanorec.buffers import Buffer
from nanorec.hashorder import KeyOrder, key_order

from ..ids import Engine, Family, Kind
from ..textfmt import fmt_f0, fmt_g, pad_left, pad_right
from .base import (
    NOT_A_RECORDER,
    HashOrderName,
    LogFile,
    Row,
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
    trailer,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack


class BlockedOptions(TextOptions, total=False):
    """`actors_blocked`'s options: the text queries', and the hash-map order of the actors
    still stopped at the end."""

    hash_order: HashOrderName | None


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

    def positions(self, rows: list[Row], frame: FrameFacts) -> None:
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

    def _step(self, row: Row, state: list[Any], close: bool, frame: FrameFacts) -> None:
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


def run_blocked(
    buf: Buffer,
    start: int,
    opts: QueryOptions,
    min_time: float,
    min_distance: float,
    order: KeyOrder,
    *,
    carla_eof: bool,
    unknown: list[str],
) -> tuple[list[BlockedRow], FrameFacts]:
    engine = opts.family.engine
    form = opts.form
    state = _Blocked(opts, min_time, min_distance, order)
    stale = Stale()
    frame = FrameFacts()
    last_add = 0
    last_bytes = bytes(5)  # the EventAdd member's id and type
    position_dtype = flat_dtype(Kind.POSITION, engine)
    for item in iter_packets(buf, start, rerun=carla_eof):
        if isinstance(item, Truncation):
            continue
        if form.unknown_ids and item.pid not in KNOWN_0_9_5:
            offset = -1 if item.rerun else item.offset
            unknown.append(f"Unknown packet id: {byte_char(item.pid)} at offset {offset}\n")
            continue
        kind = opts.family.kind_of(item.pid)
        if kind is Kind.FRAME_START:
            frame.read(item)
        elif kind is Kind.EVENT_ADD:
            entries, last_bytes = table_entries(item, engine, stale, last_bytes)
            for actor_id, actor_type, name in entries:
                state.add(actor_id, actor_type, name)
                last_add = actor_id
        elif kind is Kind.EVENT_DEL:
            got = stale.records(item, "event_del", flat_dtype(Kind.EVENT_DEL, engine))
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


def default_order(windows: bool, hash_order: HashOrderName | None) -> KeyOrder:
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
    with LogFile(path) as rec:
        header = parse_header(rec.buf)
        if header is None:
            yield NOT_A_RECORDER
            return
        opts = text_options(
            rec.buf, header.size, tz=tz, windows=windows, fam=family, labels=None, form=form
        )
        order = default_order(windows, hash_order)
        yield header_text(header, opts) + _blocked_columns()
        f0 = (lambda x: fmt_f0(x, windows=True)) if windows else fmt_f0
        g = (lambda x: fmt_g(x, windows=True)) if windows else fmt_g
        frame = FrameFacts()
        if header.complete:
            unknown: list[str] = []
            rows, frame = run_blocked(
                rec.buf, header.size, opts, min_time, min_distance, order,
                carla_eof=True, unknown=unknown,
            )  # fmt: skip
            yield "".join(unknown)
            for row in rows:
                yield (
                    f"{pad_right(f0(row.time), 8)} {pad_right(str(row.id), 6)} "
                    f"{pad_left(row.actor, 35)} {pad_right(f0(row.duration), 10)}\n"
                )
        yield trailer(frame, g(frame.elapsed))


def actors_blocked(
    path: str | os.PathLike[str],
    min_time: float = 60.0,
    min_distance: float = 100.0,
    **options: Unpack[BlockedOptions],
) -> str:
    """The whole text of `show_recorder_actors_blocked` (see `iter_actors_blocked`)."""
    return "".join(iter_actors_blocked(path, min_time, min_distance, **options))
