"""The batched conversion (issue 33): storage walks as numpy batches, runs of messages built
with numpy, compact columns. Each batched path is checked against the per-message one it
replaces: the same messages and skeleton from `batches()` as from `messages()`, the same
message bytes as `msgpack` packs one at a time, and the same compact archive (deflate
blocks, flushes) as writing each message with `write_packed`."""

from __future__ import annotations

import io
import mmap
import random
import zipfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import pytest

from nanorec.archive.layout import use_layout
from nanorec.archive.reader import ArchiveReader
from nanorec.archive.wire import TIMESTAMP_KEY, embed_timestamp
from nanorec.archive.writer import ArchiveWriter
from nanorec.contract import ConvertRequest
from nanorec.converters.ros.ros2 import generate as generated
from nanorec.converters.ros.ros2 import mcap_chunks, runs
from nanorec.converters.ros.ros2.converter import CONVERTER
from nanorec.converters.ros.ros2.db3 import open_db3
from nanorec.converters.ros.ros2.mcap_chunks import SpilledOps
from nanorec.converters.ros.ros2.packed import head, pack_run
from nanorec.converters.ros.ros2.sqlite_btree import varint
from nanorec.converters.ros.ros2.storage import batches, storage_of
from nanorec.converters.ros.ros2.storage_open import open_storage
from nanorec.errors import FormatError
from tests.conftest import REALDATA, SAMPLES

# the generated MCAP bags need the `mcap` writer, real MCAP bags' zstd chunks `zstandard`
pytest.importorskip("zstandard")
pytest.importorskip("mcap")

REAL = sorted(
    p
    for p in (REALDATA / "ros2").glob("*/*")
    if p.suffix in (".db3", ".mcap") and not p.name.endswith(".zstd")
)


def _shuffled(seconds: float, width: int = 0) -> Any:
    """The generator's messages with times out of order (by up to 3 steps either way)."""
    rng = random.Random(7)
    for key, ns, data in ORIGINAL(seconds, width):
        yield key, ns + rng.randrange(-3, 4) * 40_000_000, data


ORIGINAL = generated.messages


