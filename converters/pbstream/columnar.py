"""`PbstreamRecording.table_columns`: the tables of a pbstream as columns for
`nanorec.outputs.arrow`, a run of records at a time.

Rows record by record cost ~45 us an IMU record: a message read, its gzip member inflated
by zlib (whose set-up is most of it for a member of ~100 bytes), the protobuf decoded into
dicts. Here the records of one kind are read a run at once (`ArchiveReader.raw_run` over
each stretch of consecutive records), the gzip members located with numpy in the form
the converter writes (`columnar_locate`; any other form unpacked by msgpack in C), the
run's members inflated in one ISA-L call (`scan.inflate_run`; large ones one at a time,
`scan.declared_payload`), and the records of the shapes Cartographer writes (odometry,
fixed-frame poses, IMU, nodes, submaps) read with numpy over the joined payloads
(`columnar_wire`). A record of any other shape, and every other table, goes through
`tables.record_rows` as `rows` does, so the values, their types and their order are those
of `rows`; a run with anything unusual (a damaged message, another gzip header, no ISA-L)
is taken record by record, which raises the `rows` error in its place.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final

import msgpack
import numpy as np

from nanorec.errors import NanorecError, UsageError
from nanorec.outputs.arrow import BATCH_ROWS, Progress
from nanorec.outputs.arrow_columns import transpose
from nanorec.selection import Selection

from .columnar_locate import locate
from .columnar_wire import PADDING, SHAPES, record_run
from .convert import NONE_ID
from .pose import POSE
from .records import UNIX_EPOCH_TICKS
from .scan import WHOLE_BELOW, declared_payload, inflate_run
from .stream import GZIP_HEADER, SIZE, inflate_member
from .tables import TABLES, pose_rows, record_rows, selected
from .trajectory import TAGS

if TYPE_CHECKING:
    from .recording import PbstreamRecording

Ints = np.ndarray[Any, np.dtype[np.int64]]
Columns = dict[str, Any]

#: Records read and decoded at once (a batch of the table at most).
RUN: Final = 8192
#: The keys a stored record entry of the fast path may hold (no `payload`, no `bare`).
_PLAIN_KEYS: Final = frozenset({"member", "trajectory_id", "index", "timestamp", "dims"})
#: Ticks whose Unix nanoseconds fit int64 (beyond: Python ints, left to `rows`).
_LOW: Final = UNIX_EPOCH_TICKS - 2**62 // 100
_HIGH: Final = UNIX_EPOCH_TICKS + 2**62 // 100
_PREFIX: Final = bytes(SIZE.size)
_PADDING: Final = bytes(PADDING)
#: Members of this many bytes on average are inflated one at a time (`_inflated`).
_ONE_AT_A_TIME: Final = 192


def table_columns(
    rec: PbstreamRecording,
    kinds: list[str],
    selection: Selection | None = None,
    progress: Progress | None = None,
) -> Iterator[tuple[str, Columns]]:
    """`(kind, columns)` of each table of `kinds`, in runs (see the module docstring);
    `progress(done, total)` in tables."""
    for kind in kinds:
        if kind not in TABLES:
            raise UsageError(f"no table {kind!r} (tables: {', '.join(TABLES)})")
    for done, kind in enumerate(kinds, 1):
        if kind in SHAPES:
            numbers = selected(rec, kind, selection)
            for first in range(0, len(numbers), RUN):
                yield from _run(rec, kind, numbers[first : first + RUN])
        elif kind in _GRAPH_TABLES and _whole_time(selection):
            yield from ((kind, part) for part in _GRAPH_TABLES[kind](rec))
        else:
            yield from ((kind, columns) for columns in _batched(TABLES[kind](rec, selection)))
        if progress is not None:
            progress(done, len(kinds))


def _whole_time(selection: Selection | None) -> bool:
    """Whether `selection` has no time range (the pose graph's tables ignore the rest)."""
    return selection is None or (selection.start is None and selection.end is None)


def _sliced(columns: Columns) -> Iterator[Columns]:
    """`columns` in batches of `BATCH_ROWS` rows (none when empty)."""
    rows = len(next(iter(columns.values())))
    for first in range(0, rows, BATCH_ROWS):
        yield {name: values[first : first + BATCH_ROWS] for name, values in columns.items()}


def _trajectory(rec: PbstreamRecording) -> Iterator[Columns]:
    """`tables._trajectory` of the node poses at once, a trajectory at a time."""
    for poses in rec.trajectories().values():
        ticks = poses.timestamp.astype(np.int64)
        if ((ticks < _LOW) | (ticks > _HIGH)).any():  # Python ints in `rows`: as they come
            yield from _batched(pose_rows(poses, "node_index"), source=poses.source)
            continue
        count = len(poses)
        columns: Columns = {
            "trajectory_id": np.full(count, poses.trajectory_id, np.int64),
            "node_index": poses.index.astype(np.int64),
            "timestamp": ticks,
            "unix_ns": (ticks - UNIX_EPOCH_TICKS) * 100,
        }
        pose = np.concatenate([poses.translation, poses.rotation], axis=1).reshape(-1, 7)
        columns.update((name, pose[:, k].copy()) for k, name in enumerate(POSE))
        columns["source"] = [poses.source] * count
        yield from _sliced(columns)


def _constraint(rec: PbstreamRecording) -> Iterator[Columns]:
    """`tables._constraint` at once, from the pose graph's constraint array."""
    found = rec.pose_graph().constraints
    columns: Columns = {
        name: found[name].astype(np.int64)
        for name in ("submap_trajectory_id", "submap_index", "node_trajectory_id", "node_index")
    }
    columns["tag"] = [TAGS.get(tag, str(tag)) for tag in found["tag"].tolist()]
    for name in ("translation_weight", "rotation_weight"):
        columns[name] = found[name].astype(np.float64)
    columns.update((name, found["pose"][:, k].copy()) for k, name in enumerate(POSE))
    yield from _sliced(columns)


_GRAPH_TABLES: Final = {"trajectory": _trajectory, "constraint": _constraint}


def _batched(rows: Iterator[dict[str, Any]], **more: object) -> Iterator[Columns]:
    """Rows (with `more` columns) as columns, `BATCH_ROWS` rows a batch (the tables here
    hold no large values)."""
    batch: list[dict[str, Any]] = []
    for row in rows:
        row.update(more)
        batch.append(row)
        if len(batch) >= BATCH_ROWS:
            yield _columns(batch)
            batch = []
    if batch:
        yield _columns(batch)


def _columns(rows: list[dict[str, Any]]) -> Columns:
    columns: Columns = transpose(rows)
    columns.pop("recording", None)  # `nanorec.outputs.arrow` puts the recording's own first
    return columns


def _run(rec: PbstreamRecording, kind: str, numbers: list[int]) -> Iterator[tuple[str, Columns]]:
    """The columns of records `numbers` of `kind`: at once, else record by record."""
    columns = None
    try:
        columns = _at_once(rec, kind, np.asarray(numbers, np.int64))
    except NanorecError:  # `rows` says what, record by record
        columns = None
    if columns is None:
        yield from ((kind, part) for part in _batched(record_rows(rec, kind, numbers)))
    elif len(columns["number"]):
        yield kind, columns


def _at_once(rec: PbstreamRecording, kind: str, numbers: Ints) -> Columns | None:
    """The columns of records `numbers`, or None when the run must go record by record."""
    if not len(numbers):
        return None
    timed = rec.timed[numbers]
    if not (rec.trajectory_ids[numbers] != NONE_ID).all() or (timed.any() and not timed.all()):
        return None  # rows lacking a column: `transpose` orders the keys as they come
    columns = _common(rec, numbers, bool(timed[0]))
    if columns is None:
        return None
    members = _members(rec, kind, numbers)
    if members is None:
        return None
    inflated = _inflated(members)
    if inflated is None:
        return None
    ok, fields = record_run(kind, *inflated)
    columns.update(fields)
    if not ok.all() and not _patch(rec, kind, numbers, ok, columns):
        return None
    return columns


def _common(rec: PbstreamRecording, numbers: Ints, timed: bool) -> Columns | None:
    """The columns `tables.record_rows` puts first: number, time, trajectory id, and for
    timed records (`timed`: all of them, else none) ticks and Unix ns, the time by them;
    None when a time is beyond int64 nanoseconds (Python ints there)."""
    columns: Columns = {"number": numbers}
    if not timed:  # `rec.time_of` of each
        micros = rec.reader.index.timestamp_us[numbers].astype(np.int64) - rec._origin_us
        columns["time"] = micros / 1e6
        columns["trajectory_id"] = rec.trajectory_ids[numbers].astype(np.int64)
        return columns
    ticks = rec.ticks[numbers].astype(np.int64)
    if ((ticks < _LOW) | (ticks > _HIGH)).any():
        return None
    origin_ns = round(rec.start_time * 1e6) * 1000
    if abs(origin_ns) >= 2**62:
        return None
    unix_ns = (ticks - UNIX_EPOCH_TICKS) * 100
    columns["time"] = (unix_ns - origin_ns).astype(np.float64) / 1e9
    columns["trajectory_id"] = rec.trajectory_ids[numbers].astype(np.int64)
    columns["timestamp"] = ticks
    columns["unix_ns"] = unix_ns
    return columns


def _inflated(members: list[bytes]) -> tuple[bytes, Ints] | None:
    """The payloads of `members` joined and each one's size: tiny members (sensor data) in
    one ISA-L call, others (nodes, submaps) a member at a time (`scan.declared_payload`,
    else `inflate_member`: `FormatError` for a damaged one), joined with `PADDING` zeros
    after them; None when ISA-L declines. One call a member costs ~2 us more, one call for
    the run ~1.3 us a member more and inflates slower: 8,000 IMU members of ~73 bytes
    12 ms against 19; 872 nodes of ~870 bytes 18 against 14."""
    sizes = np.fromiter(map(len, members), np.int64, len(members))
    if (sizes >= WHOLE_BELOW).any() or sizes.mean() >= _ONE_AT_A_TIME:
        payloads = [_payload(member) for member in members]
        lengths = np.fromiter(map(len, payloads), np.int64, len(payloads))
        return b"".join([*payloads, _PADDING]), lengths  # one copy of megabytes, not two
    if (sizes < 18).any():
        return None
    joined = b"".join([_PREFIX + member for member in members])
    starts = np.cumsum(sizes + SIZE.size) - sizes
    return inflate_run(joined, starts, sizes)


def _payload(member: bytes) -> bytes:
    payload = declared_payload(member)
    return inflate_member(member, 0) if payload is None else payload


def _members(rec: PbstreamRecording, kind: str, numbers: Ints) -> list[bytes] | None:
    """The gzip members of records `numbers` (read a stretch of consecutive records at
    once), or None when one is not a plain entry of `kind` holding a Cartographer member."""
    reader = rec.reader
    breaks = np.flatnonzero(np.diff(numbers) != 1) + 1
    members: list[bytes] = []
    for part in np.split(numbers, breaks):
        first, stop = int(part[0]), int(part[-1]) + 1
        data, starts = reader.raw_run(first, stop)
        found = locate(data, starts, starts + reader.index.length[first:stop], kind)
        if found is not None:  # the converter's form: no message unpacked
            members += [data[a:b] for a, b in zip(*(v.tolist() for v in found), strict=True)]
            continue
        ends = (starts + reader.index.length[first:stop]).tolist()
        # one Unpacker over the stretch (~3 us a message; `unpackb` ~5 us), each message
        # ending where the index says
        unpacker = msgpack.Unpacker(max_buffer_size=max(len(data), 1))
        unpacker.feed(data)
        count = 0
        try:
            for message, end in zip(unpacker, ends, strict=False):
                count += 1
                if unpacker.tell() != end or type(message) is not dict:
                    return None
                message.pop("nanorec.t", None)
                entry = message.get(kind)
                if len(message) != 1 or type(entry) is not dict:
                    return None
                member = entry.get("member")
                if not _PLAIN_KEYS.issuperset(entry) or type(member) is not bytes:
                    return None
                if member[:10] != GZIP_HEADER:
                    return None
                members.append(member)
        except Exception:  # any damage: `rows` names it
            return None
        if count != len(ends):
            return None
    return members


def _patch(
    rec: PbstreamRecording, kind: str, numbers: Ints, ok: np.ndarray[Any, Any], columns: Columns
) -> bool:
    """Puts the rows of the records `record_run` did not read (`~ok`) in `columns`, from
    `record_rows`; False when they are not one row a record with the columns' keys and
    types (then the run goes record by record)."""
    slow = np.flatnonzero(~ok)
    rows = list(record_rows(rec, kind, numbers[slow].tolist()))
    if len(rows) != len(slow) or any(row.keys() != columns.keys() for row in rows):
        return False
    for name, values in columns.items():
        got = [row[name] for row in rows]
        wanted = {"f": float, "b": bool}.get(values.dtype.kind, int)
        if any(type(value) is not wanted for value in got):
            return False
        column = values.copy()
        column[slow] = got
        columns[name] = column
    return True


__all__ = ["RUN", "table_columns"]
