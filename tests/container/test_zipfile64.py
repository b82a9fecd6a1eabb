"""Zip records: parse(build(x)) == x, golden bytes against `zipfile`, and the zip64 paths."""

from __future__ import annotations

import os
import struct
import sys
import zipfile
import zlib
from pathlib import Path

import msgpack
import pytest

from nanorec import ArchiveReader, ArchiveWriter, verify
from nanorec.archive.zipdirectory import CentralHeader, EndRecords, parse_central_directory
from nanorec.archive.zipfile64 import LOCAL_HEADER, U32_MAX, LocalHeader, build_zip64_extra
from nanorec.errors import ArchiveError, TruncatedError

from .nanover_reference import MessageEvent, record_messages

GIB = 1 << 30


@pytest.mark.parametrize(
    "header",
    [
        LocalHeader(
            name="index.msgpack", crc32=0xDEADBEEF, compressed_size=10, uncompressed_size=10
        ),
        LocalHeader(name="messages.msgpack", zip64=True),
        LocalHeader(
            name="messages.msgpack",
            crc32=1,
            compressed_size=5 * GIB,
            uncompressed_size=5 * GIB,
            zip64=True,
        ),
        LocalHeader(name="naïve.bin", crc32=7, compressed_size=3, uncompressed_size=3),
        LocalHeader(name="x", extra=b"\x99\x99\x02\x00ab", compressed_size=1, uncompressed_size=1),
    ],
)
def test_local_header_round_trip(header: LocalHeader) -> None:
    data = header.build()
    assert len(data) == header.size
    assert LocalHeader.parse(b"junk" + data, 4) == header
    assert LocalHeader.data_offset(data, 0) == len(data)


@pytest.mark.skipif(
    sys.version_info < (3, 11),
    reason="zipfile before 3.11 writes version 20 and the real 32-bit sizes in this header; "
    "NanoVer's files (spec 1.1) have the 3.11+ layout",
)
def test_local_header_matches_zipfile_force_zip64(tmp_path: Path) -> None:
    """Our messages header is byte-identical to what NanoVer's writer (zipfile) produces."""
    path = tmp_path / "nanover.zip"
    record_messages(path, [MessageEvent(timestamp=1, message={"frame": {"a": 1}})])
    raw = path.read_bytes()
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo("messages.msgpack")
    ours = LocalHeader(
        name="messages.msgpack",
        crc32=info.CRC,
        compressed_size=info.compress_size,
        uncompressed_size=info.file_size,
        zip64=True,
    ).build()
    assert len(ours) == 66
    assert raw[:66] == ours


@pytest.mark.parametrize(
    ("usize", "offset", "force"),
    [
        (10, 100, False),
        (10, 100, True),
        (5 * GIB, 100, False),
        (10, 6 * GIB, False),
        (U32_MAX, U32_MAX, False),
    ],
)
def test_central_header_round_trip(usize: int, offset: int, force: bool) -> None:
    header = CentralHeader(
        name="index.msgpack",
        crc32=0x12345678,
        compressed_size=usize,
        uncompressed_size=usize,
        local_header_offset=offset,
        force_zip64=force,
    )
    data = header.build()
    assert len(data) == header.size
    parsed = CentralHeader.parse(data, 0)
    assert parsed == header
    needs_zip64 = force or usize >= U32_MAX or offset >= U32_MAX
    assert (b"\x01\x00" in data[46 + len("index.msgpack") :][:2]) == needs_zip64


def test_zip64_extra_missing_is_an_archive_error() -> None:
    data = bytearray(
        CentralHeader(
            name="a", crc32=0, compressed_size=1, uncompressed_size=1, local_header_offset=0
        ).build()
    )
    struct.pack_into("<I", data, 42, U32_MAX)  # offset says "see zip64 extra", none there
    with pytest.raises(ArchiveError, match="zip64"):
        CentralHeader.parse(bytes(data), 0)


def test_end_records_round_trip_classic_and_zip64() -> None:
    for force in (False, True):
        cd = CentralHeader(
            name="a", crc32=0, compressed_size=0, uncompressed_size=0, local_header_offset=0
        ).build()
        local = LocalHeader(name="a").build()
        end = EndRecords(entries=1, cd_size=len(cd), cd_offset=len(local))
        blob = local + cd + end.build(force_zip64=force)
        parsed = EndRecords.parse(blob)
        assert (parsed.entries, parsed.cd_size, parsed.cd_offset) == (1, len(cd), len(local))
        assert parsed.zip64 == force
        assert [h.name for h in parse_central_directory(blob, parsed)] == ["a"]


