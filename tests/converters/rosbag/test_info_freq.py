"""`info --freq` takes each topic's rate as ROS does (ros_comm's rosbag/bag.py: `_get_entries`
merges the connections' index lists, each in file order, chunk after chunk; the median gap of
those stamps, none when it is not positive), not over the stamps sorted: a bag whose chunks
are out of time order gets no rate where ROS prints none, and the same one from its archive."""

from __future__ import annotations

import heapq
import itertools
from pathlib import Path

import pytest

from nanorec import registry
from nanorec.cli import _register, app
from nanorec.converters.ros.ros1.generate import connection_fields
from nanorec.converters.ros.ros1.msgdef import parse_definition
from nanorec.converters.ros.ros1.serialize import encode
from nanorec.converters.ros.ros1.stock import STOCK
from nanorec.converters.ros.ros1.writer import BagWriter
from tests.conftest import make_runner

START = 1_700_000_000 * 10**9
runner = make_runner()


def _bag(path: Path, chunks: list[list[tuple[int, int]]]) -> Path:
    """A bag of `chunks` (each closed after its (connection, time ns) messages, in file
    order): /chatter on connections 0 and 1 (two publishers), /empty on 2."""
    types = {t: parse_definition(t, STOCK[t][1]) for t in ("std_msgs/String", "std_msgs/Empty")}
    with path.open("wb") as stream:
        bag = BagWriter(stream)
        for conn, topic, type_name in (
            (0, "/chatter", "std_msgs/String"),
            (1, "/chatter", "std_msgs/String"),
            (2, "/empty", "std_msgs/Empty"),
        ):
            bag.add_connection(conn, topic, connection_fields(topic, type_name, f"/n{conn}", False))
        for chunk in chunks:
            for conn, ns in chunk:
                if conn == 2:
                    bag.write(conn, ns, encode(types["std_msgs/Empty"], "std_msgs/Empty", {}))
                else:
                    data = encode(types["std_msgs/String"], "std_msgs/String", {"data": "hi"})
                    bag.write(conn, ns, data)
            bag.flush_chunk()
        bag.close()
    return path


def _ros_rate(chunks: list[list[tuple[int, int]]], conns: tuple[int, ...]) -> float | None:
    """ros_comm's computation, on the same entries: per connection its index entries chunk
    after chunk (time order inside a chunk), heapq.merge over connections, median gap."""
    lists = [
        [t for chunk in chunks for t in sorted(ns for c, ns in chunk if c == conn)]
        for conn in conns
    ]
    stamps = [(ns // 10**9) + (ns % 10**9) / 1e9 for ns in heapq.merge(*lists)]
    periods = sorted(b - a for a, b in itertools.pairwise(stamps))
    if not periods:
        return None
    n = len(periods)
    median = periods[n // 2] if n % 2 else (periods[n // 2 - 1] + periods[n // 2]) / 2
    return 1.0 / median if median > 0.0 else None


def _rate_column(text: str, topic: str) -> str | None:
    line = next(line for line in text.splitlines() if topic + " " in line)
    head = line.split(" : ")[0]
    return head.split("@")[1].strip() if "@" in head else None


# Chunks written newest first: every gap in file order is negative.
BACKWARDS = [[(0, START + (9 - i) * 10**9), (2, START + (9 - i) * 10**9 + 5)] for i in range(10)]
# Two publishers of one topic, chunks half backwards: the merge of unsorted lists matters.
MIXED = [
    [(0, START + 3 * 10**9), (1, START + 1 * 10**9)],
    [(0, START + 12 * 10**8), (1, START + 4 * 10**9)],
    [(0, START + 7 * 10**9), (1, START + 2 * 10**9)],
    [(0, START + 75 * 10**8), (1, START + 9 * 10**9), (2, START)],
]  # ROS: a median gap of 1.5 s (0.7 Hz); over the sorted stamps 1 s (1.0 Hz)


@pytest.mark.parametrize("chunks", [BACKWARDS, MIXED], ids=["backwards", "mixed"])
@pytest.mark.parametrize("archived", [False, True], ids=["bag", "archive"])
def test_freq_follows_ros_over_chunks_out_of_time_order(
    tmp_path: Path, chunks: list[list[tuple[int, int]]], archived: bool
) -> None:
    _register()
    path = _bag(tmp_path / "out-of-order.bag", chunks)
    if archived:
        archive = tmp_path / "a.nanover.zip"
        registry.get("rosbag").convert(path, archive)
        path = archive
    result = runner.invoke(app, ["info", str(path), "--freq", "--tz", "UTC"])
    assert result.exit_code == 0, result.output
    for topic, conns in (("/chatter", (0, 1)), ("/empty", (2,))):
        expected = _ros_rate(chunks, conns)
        shown = _rate_column(result.stdout, topic)
        if expected is None:
            assert shown is None, result.stdout
        else:
            assert shown == f"{expected:.1f} Hz", result.stdout
