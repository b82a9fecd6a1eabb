"""`columnar_locate.locate`: the gzip members of stored pbstream records found with numpy
are the ones msgpack unpacks, on every sample and real file; any other form of a stored
message (another key, key order or value type, a cut, bytes after it) is left to msgpack."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import pytest

from nanorec.converters.pbstream import columnar
from nanorec.converters.pbstream.columnar_locate import locate
from nanorec.converters.pbstream.columnar_wire import SHAPES
from nanorec.converters.pbstream.stream import GZIP_HEADER
from tests.converters.pbstream.test_columnar import FILES, _opened

MEMBER = GZIP_HEADER + b"\x03\x00" * 8


def members_by_msgpack(rec: Any, kind: str, numbers: Any, monkeypatch: Any) -> Any:
    with monkeypatch.context() as patch:
        patch.setattr(columnar, "locate", lambda *args: None)
        return columnar._members(rec, kind, numbers)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_members_are_those_msgpack_finds(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _opened(path, tmp_path) as rec:
        for kind in SHAPES:
            numbers = rec.numbers_of(kind).astype(np.int64)
            if not len(numbers):
                continue
            data, starts = rec.reader.raw_run(int(numbers[0]), int(numbers[-1]) + 1)
            ends = starts + rec.reader.index.length[int(numbers[0]) : int(numbers[-1]) + 1]
            assert locate(data, starts, ends, kind) is not None, kind  # the converter's form
            fast = columnar._members(rec, kind, numbers)
            assert fast == members_by_msgpack(rec, kind, numbers, monkeypatch), kind


def stored(entry: dict[str, Any], time: Any = 12345, kind: str = "imu_data") -> bytes:
    return msgpack.packb({kind: entry, "nanorec.t": time})


def run(*messages: bytes) -> tuple[bytes, Any, Any]:
    lengths = np.array([len(m) for m in messages], np.int64)
    ends = np.cumsum(lengths)
    return b"".join(messages), ends - lengths, ends


PLAIN = {"member": MEMBER, "trajectory_id": 1, "index": -300, "timestamp": 2**62}


@pytest.mark.parametrize(
    "message",
    [
        stored(PLAIN),
        stored({"member": MEMBER}),
        msgpack.packb({"imu_data": {"member": MEMBER * 40, "index": 0}}),  # no time; bin16
    ],
)
def test_the_converters_form_is_located(message: bytes) -> None:
    data, starts, ends = run(message, stored(PLAIN))
    found = locate(data, starts, ends, "imu_data")
    assert found is not None
    first, last = found
    assert data[first[0] : last[0]] == msgpack.unpackb(message)["imu_data"]["member"]
    assert data[first[1] : last[1]] == MEMBER


@pytest.mark.parametrize(
    "message",
    [
        stored({"timestamp": 1, "member": MEMBER}),  # member not first
        stored({**PLAIN, "payload": b"x"}),  # a key the fast path does not read
        stored({"member": MEMBER, "index": "7"}),  # not an integer
        stored(PLAIN, time=1.5),
        stored(PLAIN, kind="odometry_data"),
        stored({"member": b"not gzip at all"}),
        msgpack.packb({"imu_data": PLAIN, "nanorec.t": 1, "x": 2}),
        msgpack.packb({"imu_data": {"member": MEMBER, "member ": MEMBER}}),
        stored({"member": MEMBER, "timestamp ": 2}),  # only the listed keys
        stored(PLAIN)[:-1],  # cut
        stored(PLAIN) + b"\x00",  # a byte after it
    ],
)
def test_any_other_form_is_left_to_msgpack(message: bytes) -> None:
    data, starts, ends = run(stored(PLAIN), message)
    assert locate(data, starts, ends, "imu_data") is None
