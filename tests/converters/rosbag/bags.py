"""Helpers for the bag tests: synthetic bags in a folder, and rosbags' view of a bag."""

from __future__ import annotations

from dataclasses import MISSING, fields, is_dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nanorec.converters.ros.ros1.generate import generate
from nanorec.converters.ros.ros1.msgdef import parse_definition
from nanorec.converters.ros.ros1.serialize import encode
from nanorec.converters.ros.ros1.writer import BagWriter


def make_bag(folder: Path, name: str = "robot.bag", **options: Any) -> Path:
    options.setdefault("seconds", 2.0)
    options.setdefault("chunk_threshold", 64 * 1024)
    return generate(folder / name, **options)


def plain(value: Any) -> Any:
    """A rosbags message (dataclasses, numpy, Time) as our decoder's dicts and values."""
    if is_dataclass(value):
        # constants are fields with a default in rosbags' classes; they take no bytes
        names = [f.name for f in fields(value) if f.default is MISSING and f.name != "__msgtype__"]
        if names == ["sec", "nanosec"]:
            return {"secs": value.sec, "nsecs": value.nanosec}
        return {n: plain(getattr(value, n)) for n in names}
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def ours(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: ours(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, list):
        return [ours(v) for v in value]
    return value


def payload(types: dict[str, str], type_name: str, value: dict[str, Any]) -> bytes:
    """`value` serialized as `type_name`, whose definition `types` holds."""
    return encode(parse_definition(type_name, types[type_name]), type_name, value)


def write_bag(
    path: Path,
    entries: list[tuple[int, bytes]],
    conns: dict[int, tuple[str, str]],
    types: dict[str, str],
) -> Path:
    """A bag of `entries` (connection, payload), 10 ms apart; `conns`: id -> (topic, type),
    each type's definition in `types`."""
    with path.open("wb") as stream:
        bag = BagWriter(stream, compression="none", chunk_threshold=4096)
        for conn, (topic, type_name) in conns.items():
            fields = (
                (b"md5sum", b"0" * 32),
                (b"message_definition", types[type_name].encode()),
                (b"topic", topic.encode()),
                (b"type", type_name.encode()),
            )
            bag.add_connection(conn, topic, fields)
        for n, (conn, data) in enumerate(entries):
            bag.write(conn, 10**18 + n * 10**7, data)
        bag.close()
    return path
