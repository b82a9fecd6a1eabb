"""The archive's messages written a run at a time, in the bytes one at a time gave.

Each message is `{topic: {"timestamp": ns, "data": bytes}}` (`convert.py`). A topic's first
message also says what the topic is, the archive's first what the bag was (`described.py`):
those few are packed one by one. Between them, runs of small messages are built at once
(`packed.pack_run`) and given to `ArchiveWriter.write_joined_run`; large ones are joined
one by one (`write_stored_run`). The writer is flushed, and the
spool's pages given back, where the one-at-a-time loop did (every `RELEASE_BYTES` of data):
a flush ends a deflate block, so the archive's bytes depend on where it falls.
"""

from __future__ import annotations

from typing import Any, Final

import msgpack
import numpy as np
from numpy.typing import NDArray

from nanorec.archive.wire import timestamp_entry
from nanorec.archive.writer import ArchiveWriter
from nanorec.buffers import Buffer

from .bag import BagLayout
from .described import BAG_KEY, TOPIC_KEY, bag_facts, declarations
from .packed import head, pack_run
from .storage import RELEASE_BYTES, gather, release_pages

#: Runs whose datas average this many bytes or more are joined one message at a time (not
#: lent as pieces: a block of one message deflated from pieces is not always the same bytes
#: as from the message, which is what one-at-a-time writing deflated).
_LARGE_FROM: Final = 4096
#: Data bytes of a run built at once (its temporaries are a few times as large).
_RUN_BYTES: Final = 4 << 20


class Runs:
    """Writes the archive's messages, a block of them (in archive order) at a time."""

    def __init__(
        self,
        writer: ArchiveWriter,
        layout: BagLayout,
        entries: list[dict[str, Any]],
        topics: list[str],
        data: Buffer,
    ) -> None:
        self.writer = writer
        self.layout = layout
        self.entries = entries
        self.topics = topics
        self.data = data
        self.view = memoryview(data)
        self.array: NDArray[np.uint8] = np.frombuffer(data, np.uint8)
        self.declared = declarations(entries)
        self.packer = msgpack.Packer()
        self.heads: list[bytes] = []  # by topic code, made once the topic's first is written
        self.kinds = [(topic,) for topic in topics]
        self.seen = np.zeros(len(topics), bool)
        self.released = 0  # data bytes since the last flush

    def block(
        self,
        first: int,
        times: NDArray[np.int64],
        offsets: NDArray[np.int64],
        lengths: NDArray[np.int64],
        topics: NDArray[np.int64],
    ) -> None:
        """Messages `first`... (archive numbers): times (ns), spool offsets, data lengths and
        topic codes."""
        breaks = {n: "flush" for n in self._flushes(lengths)}
        if not self.seen[topics].all():  # a topic's first message (else no sort to find it)
            codes, where = np.unique(topics, return_index=True)
            for code, n in zip(codes.tolist(), where.tolist(), strict=True):
                if not self.seen[code]:
                    self.seen[code] = True
                    breaks[n] = breaks.get(n, "") + "first"
        at = 0
        for n in [*sorted(breaks), len(times)]:
            self._runs(times[at:n], offsets[at:n], lengths[at:n], topics[at:n])
            if n == len(times):
                break
            what = breaks[n]
            at = n
            if "flush" in what:
                self.writer.flush()
                release_pages(self.data)
            if "first" in what:
                self._first(
                    first + n, int(times[n]), int(offsets[n]), int(lengths[n]), int(topics[n])
                )
                at = n + 1

    def _flushes(self, lengths: NDArray[np.int64]) -> list[int]:
        """Where a flush comes before a message: once the data since the last one, that
        message's included, passes `RELEASE_BYTES` (the message then starts the count anew,
        uncounted)."""
        ends = np.cumsum(lengths)
        found: list[int] = []
        done = 0  # data bytes of the messages before `start`
        start = 0
        while start < len(lengths):
            n = int(np.searchsorted(ends, RELEASE_BYTES - self.released + done, "right"))
            if n >= len(lengths):
                self.released += int(ends[-1]) - done
                break
            found.append(n)
            self.released = 0
            done = int(ends[n])
            start = n + 1
        return found

    def _first(self, number: int, time: int, at: int, size: int, code: int) -> None:
        """A topic's first message, packed alone: it says what the topic (and, the archive's
        first, the bag) is."""
        topic = self.topics[code]
        value: dict[str, Any] = {"timestamp": time, "data": self.view[at : at + size]}
        value[TOPIC_KEY] = self.declared.get(topic)
        if number == 0:
            value[BAG_KEY] = bag_facts(self.layout, self.entries)
        packed = self.packer.pack({topic: value})
        self.writer.write_packed(packed, types=(topic,), timestamp_us=time // 1000)
        while len(self.heads) <= code:
            self.heads.append(b"")
        self.heads[code] = head(topic)

    def _runs(
        self,
        times: NDArray[np.int64],
        offsets: NDArray[np.int64],
        lengths: NDArray[np.int64],
        topics: NDArray[np.int64],
    ) -> None:
        """Messages none of which is a topic's first, nor preceded by a flush."""
        if not len(times):
            return
        ends = np.cumsum(lengths)
        start = 0
        while start < len(times):
            base = int(ends[start - 1]) if start else 0
            stop = max(int(np.searchsorted(ends, base + _RUN_BYTES, "right")), start + 1)
            run = slice(start, stop)
            if int(ends[stop - 1]) - base >= _LARGE_FROM * (stop - start):
                self._large(times[run], offsets[run], lengths[run], topics[run])
            else:
                self._joined(times[run], offsets[run], lengths[run], topics[run])
            start = stop

    def _joined(
        self,
        times: NDArray[np.int64],
        offsets: NDArray[np.int64],
        lengths: NDArray[np.int64],
        topics: NDArray[np.int64],
    ) -> None:
        count = len(lengths)
        if count > 1 and (offsets[1:] == (offsets + lengths)[:-1]).all():
            datas = self.array[int(offsets[0]) : int(offsets[-1] + lengths[-1])]
        else:
            datas = gather(self.array, offsets, lengths)
        joined, sizes = pack_run(self.heads, topics, times, datas, lengths)
        self.writer.write_joined_run(
            joined, sizes, types=self.kinds, kinds=topics, timestamps_us=times // 1000
        )

    def _large(
        self,
        times: NDArray[np.int64],
        offsets: NDArray[np.int64],
        lengths: NDArray[np.int64],
        topics: NDArray[np.int64],
    ) -> None:
        view, heads, pack, join = self.view, self.heads, msgpack.packb, b"".join
        stamps = (times // 1000).tolist()
        stored = [
            join(
                (
                    heads[code] + pack(time) + _bin_head(size),
                    view[at : at + size],
                    timestamp_entry(us),
                )
            )
            for code, time, at, size, us in zip(
                topics.tolist(),
                times.tolist(),
                offsets.tolist(),
                lengths.tolist(),
                stamps,
                strict=True,
            )
        ]
        kinds = [self.kinds[code] for code in topics.tolist()]
        self.writer.write_stored_run(stored, types=kinds, timestamps_us=stamps)


def _bin_head(size: int) -> bytes:
    """`"data"` and the msgpack bin header of `size` bytes."""
    if size < 1 << 8:
        return b"\xa4data\xc4" + size.to_bytes(1, "big")
    if size < 1 << 16:
        return b"\xa4data\xc5" + size.to_bytes(2, "big")
    return b"\xa4data\xc6" + size.to_bytes(4, "big")