@pytest.fixture(scope="module")
def bags(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Generated bags: small messages, images (overflowing sqlite pages), out-of-order
    times, cut files, a damaged leaf page; both storages."""
    folder = tmp_path_factory.mktemp("bags")
    out: dict[str, Path] = {}
    for storage in ("sqlite3", "mcap"):
        suffix = "db3" if storage == "sqlite3" else "mcap"
        small = folder / f"small.{suffix}"
        generated.generate(small, seconds=120, storage=storage, folder=False)
        out[f"small-{storage}"] = small
        images = folder / f"images.{suffix}"
        generated.generate(images, seconds=6, storage=storage, folder=False, image=128)
        out[f"images-{storage}"] = images
        generated.messages = _shuffled
        try:
            shuffled = folder / f"shuffled.{suffix}"
            generated.generate(shuffled, seconds=60, storage=storage, folder=False, image=32)
        finally:
            generated.messages = ORIGINAL
        out[f"shuffled-{storage}"] = shuffled
        whole = small.read_bytes()
        cut = folder / f"cut.{suffix}"
        cut.write_bytes(whole[: len(whole) * 2 // 3 + 1234])
        out[f"cut-{storage}"] = cut
    camera = folder / "camera.db3"  # 640x480: a deflate block of one message each
    generated.generate(camera, seconds=1, storage="sqlite3", folder=False, image=640)
    out["camera-sqlite3"] = camera
    data = bytearray(out["small-sqlite3"].read_bytes())
    page = len(data) // 4096 // 2  # a leaf page of `messages`, in the middle
    cell = page * 4096 + int.from_bytes(data[page * 4096 + 8 : page * 4096 + 10], "big")
    _, at = varint(data, varint(data, cell)[1])  # past the payload size and rowid
    data[at + 2] = 7  # its first cell's topic_id a float: a row that is no message
    damaged = folder / "damaged.db3"
    damaged.write_bytes(bytes(data))
    out["damaged-sqlite3"] = damaged
    return out


Walked = tuple[list[tuple[int, int, bytes]], bytes, dict[str, Any]]


def _both(path: Path) -> tuple[list[tuple[int, int, bytes]], bytes, dict[str, Any], Walked]:
    """The messages of `path` by `batches()` and by `messages()`, with skeletons and damage."""
    found: list[Walked] = []
    for walk in ("batches", "messages"):
        with path.open("rb") as handle:
            buf = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
            stored = open_storage(storage_of(buf[:16]) or "", buf)
            if walk == "batches":
                rows = [
                    (int(t), int(s), bytes(b.buf[a : a + n]))
                    for b in batches(stored)
                    for t, s, a, n in zip(b.topics, b.times, b.starts, b.lengths, strict=True)
                ]
            else:
                rows = [(m.topic, m.timestamp, bytes(m.data)) for m in stored.messages()]
            found.append((rows, bytes(stored.skeleton()), asdict(stored.damage)))
    return found[0][0], found[0][1], found[0][2], found[1]


@pytest.mark.parametrize(
    "name",
    [
        f"{kind}-{storage}"
        for kind in ("small", "images", "shuffled", "cut")
        for storage in ("sqlite3", "mcap")
    ]
    + ["damaged-sqlite3"],
)
def test_batches_are_the_messages(bags: dict[str, Path], name: str) -> None:
    rows, skeleton, damage, (expected, expected_skeleton, expected_damage) = _both(bags[name])
    assert len(rows) == len(expected) > 0
    assert rows == expected
    assert skeleton == expected_skeleton
    assert damage == expected_damage


def test_a_damaged_page_is_read_by_the_slow_reader(bags: dict[str, Path]) -> None:
    """The page with the damaged cell is left to `Db3File`'s reader (which drops the row and
    says so); every other page is still read, and read the same."""
    _, _, damage, (expected, _, _) = _both(bags["damaged-sqlite3"])
    assert any("dropped" in note for note in damage["notes"])
    assert len(expected) == 120 * 21 - 1


@pytest.mark.parametrize("seed", range(12))
def test_flipped_bytes_read_as_the_slow_reader_reads_them(
    bags: dict[str, Path], seed: int, tmp_path: Path
) -> None:
    """Bytes flipped anywhere in a small-message `.db3` (serial type bytes up to 255, cell
    pointers, varints): the batched walk raises no error the per-message reader does not,
    and gives what it gives (an IndexError on a serial type byte >= 10 once)."""
    data = bytearray(bags["small-sqlite3"].read_bytes())
    rng = random.Random(seed)
    for _ in range(64):
        data[rng.randrange(4096, len(data))] ^= 0xFF
    path = tmp_path / "flipped.db3"
    path.write_bytes(bytes(data))
    try:
        rows, skeleton, damage, (expected, expected_skeleton, expected_damage) = _both(path)
    except FormatError:
        return  # refused by both walks alike (`_both` opens the file the same way twice)
    assert rows == expected
    assert skeleton == expected_skeleton
    assert damage == expected_damage


def test_a_serial_type_past_nine_is_a_damaged_row(tmp_path: Path) -> None:
    """The contract's flipped sample that raised IndexError in the batched walk."""
    data = bytearray((SAMPLES / "ros2-robot.db3").read_bytes())
    rng = random.Random(11)
    for _ in range(8):
        data[rng.randrange(len(data))] ^= 0xFF
    path = tmp_path / "flipped.db3"
    path.write_bytes(bytes(data))
    rows, _, damage, (expected, _, expected_damage) = _both(path)
    assert rows == expected and damage == expected_damage
    assert any("dropped" in note for note in damage["notes"])


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.parent.name + "/" + p.name)
def test_batches_are_the_messages_real(path: Path) -> None:
    rows, skeleton, damage, (expected, expected_skeleton, expected_damage) = _both(path)
    assert rows == expected
    assert skeleton == expected_skeleton
    assert damage == expected_damage


