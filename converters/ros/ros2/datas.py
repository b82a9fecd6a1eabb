"""The stored data of many archive messages at once: what export joins back into bag files.

Each archive message is `{topic: {"timestamp": ns, "data": bin}, "nanorec.t": t}` (plus the
first message of a topic's declarations, see `convert.py`). Reading them one by one (a
msgpack decode, a CRC, a few index lookups each) was most of an export of small messages.
Here they are read in runs (`ArchiveReader.raw_run`: one read, one CRC pass), and where each
one's data lies is found for all of them at once with numpy, by the layout above; a message
of another layout (a first of its topic, another writer's) is decoded as before. The result
is one buffer and, per message, its data's start and length in it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final, Protocol

import msgpack
import numpy as np
from numpy.lib.stride_tricks import as_strided, sliding_window_view
from numpy.typing import NDArray

from nanorec.archive.archive_file import MSGPACK_ERRORS
from nanorec.archive.reader import ArchiveReader
from nanorec.errors import ArchiveError, FormatError

from .storage import RELEASE_BYTES

Ints = NDArray[np.int64]

#: Archive numbers further apart than this are read as two runs (not the messages between).
_GAP: Final = 64


def _words(text: bytes, second: int) -> tuple[np.uint64, np.uint64]:
    """The 8 bytes of `text` at 0 and the 7 at `second`, as little-endian words."""
    return (
        np.frombuffer(text[:8], "<u8")[0],
        np.frombuffer(text[second : second + 7] + b"\x00", "<u8")[0],
    )


_INNER: Final = _words(b"\x82\xa9timestamp", 4)  # 11 bytes: 0-7, 4-10
_STAMP: Final = _words(b"\xa9nanorec.t", 3)  # 10 bytes: 0-7, 3-9
_DATA_KEY: Final = np.frombuffer(b"\xa4data\x00\x00\x00", "<u8")[0]
_MASK7: Final = np.uint64((1 << 56) - 1)
_MASK5: Final = np.uint64((1 << 40) - 1)


def _int_sizes() -> NDArray[np.int64]:
    """Bytes of a msgpack integer by its first byte (0: not an integer)."""
    sizes = np.zeros(256, np.int64)
    sizes[0x00:0x80] = 1
    sizes[0xE0:0x100] = 1
    for first, size in ((0xCC, 2), (0xCD, 3), (0xCE, 5), (0xCF, 9)):
        sizes[first] = sizes[first + 4] = size  # uint8..64, int8..64
    return sizes


_INT_SIZES: Final = _int_sizes()


def data_of(reader: ArchiveReader, number: int) -> bytes | memoryview:
    """The stored data of archive message `number` (decoded one by one)."""
    return _data_in(reader[number], number)


def _data_in(message: dict[str, Any], number: int) -> bytes | memoryview:
    for value in message.values():
        if isinstance(value, dict) and "data" in value:
            data = value["data"]
            if isinstance(data, bytes | memoryview):
                return data
    raise FormatError(f"archive message {number} is not a ROS 2 bag message")


class Datas:
    """The data of the archive messages `numbers` (a bag file's, in its order), taken by
    position in `numbers`; a count instead means messages 0 to count - 1 (a bag of one file:
    10 M numbers need not be held)."""

    def __init__(self, reader: ArchiveReader, numbers: NDArray[Any] | int) -> None:
        self.reader = reader
        self.numbers = numbers
        self._read = 0

    def __len__(self) -> int:
        return self.numbers if isinstance(self.numbers, int) else len(self.numbers)

    def take(self, first: int, stop: int) -> tuple[bytes, Ints, Ints]:
        """The data of positions `first` to `stop - 1`: one buffer, and each one's start and
        length in it."""
        return self.pick(np.arange(first, stop, dtype=np.int64))

    def pick(self, positions: Ints) -> tuple[bytes, Ints, Ints]:
        """The data of `positions` (any order): one buffer, each one's start and length."""
        if isinstance(self.numbers, int):  # (out of range: `raw_run` says so)
            numbers = np.asarray(positions, np.int64)
        else:
            numbers = np.asarray(self.numbers[positions], np.int64)
        if not len(numbers):
            return b"", np.zeros(0, np.int64), np.zeros(0, np.int64)
        order = np.argsort(numbers, kind="stable")
        ordered = numbers[order]
        cuts = np.flatnonzero(np.diff(ordered) > _GAP) + 1
        runs = np.split(ordered, cuts)
        buffers: list[bytes] = []
        starts = np.empty(len(numbers), np.int64)
        lengths = np.empty(len(numbers), np.int64)
        base = at = 0
        for run in runs:
            low, high = int(run[0]), int(run[-1]) + 1
            # the run's messages lie back to back in `data`: lengths without the index
            data, run_starts = self.reader.raw_run(low, high)
            starts[at : at + len(run)] = run_starts[run - low] + base
            lengths[at : at + len(run)] = np.diff(run_starts, append=len(data))[run - low]
            buffers.append(data)
            base += len(data)
            at += len(run)
            self._read += len(data)
        if self._read > RELEASE_BYTES:  # bounded RSS: the archive's pages given back
            self._read = 0
            self.reader.release_pages()
        buffer = buffers[0] if len(buffers) == 1 else b"".join(buffers)
        data_starts, data_lengths = self._locate(buffer, starts, lengths, ordered)
        unorder = np.empty_like(order)
        unorder[order] = np.arange(len(order))
        extra = np.flatnonzero(data_starts < 0)
        if len(extra):
            buffer, data_starts, data_lengths = self._decoded(
                buffer, starts, lengths, ordered, extra, data_starts, data_lengths
            )
        return buffer, data_starts[unorder], data_lengths[unorder]

    @staticmethod
    def _locate(buffer: bytes, starts: Ints, lengths: Ints, numbers: Ints) -> tuple[Ints, Ints]:
        """Each message's data (start, length) by the usual layout; start -1 where the
        message is laid out otherwise. The bytes are read 8 at a time (a little-endian
        word at any offset: an overlapping view of the buffer), so a key is one or two
        compares, not ten."""
        if len(buffer) < 8:
            return np.full(len(starts), -1, np.int64), np.zeros(len(starts), np.int64)
        words = np.ndarray((len(buffer) - 7,), "<u8", buffer, 0, (1,))
        last = len(buffer) - 8
        ends = starts + lengths
        ok = lengths >= 32

        def word(pos: Ints) -> NDArray[np.uint64]:
            found: NDArray[np.uint64] = words[np.clip(pos, 0, last)]
            return found

        def byte(w: NDArray[np.uint64], k: int) -> Ints:
            found: Ints = ((w >> np.uint64(8 * k)) & np.uint64(0xFF)).astype(np.int64)
            return found

        w = word(starts)
        ok &= byte(w, 0) == 0x82  # {topic: ..., "nanorec.t": ...}
        head = byte(w, 1)
        fix = (head >= 0xA0) & (head <= 0xBF)
        ok &= fix | (head == 0xD9)
        pos = starts + np.where(fix, 2 + (head & 0x1F), 3 + byte(w, 2))
        # {"timestamp": ..., "data": ...}: 82 a9 "timestamp", an integer
        ok &= word(pos) == _INNER[0]
        w = word(pos + 4)
        ok &= (w & _MASK7) == _INNER[1]
        stamp = _INT_SIZES[byte(w, 7)]
        ok &= stamp > 0
        pos = pos + 11 + stamp
        w = word(pos)  # a4 "data", then bin 8/16/32 and its size
        ok &= (w & _MASK5) == _DATA_KEY
        kind = byte(w, 5)
        wide = word(pos + 6)
        size = np.select(
            [kind == 0xC4, kind == 0xC5, kind == 0xC6],
            [
                byte(w, 6),
                byte(w, 6) << 8 | byte(w, 7),
                byte(wide, 0) << 24 | byte(wide, 1) << 16 | byte(wide, 2) << 8 | byte(wide, 3),
            ],
            -1,
        )
        ok &= size >= 0
        data = pos + 6 + np.select([kind == 0xC4, kind == 0xC5], [1, 2], 4)
        tail = data + size
        ok &= tail + 11 <= ends
        ok &= word(tail) == _STAMP[0]  # a9 "nanorec.t", an integer
        w = word(tail + 3)
        ok &= (w & _MASK7) == _STAMP[1]
        ok &= tail + 10 + _INT_SIZES[byte(w, 7)] == ends
        return np.where(ok, data, -1), np.where(ok, size, 0)

    def _decoded(
        self,
        buffer: bytes,
        starts: Ints,
        lengths: Ints,
        numbers: Ints,
        which: Ints,
        data_starts: Ints,
        data_lengths: Ints,
    ) -> tuple[bytes, Ints, Ints]:
        """The messages `which` decoded one by one, their data appended to `buffer`."""
        pieces = [buffer]
        base = len(buffer)
        for k in which.tolist():
            number = int(numbers[k])
            start = int(starts[k])
            raw = buffer[start : start + int(lengths[k])]
            try:
                message = msgpack.unpackb(raw)
            except MSGPACK_ERRORS as error:
                raise ArchiveError(
                    f"message {number} ({len(raw)} bytes) is not one valid msgpack object: {error}"
                ) from None
            if type(message) is not dict:
                raise FormatError(f"archive message {number} is not a ROS 2 bag message")
            message.pop("nanorec.t", None)
            data = _data_in(message, number)
            data_starts[k], data_lengths[k] = base, len(data)
            pieces.append(bytes(data))
            base += len(data)
        return b"".join(pieces), data_starts, data_lengths


class Source(Protocol):
    """Data of a bag file's messages by position in its order: `Datas`, or `Given`."""

    def __len__(self) -> int: ...

    def take(self, first: int, stop: int) -> tuple[bytes, Ints, Ints]: ...

    def pick(self, positions: Ints) -> tuple[bytes, Ints, Ints]: ...


class Given:
    """Data given as byte strings (tests, tools): held as one buffer."""

    def __init__(self, datas: Iterable[bytes | memoryview]) -> None:
        items = [bytes(data) for data in datas]
        self.lengths = np.fromiter(map(len, items), np.int64, len(items))
        self.starts = np.cumsum(self.lengths) - self.lengths
        self.buffer = b"".join(items)

    def __len__(self) -> int:
        return len(self.lengths)

    def take(self, first: int, stop: int) -> tuple[bytes, Ints, Ints]:
        return self.buffer, self.starts[first:stop], self.lengths[first:stop]

    def pick(self, positions: Ints) -> tuple[bytes, Ints, Ints]:
        return self.buffer, self.starts[positions], self.lengths[positions]


def as_source(datas: Source | Iterable[bytes | memoryview]) -> Source:
    """`datas` as a `Source` (byte strings are held as one buffer)."""
    if isinstance(datas, Datas | Given):
        return datas
    return Given(datas)  # type: ignore[arg-type]


def slices(buffer: bytes, starts: Ints, stops: Ints) -> bytes:
    """`buffer[start:stop]` for each pair, joined."""
    lengths = stops - starts
    out = np.empty(int(lengths.sum()), np.uint8)
    gather_into(out, np.cumsum(lengths) - lengths, buffer, starts, lengths)
    return out.tobytes()


#: Pieces of one length fewer than this are copied one by one.
_FEW: Final = 16


def gather_into(out: NDArray[np.uint8], out_at: Ints, source: bytes | memoryview,
                starts: Ints, lengths: Ints) -> None:  # fmt: skip
    """`source[start:start + length]` copied to `out[at:at + length]` for each triple (no
    two overlapping in `out`). Why not slices joined: a bag's pieces are a few lengths
    (a type's data, a page's cell header), and every piece of one length is one numpy copy
    of rows of that width (~6x fewer CPU seconds than a slice each, for 100-byte pieces);
    a length seen a few times is copied piece by piece."""
    src = np.frombuffer(source, np.uint8)
    distinct, inverse, counts = np.unique(lengths, return_inverse=True, return_counts=True)
    order = np.argsort(inverse, kind="stable")
    first = 0
    for length, count in zip(distinct.tolist(), counts.tolist(), strict=True):
        group = order[first : first + count]
        first += count
        if length <= 0:
            continue
        if count < _FEW:
            for at, start in zip(out_at[group].tolist(), starts[group].tolist(), strict=True):
                out[at : at + length] = src[start : start + length]
            continue
        rows = sliding_window_view(src, length)[starts[group]]
        target = as_strided(out, (len(out) - length + 1, length), (1, 1), writeable=True)
        target[out_at[group]] = rows
