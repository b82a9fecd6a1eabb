"""`rosbag info` without ROS: the same text (`--freq`, `--yaml`), or JSON.

`Facts` are what the printout needs, read from a bag's own index (`index.py`, fast: what
ROS reads) or from a converted archive (crashed bags included). The text follows ROS's
`Bag.__str__` and `_get_yaml_info` (ros_comm tools/rosbag/src/rosbag/bag.py) exactly,
start and end included: ROS takes the first chunk's start and the last chunk's end in file
order, which are not the first and last message times when chunks overlap in time (a bag
written out of order by the Python API). JSON gives the true first and last message times.
"""

from __future__ import annotations

import datetime as dt
import heapq
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from .connection import Connection
from .index import BagIndex

if TYPE_CHECKING:
    from .recording import BagRecording


@dataclass
class Facts:
    path: str
    size: int
    connections: list[Connection]  # in id order
    counts: dict[int, int]
    #: (compression, uncompressed size, stored size) per chunk.
    chunks: list[tuple[str, int, int]]
    #: The true first and last message times (JSON).
    start_ns: int | None
    end_ns: int | None
    #: Per connection, message times in ns in ROS's index order (chunk after chunk in file
    #: order, as each chunk's index data lists them), for frequencies; None when not read.
    times: dict[int, NDArray[np.int64]] | None = None
    indexed: bool = True
    notes: list[str] = field(default_factory=list)
    #: What rosbag info prints as start and end (see the module), when chunks say.
    chunk_span: tuple[int, int] | None = None

    def span(self) -> tuple[float, float] | None:
        """Start and end as rosbag info prints them, in seconds; None without messages."""
        if self.start_ns is None or self.end_ns is None:
            return None
        start, end = self.chunk_span or (self.start_ns, self.end_ns)
        return _sec(start), _sec(end)

    @property
    def messages(self) -> int:
        return sum(self.counts.values())

    def topics(self) -> dict[str, list[Connection]]:
        by_topic: dict[str, list[Connection]] = {}
        for c in self.connections:
            by_topic.setdefault(c.topic, []).append(c)
        return dict(sorted(by_topic.items()))

    def types(self) -> list[tuple[str, str]]:
        """(type, md5) per type name: the first connection's md5, sorted as ROS sorts."""
        seen: dict[str, str] = {}
        for c in self.connections:
            seen.setdefault(c.type, c.md5sum)
        return sorted(seen.items())

    def frequency(self, connections: list[Connection]) -> float | None:
        """1 / the median gap between the topic's messages (ROS's `_median`, in floats), the
        messages in the order ROS takes them: `heapq.merge` of its connections' index lists,
        which are in file order, so chunks out of time order give negative gaps (and no rate
        when the median is not positive), not the gaps of the sorted stamps."""
        if self.times is None:
            return None
        parts = [self.times[c.id] for c in connections if len(self.times.get(c.id, ()))]
        if len(parts) > 1:  # exactly ROS's merge (its inputs need not be sorted)
            merged = heapq.merge(*(part.tolist() for part in parts))
            stamps = np.fromiter(merged, np.int64, sum(len(part) for part in parts))
        else:
            stamps = parts[0] if parts else np.zeros(0, np.int64)
        if len(stamps) < 2:
            return None
        seconds = _to_sec(stamps)
        periods = np.sort(seconds[1:] - seconds[:-1])
        n = len(periods)
        median = periods[n // 2] if n % 2 else (periods[n // 2 - 1] + periods[n // 2]) / 2
        return float(1.0 / median) if median > 0.0 else None

    def compression(self) -> dict[str, list[int]]:
        """Per compression kind: [chunks, uncompressed bytes, stored bytes]."""
        kinds: dict[str, list[int]] = {}
        for kind, size, stored in self.chunks:
            row = kinds.setdefault(kind, [0, 0, 0])
            row[0] += 1
            row[1] += size
            row[2] += stored
        return kinds

    def to_json(self) -> dict[str, Any]:
        start = None if self.start_ns is None else _sec(self.start_ns)
        end = None if self.end_ns is None else _sec(self.end_ns)
        return {
            "path": self.path,
            "version": "2.0",
            "size": self.size,
            "indexed": self.indexed,
            "messages": self.messages,
            "start": start,
            "end": end,
            "duration": None if start is None or end is None else end - start,
            "start_ns": self.start_ns,
            "end_ns": self.end_ns,
            "compression": {
                k: {"chunks": v[0], "uncompressed": v[1], "compressed": v[2]}
                for k, v in self.compression().items()
            },
            "types": [{"type": t, "md5": m} for t, m in self.types()],
            "topics": [
                {
                    "topic": topic,
                    "type": conns[0].type,
                    "messages": sum(self.counts.get(c.id, 0) for c in conns),
                    "connections": len(conns),
                    "frequency": self.frequency(conns),
                    "latching": any(c.latching for c in conns),
                    "callerids": sorted({c.callerid for c in conns if c.callerid}),
                }
                for topic, conns in self.topics().items()
            ],
            "notes": self.notes,
        }


def _sec(ns: int) -> float:
    """genpy's `Time.to_sec()`: float(secs) + float(nsecs) / 1e9."""
    return float(ns // 1_000_000_000) + float(ns % 1_000_000_000) / 1e9


def _to_sec(ns: NDArray[np.int64]) -> NDArray[np.float64]:
    return (ns // 1_000_000_000).astype(np.float64) + (ns % 1_000_000_000).astype(np.float64) / 1e9


def facts_of_index(path: str, index: BagIndex) -> Facts:
    counts: dict[int, int] = {}
    for chunk in index.chunks:
        for conn, n in chunk.counts.items():
            counts[conn] = counts.get(conn, 0) + n
    starts = [c.start_ns for c in index.chunks]
    ends = [c.end_ns for c in index.chunks]
    return Facts(
        path,
        index.size,
        [index.connections[k] for k in sorted(index.connections)],
        counts,
        [(c.compression, c.size, c.stored) for c in index.chunks],
        min(starts) if starts else None,
        max(ends) if ends else None,
        index.times or None,
        chunk_span=(starts[0], ends[-1]) if starts else None,
        notes=list(index.damaged),
    )


def facts_of_archive(recording: BagRecording, path: str | None = None) -> Facts:
    meta = recording.meta
    source = (recording.reader.description or {}).get("source") or {}
    conns, counts = np.unique(meta.conn, return_counts=True)
    times = _index_order(recording)
    notes = []
    if meta.unindexed:
        notes.append(
            "unindexed bag (its writer did not close it): these are its recovered messages"
        )
    if meta.adopted:
        notes.append(
            "recovered from a killed conversion: the bag's first messages in time (the "
            "original's layout is lost: it exports as a new indexed bag)"
        )
    if meta.cut:
        notes.append(f"cut: {meta.cut[1]} bytes at byte {meta.cut[0]} ({meta.cut[2]})")
    return Facts(
        path if path is not None else str(source.get("name", recording.reader.path)),
        int(source.get("size", 0)),
        [meta.connections[k] for k in sorted(meta.connections)],
        dict(zip(conns.tolist(), counts.tolist(), strict=True)),
        list(meta.chunks),
        int(meta.time.min()) if len(meta.time) else None,
        int(meta.time.max()) if len(meta.time) else None,
        times,
        indexed=not meta.unindexed,
        notes=notes,
        chunk_span=_chunk_span(recording),
    )


def _index_order(recording: BagRecording) -> dict[int, NDArray[np.int64]]:
    """Per connection, its message times as ROS's index lists them: in file order, each
    chunk's messages in time order (how rosbag writes and reindexes a chunk's index data);
    messages outside chunks (an unindexed bag's) in file order."""
    meta = recording.meta
    order = np.asarray(meta.rank, dtype=np.int64)  # archive numbers in file order
    times, conns = meta.time[order], meta.conn[order]
    group = np.arange(len(order), dtype=np.int64)  # a chunk's messages share its first's
    for segment in meta.segments:
        if segment[0] == "chunk":
            first, runs = segment[4], np.frombuffer(segment[5], dtype="<i8")
            group[first : first + int(runs[runs > 0].sum())] = first
    ranked = np.lexsort((times, group))  # stable: equal times keep their file order
    times, conns = times[ranked], conns[ranked]
    return {int(c): times[conns == c] for c in np.unique(conns).tolist()}


def _chunk_span(recording: BagRecording) -> tuple[int, int] | None:
    """The first chunk's start and the last one's end, in file order, from the times of
    their messages (what their chunk info records say, or would after a reindex)."""
    meta = recording.meta
    spans = []
    for segment in meta.segments:
        if segment[0] == "chunk":
            first, runs = segment[4], np.frombuffer(segment[5], dtype="<i8")
            count = int(runs[runs > 0].sum())
            if count:
                spans.append((first, count))
    if not spans:
        return None
    times = [meta.time[meta.rank[first : first + count]] for first, count in (spans[0], spans[-1])]
    return int(times[0].min()), int(times[1].max())


def human_size(size: float) -> str:
    for suffix in ("KB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"):
        size /= 1024.0
        if size < 1024.0:
            return f"{size:.1f} {suffix}"
    return "-"


def human_frequency(freq: float) -> str:
    for suffix in ("Hz", "kHz", "MHz", "GHz", "THz", "PHz", "EHz", "ZHz", "YHz"):
        if freq < 1000.0:
            return f"{freq:.1f} {suffix}"
        freq /= 1000.0
    return "-"


def time_text(secs: float, zone: dt.tzinfo | None) -> str:
    """ROS's `_time_to_str`: local date to the second, then the fraction on its own."""
    fraction = f"{secs - int(secs):.2f}"[1:]
    when = dt.datetime.fromtimestamp(int(secs), zone)
    return when.strftime("%b %d %Y %H:%M:%S") + fraction


def duration_text(duration: float) -> str:
    secs = duration % 60
    mins = int(duration / 60)
    hrs = int(mins / 60)
    if hrs > 0:
        return "%dhr %d:%02ds (%ds)" % (hrs, mins % 60, secs, duration)  # noqa: UP031 - %d truncates floats as ROS
    if mins > 0:
        return "%d:%02ds (%ds)" % (mins, secs, duration)  # noqa: UP031
    return f"{duration:.1f}s"


def text(facts: Facts, zone: dt.tzinfo | None = None) -> str:
    """What `rosbag info` prints (with `--freq` when `facts.times` was read)."""
    rows: list[tuple[str, str]] = [("path", facts.path), ("version", "2.0")]
    span = facts.span()
    if span is None:
        rows.append(("size", human_size(facts.size)))
        return _columns(rows)
    start, end = span
    duration = end - start
    rows += [
        ("duration", duration_text(duration)),
        ("start", f"{time_text(start, zone)} ({start:.2f})"),
        ("end", f"{time_text(end, zone)} ({end:.2f})"),
        ("size", human_size(facts.size)),
        ("messages", str(facts.messages)),
    ]
    rows += _compression_rows(facts, duration)
    types = facts.types()
    type_width = max(len(t) for t in {c.type for c in facts.connections})
    for i, (name, md5) in enumerate(types):
        rows.append(("types" if i == 0 else "", f"{name:<{type_width}} [{md5}]"))
    topics = facts.topics()
    counts = {t: sum(facts.counts.get(c.id, 0) for c in cs) for t, cs in topics.items()}
    freqs = {t: f for t, cs in topics.items() if (f := facts.frequency(cs)) is not None}
    topic_width = max(len(t) for t in topics)
    count_width = max(len(str(n)) for n in counts.values())
    freq_width = max((len(human_frequency(f)) for f in freqs.values()), default=0)
    for i, (topic, conns) in enumerate(topics.items()):
        n = counts[topic]
        line = f"{topic:<{topic_width}}   {n:>{count_width}} {'msgs' if n > 1 else 'msg '}"
        if topic in freqs:
            line += f" @ {human_frequency(freqs[topic]):>{freq_width}}"
        else:
            line += "   " + " " * freq_width
        line += f" : {conns[0].type:<{type_width}}"
        if len(conns) > 1:
            line += f" ({len(conns)} connections)"
        rows.append(("topics" if i == 0 else "", line))
    return _columns(rows)


def _compression_rows(facts: Facts, duration: float) -> list[tuple[str, str]]:
    kinds = facts.compression()
    if not kinds:
        return [("compression", "none")]
    total = len(facts.chunks)
    parts = []
    for kind, (count, size, stored) in sorted(
        kinds.items(), key=lambda kv: (kv[1][0], kv[0]), reverse=True
    ):
        if kind != "none":
            parts.append(f"{kind} [{count}/{total} chunks; {100.0 * stored / size:.2f}%]")
        else:
            parts.append(f"{kind} [{count}/{total} chunks]")
    rows = [("compression", ", ".join(parts))]
    if all(kind == "none" for kind in kinds):
        return rows
    size = sum(c[1] for c in facts.chunks)
    stored = sum(c[2] for c in facts.chunks)
    size_text, stored_text = human_size(size), human_size(stored)
    width = max(len(size_text), len(stored_text))
    if duration > 0:
        rate, stored_rate = human_size(size / duration), human_size(stored / duration)
        rate_width = max(len(rate), len(stored_rate))
        rows.append(("uncompressed", f"{size_text:>{width}} @ {rate:>{rate_width}}/s"))
        rows.append(
            (
                "compressed",
                f"{stored_text:>{width}} @ {stored_rate:>{rate_width}}/s "
                f"({100.0 * stored / size:.2f}%)",
            )
        )
    else:
        rows += [
            ("uncompressed", f"{size_text:>{width}}"),
            ("compressed", f"{stored_text:>{width}}"),
        ]
    return rows


def _columns(rows: list[tuple[str, str]]) -> str:
    width = max(len(label) for label, _ in rows) + 1
    out = "".join(f"{(label + ':') if label else '':<{width}} {value}\n" for label, value in rows)
    return out.rstrip()


def yaml(facts: Facts) -> str:
    """What `rosbag info --yaml` prints (`print` adds the final blank line)."""
    out = [f"path: {facts.path}", "version: 2.0"]
    span = facts.span()
    if span is None:
        out += [f"size: {facts.size}", "indexed: False"]
        return "\n".join(out) + "\n"
    start, end = span
    out += [
        f"duration: {end - start:.6f}",
        f"start: {start:.6f}",
        f"end: {end:.6f}",
        f"size: {facts.size}",
        f"messages: {facts.messages}",
        "indexed: True",
    ]
    kinds = facts.compression()
    if not kinds:
        out.append("compression: none")
    else:
        main = max(kinds.items(), key=lambda kv: (kv[1][0], kv[0]))[0]
        out.append(f"compression: {main}")
        if any(kind != "none" for kind in kinds):
            out.append(f"uncompressed: {sum(c[1] for c in facts.chunks)}")
            out.append(f"compressed: {sum(c[2] for c in facts.chunks)}")
    out.append("types:")
    for name, md5 in facts.types():
        out += [f"    - type: {name}", f"      md5: {md5}"]
    out.append("topics:")
    for topic, conns in facts.topics().items():
        out += [
            f"    - topic: {topic}",
            f"      type: {conns[0].type}",
            f"      messages: {sum(facts.counts.get(c.id, 0) for c in conns)}",
        ]
        if len(conns) > 1:
            out.append(f"      connections: {len(conns)}")
        freq = facts.frequency(conns)
        if freq is not None:
            out.append(f"      frequency: {freq:.4f}")
    return "\n".join(out) + "\n"