def test_pack_run_is_msgpack() -> None:
    """Every int form of the timestamp and the entry, every bin header, topics of every
    str header, empty datas: the bytes `write_packed` gives a message packed alone."""
    topics = ["/odom", "/" + "a" * 40, "/" + "b" * 300, "x"]
    rng = random.Random(1)
    edges = [0, 1, 127, 128, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**63 - 1]
    edges += [-1, -32, -33, -128, -129, -32768, -32769, -(2**31), -(2**31) - 1, -(2**63)]
    edges += [999, 1000, 1001, -999, -1000, -1001, 1_700_000_000_000_000_000]
    times = edges + [rng.randrange(-(2**63), 2**63) for _ in range(200)]
    codes = [rng.randrange(len(topics)) for _ in times]
    sizes = [rng.choice([0, 1, 255, 256, 65535, 65536, 70000, 10]) for _ in times]
    datas = [rng.randbytes(n) for n in sizes]
    joined, lengths = pack_run(
        [head(t) for t in topics],
        np.array(codes),
        np.array(times, np.int64),
        np.frombuffer(b"".join(datas), np.uint8),
        np.array(sizes, np.int64),
    )
    expected = [
        embed_timestamp(msgpack.packb({topics[c]: {"timestamp": t, "data": d}}), t // 1000)
        for c, t, d in zip(codes, times, datas, strict=True)
    ]
    assert lengths.tolist() == [len(e) for e in expected]
    assert joined == b"".join(expected)


def _convert(source: Path, output: Path, layout: str) -> None:
    with use_layout(layout):
        CONVERTER.convert(source, output, ConvertRequest(overwrite=True))


def _raw_member(path: Path, name: str) -> bytes:
    """A member's bytes as stored in the zip (deflated, for a compact archive)."""
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(name)
    with path.open("rb") as handle:
        handle.seek(info.header_offset + 26)
        skip = int.from_bytes(handle.read(2), "little") + int.from_bytes(handle.read(2), "little")
        handle.seek(skip, 1)
        return handle.read(info.compress_size)


@pytest.mark.parametrize(
    "name", ["small-sqlite3", "images-mcap", "shuffled-sqlite3", "camera-sqlite3"]
)
def test_archive_is_the_one_message_at_a_time(
    bags: dict[str, Path], name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compact archive's messages are those, and in the very deflate blocks, that
    writing each message with `write_packed` gives, flushing where the one-at-a-time loop
    did (here every 64 KiB of data, so that flushes fall inside runs; short runs, so that
    runs are cut and large messages lent)."""
    monkeypatch.setattr(runs, "RELEASE_BYTES", 64 << 10)
    monkeypatch.setattr(runs, "_RUN_BYTES", 20_000)
    stored, compact = tmp_path / "stored.zip", tmp_path / "compact.zip"
    _convert(bags[name], stored, "stored")
    _convert(bags[name], compact, "compact")
    reference = tmp_path / "reference.zip"
    released = 0
    with ArchiveReader(stored) as reader, ArchiveWriter(reference, compact=True) as writer:
        for n in range(len(reader)):
            value = msgpack.unpackb(reader.raw(n))
            stamp = value.pop(TIMESTAMP_KEY)
            (topic,) = value
            released += len(value[topic]["data"])
            if released > 64 << 10:
                released = 0
                writer.flush()
            writer.write_packed(msgpack.packb(value), types=(topic,), timestamp_us=stamp)
    messages = "messages.msgpack"
    assert _raw_member(compact, messages) == _raw_member(reference, messages)
    with ArchiveReader(compact) as ours, ArchiveReader(reference) as theirs:
        assert len(ours) == len(theirs)
        assert [ours.raw(n) for n in range(len(ours))] == [
            theirs.raw(n) for n in range(len(theirs))
        ]


@pytest.mark.parametrize(
    "name",
    ["small-sqlite3", "images-sqlite3", "shuffled-sqlite3", "cut-sqlite3", "damaged-sqlite3"],
)
def test_written_skeleton_is_the_skeleton(bags: dict[str, Path], name: str, tmp_path: Path) -> None:
    """`write_skeleton` (bounded memory, to a file) writes `skeleton()`'s bytes."""
    data = bags[name].read_bytes()
    whole = open_db3(data)
    for _ in batches(whole):
        pass
    written = open_db3(data)
    for _ in batches(written):
        pass
    with (tmp_path / "skeleton").open("w+b") as out:
        written.write_skeleton(out)
        out.seek(0)
        assert out.read() == bytes(whole.skeleton())
    with pytest.raises(FormatError):
        written.write_skeleton(io.BytesIO())


@pytest.mark.parametrize("name", ["small-mcap", "images-mcap", "cut-mcap"])
def test_spilled_mcap_skeleton_is_the_skeleton(
    bags: dict[str, Path], name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The MCAP skeleton `batches()` spills to temporary files (here after every chunk) is
    the one `messages()` builds in memory."""
    monkeypatch.setattr(SpilledOps, "SPILL_BYTES", 1)
    rows, skeleton, _, (expected, expected_skeleton, _) = _both(bags[name])
    assert rows == expected
    assert skeleton == expected_skeleton


def test_convert_spills_the_mcap_skeleton_beside_the_output(
    bags: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A conversion's spilled MCAP skeleton goes to its scratch files beside the output
    (the system's temporary folder may be a RAM disk): with the system's refused, the
    archive is still the one converted without spilling."""
    whole = tmp_path / "whole.nanover.zip"
    _convert(bags["small-mcap"], whole, "compact")
    monkeypatch.setattr(SpilledOps, "SPILL_BYTES", 1)

    made = mcap_chunks.tempfile.TemporaryFile

    def beside(*args: Any, **kwargs: Any) -> Any:
        assert kwargs.get("dir") == tmp_path, "a temporary file outside the output's folder"
        return made(*args, **kwargs)

    monkeypatch.setattr(mcap_chunks.tempfile, "TemporaryFile", beside)
    spilled = tmp_path / "spilled.nanover.zip"
    _convert(bags["small-mcap"], spilled, "compact")
    assert spilled.read_bytes() == whole.read_bytes()