def test_end_records_missing_is_truncated() -> None:
    with pytest.raises(TruncatedError):
        EndRecords.parse(LocalHeader(name="a").build() + b"\0" * 100)


def test_extra_field_overrun_is_an_archive_error() -> None:
    header = LocalHeader(name="a", extra=b"\x99\x99\x10\x00ab")  # announces 16, holds 2
    with pytest.raises(ArchiveError):
        LocalHeader.parse(header.build(), 0)


def test_forced_zip64_archive_is_read_by_zipfile_and_by_us(tmp_path: Path) -> None:
    path = tmp_path / "z64.nanover.zip"
    writer = ArchiveWriter(path)
    writer._force_zip64 = True
    with writer:
        for i in range(20):
            writer.write({"frame": {"i": i}}, timestamp_us=i)
        writer.add_member("extra.txt", b"hello")
    with zipfile.ZipFile(path) as archive:
        assert archive.testzip() is None
        assert archive.read("extra.txt") == b"hello"
        assert len(msgpack.unpackb(archive.read("index.msgpack"))) == 20
    with ArchiveReader(path) as reader:
        assert [m["frame"]["i"] for m in reader] == list(range(20))
    assert verify(path).ok


def _sparse_zip64_archive(path: Path) -> tuple[int, dict[str, object]]:
    """A >4 GiB archive that is mostly a hole: a message beyond 4 GiB, members after it.

    Built with our own record builders, so Python's zipfile reading it checks them.
    """
    late_offset = 4 * GIB + 12345
    first = msgpack.packb({"frame": {"i": 0}})
    late_message = {"frame": {"i": 1, "late": True}}
    late = msgpack.packb(late_message)
    messages_size = late_offset + len(late)
    index = msgpack.packb(
        [
            {"offset": 0, "length": len(first), "metadata": {"types": ["frame"], "timestamp": 5}},
            {
                "offset": late_offset,
                "length": len(late),
                "metadata": {"types": ["frame"], "timestamp": 9},
            },
        ]
    )
    local = LocalHeader(
        name="messages.msgpack",
        crc32=0,  # never checked on the paths used here (the hole is 4 GiB of zeros)
        compressed_size=messages_size,
        uncompressed_size=messages_size,
        zip64=True,
    )
    index_offset = local.size + messages_size
    index_local = LocalHeader(
        name="index.msgpack",
        crc32=zlib.crc32(index),
        compressed_size=len(index),
        uncompressed_size=len(index),
    )
    cd_offset = index_offset + index_local.size + len(index)
    central = [
        CentralHeader(
            name="messages.msgpack",
            crc32=0,
            compressed_size=messages_size,
            uncompressed_size=messages_size,
            local_header_offset=0,
        ),
        CentralHeader(
            name="index.msgpack",
            crc32=zlib.crc32(index),
            compressed_size=len(index),
            uncompressed_size=len(index),
            local_header_offset=index_offset,
        ),
    ]
    cd = b"".join(h.build() for h in central)
    end = EndRecords(entries=2, cd_size=len(cd), cd_offset=cd_offset).build()
    with open(path, "wb") as file:
        file.write(local.build() + first)
        file.seek(local.size + late_offset)
        file.write(late + index_local.build() + index + cd + end)
    return local.size, late_message


def test_zip64_beyond_4gib_sparse(tmp_path: Path) -> None:
    path = tmp_path / "big.nanover.zip"
    try:
        data_start, late_message = _sparse_zip64_archive(path)
    except OSError as error:  # pragma: no cover - file systems without sparse files
        pytest.skip(f"cannot create a sparse 4 GiB file: {error}")
    if os.stat(path).st_blocks * 512 > 64 << 20:  # pragma: no cover
        pytest.skip("the file system did not keep the file sparse")
    with zipfile.ZipFile(path) as archive:
        info = {i.filename: i for i in archive.infolist()}
        assert info["index.msgpack"].header_offset > U32_MAX
        assert info["messages.msgpack"].file_size > U32_MAX
        assert len(msgpack.unpackb(archive.read("index.msgpack"))) == 2
    with ArchiveReader(path) as reader:
        assert reader[1] == late_message
        assert reader.index.offset[1] > U32_MAX
        assert reader.index_at_time(9) == 1
    assert LOCAL_HEADER.size + len("messages.msgpack") + 20 == data_start


def test_build_zip64_extra_empty() -> None:
    assert build_zip64_extra([]) == b""
