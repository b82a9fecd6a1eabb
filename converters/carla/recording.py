"""Random access to a converted CARLA recording: `len`, `frame(n)`, `at(t)`, trajectories.

`CarlaRecording` wraps an `ArchiveReader` over a CARLA archive (see `convert.py`).
Seeking never replays: a frame costs one message read through `mmap` plus lookups in
the event tables (`world.py`), whatever the recording's length. Frame numbers are
0-based positions in the archive (`len(rec)` frames); CARLA's own 1-based frame id is
`World.frame_id`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from nanorec.archive.reader import ArchiveReader
from nanorec.archive.urls import is_url
from nanorec.errors import FormatError, OutOfRangeError
from nanorec.recording import ArchiveRecording
from nanorec.selection import Selection
from nanorec.standard import StandardMessage
from nanorec.untyped import Payload

from .header import Header
from .ids import MAGIC, Family, Kind
from .ids import family as family_named
from .message import DAMAGE, checked_frame, records
from .meta import WORLD_MEMBER, read_meta
from .records import FIXED_DTYPES
from .view import CarlaView
from .world import World
from .world_build import build_world
from .world_tables import WorldTables

if TYPE_CHECKING:
    from nanorec.outputs.mcap import McapRecord

#: Rotations in Python: named fields, in `carla.Rotation`'s order (degrees).
ROTATION_DTYPE = np.dtype([("pitch", "<f8"), ("yaw", "<f8"), ("roll", "<f8")])


@dataclass(frozen=True, repr=False)
class Trajectory:
    """An actor's recorded poses: one row per frame in which it has a Position record.

    `index` are archive frame numbers, `time` the frames' elapsed seconds, `location`
    (n, 3) x/y/z in cm and `rotation` a structured array with fields `pitch`, `yaw`, `roll`
    in degrees (`rotation["yaw"]`; what `RecordingWriter.positions` takes back).
    """

    actor_id: int
    index: npt.NDArray[np.int64]
    time: npt.NDArray[np.float64]
    location: npt.NDArray[np.float64]
    rotation: npt.NDArray[np.void]

    def __repr__(self) -> str:
        span = f", {self.time[0]:.3f}-{self.time[-1]:.3f} s" if len(self.time) else ""
        return f"<Trajectory of actor {self.actor_id}: {len(self.time)} poses{span}>"


class CarlaRecording(ArchiveRecording):
    """A CARLA recording opened for random access; use as a context manager.

    Messages are frames: `decode(n)` (and `messages()`, `at(t)`) give `World`s.
    Raises `FormatError` when the archive is not a CARLA archive.
    """

    format = "carla"

    def __init__(self, reader: ArchiveReader) -> None:
        super().__init__(reader)
        meta = read_meta(reader)
        self.family: Family = family_named(meta["family"])
        self.orders: list[bytes] = list(meta.get("orders", []))  # packet-id sequences
        head = meta["header"]
        self.header = Header(
            int(head["version"]),
            _str(head["magic"]),
            int(head["date"]),
            _str(head["map_name"]),
            len(head["bytes"]),
        )
        self.tables = WorldTables(self.family.engine, reader.meta(WORLD_MEMBER))
        self._cache: OrderedDict[int, Mapping[str, Any]] = OrderedDict()
        self._viewer: CarlaView | None = None

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, family: str | None = None) -> CarlaRecording:
        """Open a CARLA archive, or a native CARLA file converted into a temporary archive
        (removed when the recording is closed or collected). By URL: an archive read in
        place."""
        if is_url(path):
            return cls(ArchiveReader(path))
        path = Path(path)
        with path.open("rb") as handle:
            head = handle.read(18)
        if head[4:18] == MAGIC:
            # the converter (the archive writer, the format's detection...) is imported to
            # convert, not to read an archive: ~60 ms of `nanorec view`'s first paint
            from .convert import convert

            workdir = Path(tempfile.mkdtemp(prefix="nanorec-"))
            try:
                out = workdir / (path.name + ".nanover.zip")
                convert(path, out, family=family)
            except BaseException:
                shutil.rmtree(workdir, ignore_errors=True)
                raise
            return cls(ArchiveReader(out, temporary_dir=workdir))
        return cls(ArchiveReader(path))

    def kind_of(self, number: int) -> str:
        return "frame"

    def decode(self, number: int) -> World:
        return self.frame(number)

    def table_kinds(self) -> list[str]:
        """CARLA's record kinds that tabulate (positions, collisions, spawns...)."""
        from .table import table_kinds

        return [kind.value for kind in table_kinds()]

    def rows(self, kind: str, selection: Selection | None = None) -> Iterator[dict[str, Payload]]:
        """The records of `kind` as rows (see `table.iter_rows`: frame, index, time, then
        the record's fields in the file's units)."""
        from .table import iter_rows

        lo, hi = (selection or Selection()).span_from(self.reader)
        return iter_rows(self, kind, frames=range(lo, hi))

    def table_columns(
        self,
        kinds: list[str],
        selection: Selection | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """`rows` of every kind in `kinds` at once, as numpy columns in runs of frames (for
        `nanorec.outputs.arrow`'s Parquet export: one read of each frame; see `columns.py`)."""
        from .columns import column_chunks
        from .table import parse_kind

        lo, hi = (selection or Selection()).span_from(self.reader)
        chosen = [parse_kind(kind) for kind in kinds]
        for kind, table in column_chunks(self, chosen, range(lo, hi), progress):
            yield kind.value, table

    def mcap_messages(
        self,
        selection: Selection | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> Iterator[McapRecord]:
        """Foxglove messages for MCAP export (`nanorec.outputs.mcap`; see `mcap.py`)."""
        from .mcap import mcap_messages

        return mcap_messages(self, selection, progress)

    def standard_messages(self, selection: Selection | None = None) -> Iterator[StandardMessage]:
        """`/tf` and the hero's pose as standard messages, for writers of other formats (a
        ROS 2 bag; `nanorec.standard`, see `standard.py`)."""
        from .standard_runs import standard_messages

        return standard_messages(self, selection)

    def view_overview(self) -> dict[str, Any]:
        """The hero's path and the bounds of every actor, for `nanorec view` (`view.py`)."""
        return self._view().overview

    def view_scene(self, number: int) -> dict[str, Any]:
        """Frame `number` from above: actors as boxes, traffic lights by state, recent
        collisions, the hero to follow (`view.py`; y flipped to point up)."""
        return self._view().scene(number)

    def _view(self) -> CarlaView:
        if self._viewer is None:
            self._viewer = CarlaView(self)
        return self._viewer

    def summary(self) -> dict[str, Any]:
        summary = super().summary()
        summary.update(
            family=self.family.name,
            map=self.map_name,
            date=self.header.date,
            frames=len(self),
            duration=self.duration,
        )
        return summary

    def __len__(self) -> int:
        return len(self.reader)

    def __repr__(self) -> str:
        return (
            f"<CarlaRecording {self.reader.path.name}: {len(self)} frames, "
            f"{self.duration:.3f} s, map {self.header.map_name}, family {self.family.name}>"
        )

    @property
    def map_name(self) -> str:
        return self.header.map_name

    @property
    def times(self) -> npt.NDArray[np.float64]:
        """Each frame's elapsed time in seconds (from the index, to the microsecond)."""
        return self.reader.index.timestamp_us.astype(np.float64) / 1e6

    @property
    def duration(self) -> float:
        """Elapsed seconds of the last frame (what CARLA reports as the duration): its time
        alone, so that an archive read by URL fetches one page, not its whole index."""
        return self.reader.timestamp_us(-1) / 1e6 if len(self) else 0.0

    def frame_map(self, index: int) -> Mapping[str, Any]:
        """The frame map of archive frame `index` (see `message.py`), cached."""
        index = self._normalize(index)
        frame = self._cache.get(index)
        if frame is None:
            frame = checked_frame(self.reader[index], index, self.family.engine)
            self._cache[index] = frame
            if len(self._cache) > 64:
                self._cache.popitem(last=False)
        return frame

    def frame(self, index: int) -> World:
        """The full world state after frame `index` (0-based; negative counts from the end).

        Raises IndexError outside the recording.
        """
        index = self._normalize(index)
        try:
            return build_world(
                index, self.frame_map(index), self.tables, earlier_frame=self.frame_map
            )
        except DAMAGE as error:
            raise FormatError(f"archive message {index}: damaged frame ({error})") from None

    def at(self, seconds: float) -> World:
        """The world at `seconds` after the start: the last frame whose elapsed time is
        at or before it (the first frame for earlier times). Raises IndexError when empty."""
        found = self.reader.index_at_time(round(seconds * 1e6))
        return self.frame(0 if found is None else found)

    def frames(self, start: int = 0, stop: int | None = None) -> Iterator[World]:
        """The world at each frame of `range(start, stop)` (slice semantics)."""
        for index in range(*slice(start, stop).indices(len(self))):
            yield self.frame(index)

    def trajectory(self, actor_id: int) -> Trajectory:
        """Every recorded pose of `actor_id`, over all its lifetimes in the recording."""
        tables = self.tables
        rows = np.flatnonzero(tables.spawn_ids == actor_id)
        dtype = FIXED_DTYPES[self.family.engine][Kind.POSITION]
        indexes: list[int] = []
        found: list[npt.NDArray[Any]] = []
        for row in rows.tolist():
            first = int(tables.spawn_start[row])
            end = min(int(tables.spawn_end[row]), len(self))
            for index in range(first, end):
                positions = records(self.reader[index]["frame"], Kind.POSITION, self.family.engine)
                hit = positions[positions["id"] == actor_id]
                if len(hit):
                    indexes.append(index)
                    found.append(hit[-1:])
        poses = np.concatenate(found) if found else np.empty(0, dtype)
        index_array = np.asarray(indexes, dtype=np.int64)
        recorded = poses["rotation"].astype(np.float64).reshape(-1, 3)  # roll, pitch, yaw
        rotation = np.zeros(len(recorded), ROTATION_DTYPE)
        rotation["roll"], rotation["pitch"], rotation["yaw"] = recorded.T
        return Trajectory(
            actor_id,
            index_array,
            self.reader.index.timestamp_us[index_array].astype(np.float64) / 1e6,
            poses["location"].astype(np.float64),
            rotation,
        )

    def _normalize(self, index: int) -> int:
        count = len(self)
        if not -count <= index < count:
            raise OutOfRangeError(f"frame {index} out of range: the recording has {count} frames")
        return index % count


def _str(value: object) -> str:
    """A header string from the CARLA member: bytes when it was not UTF-8 (kept as the file
    has it, surrogate-escaped, so the text queries print the original bytes)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return str(value)
