"""Hostile ROS 2 inputs of issue #34's round 4, each a few KB, made in the test: bombs
(compressed chunks, files and messages claiming or holding far more than they can), runs
of zeros where records should be, and archives whose side members are short or hostile.
Used by `test_bombs.py` and the contract's fuzz ladder (`test_contract.py`)."""

from __future__ import annotations

import sqlite3
import struct
import zipfile
from pathlib import Path

from nanorec.converters.ros.ros2.generate import write_db3
from nanorec.converters.ros.ros2.msgdef import SEPARATOR
from nanorec.converters.ros.ros2.storage import MCAP_MAGIC, SQLITE_MAGIC
from tests.conftest import SAMPLES


def _record(opcode: int, body: bytes) -> bytes:
    return struct.pack("<BQ", opcode, len(body)) + body


def _string(text: str) -> bytes:
    return struct.pack("<I", len(text)) + text.encode()


def chunk_mcap(compression: str, compressed: bytes, declared: int) -> bytes:
    """A closed MCAP whose one chunk holds `compressed` and declares `declared` bytes."""
    header = _record(0x01, _string("ros2") + _string("hostile"))
    chunk = struct.pack("<QQQI", 0, 0, declared, 0) + _string(compression)
    chunk += struct.pack("<Q", len(compressed)) + compressed
    footer = _record(0x0F, struct.pack("<I", 0)) + _record(0x02, struct.pack("<QQI", 0, 0, 0))
    return MCAP_MAGIC + header + _record(0x06, chunk) + footer + MCAP_MAGIC


def lz4_chunk_lie() -> bytes:
    """An lz4 chunk of 64 KiB of zeros (~300 bytes) declaring 16 MiB (within zstd's ratio)."""
    import lz4.frame

    return chunk_mcap("lz4", lz4.frame.compress(bytes(1 << 16)), 16 << 20)


def sqlite_head(page_size: int = 4096, pages: int = 1) -> bytes:
    """An SQLite header: `pages` pages of `page_size` bytes, its counts current."""
    head = bytearray(100)
    head[:16] = SQLITE_MAGIC
    struct.pack_into(">H", head, 16, page_size)
    struct.pack_into(">I", head, 24, 7)  # change counter
    struct.pack_into(">I", head, 28, pages)
    struct.pack_into(">I", head, 92, 7)  # version-valid-for: the page count is current
    return bytes(head)


def zstd_of(data: bytes) -> bytes:
    import zstandard

    out: bytes = zstandard.ZstdCompressor(level=3).compress(data)
    return out


def zeros_after(head: bytes, size: int = 64 << 20) -> bytes:
    """`head` then zeros up to `size` bytes, compressed whole (a few KB)."""
    return zstd_of(head + bytes(size - len(head)))


def lying_frame(declared: int = 1 << 30) -> bytes:
    """A zstd frame declaring `declared` bytes and holding 100 (one RLE block)."""
    descriptor = 0xE0  # 8-byte content size, single segment, no checksum
    block = (100 << 3) | (1 << 1) | 1  # last block, RLE, 100 bytes
    return (
        b"\x28\xb5\x2f\xfd"
        + bytes([descriptor])
        + struct.pack("<Q", declared)
        + (struct.pack("<I", block)[:3] + b"\x00")
    )


def lying_message_db3(path: Path) -> Path:
    """A sqlite3 bag whose first message is a zstd frame declaring 1 GiB."""
    write_db3(path, 0.5)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE messages SET data = ? WHERE id = 1", (lying_frame(),))
    db.close()
    return path


def with_member(archive: Path, out: Path, name: str, data: bytes) -> Path:
    """A copy of `archive` with member `name`'s bytes replaced by `data`."""
    with zipfile.ZipFile(archive) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            target.writestr(info, data if info.filename == name else source.read(info))
    return out


def without_member(archive: Path, out: Path, name: str, *, twice: bool = False) -> Path:
    """A copy of `archive` without member `name` (`twice`: with it written twice)."""
    import warnings

    with zipfile.ZipFile(archive) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            data = source.read(info)  # before writestr moves info's header offset
            if info.filename != name or twice:
                target.writestr(info, data)
            if info.filename == name and twice:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # zipfile warns of the duplicate
                    target.writestr(info, data)
    return out


def write_all(folder: Path) -> list[Path]:
    """Every hostile native file above, written into `folder`."""
    files = {
        "lz4-chunk-lie.mcap": lz4_chunk_lie(),
        "zeros.mcap": MCAP_MAGIC + bytes(1 << 15),
        "zeros.db3.zstd": zeros_after(sqlite_head()),
        "page0.db3.zstd": zeros_after(SQLITE_MAGIC),
        "zeros.mcap.zstd": zeros_after(MCAP_MAGIC),
    }
    paths = []
    for name, data in files.items():
        (folder / name).write_bytes(data)
        paths.append(folder / name)
    paths.append(lying_message_db3(folder / "lying-message.db3"))
    return paths


SAMPLE_DB3 = SAMPLES / "ros2-robot.db3"


def zlib_bomb(size: int = 128 << 20) -> bytes:
    """A zlib stream of `size` zeros (~128 KB for 128 MiB: deflate's ratio is ~1000x)."""
    import zlib

    compressor = zlib.compressobj(9)
    block = bytes(1 << 20)
    out = b"".join(compressor.compress(block) for _ in range(size >> 20))
    return out + compressor.flush()


#: Definitions nesting past any real type (#34 item 5): IDL modules 3,000 deep,
#: `sequence<>` 2,000 deep, a `.msg` chain of 3,000 types (each holding the next).
DEEP: dict[str, tuple[str, str]] = {
    "modules": (
        "ros2idl",
        f"{SEPARATOR}\nIDL: deep/msg/Deep\n"
        + "".join(f"module m{i} {{ " for i in range(3000))
        + "struct Deep { string data; };"
        + " };" * 3000,
    ),
    "sequences": (
        "ros2idl",
        f"{SEPARATOR}\nIDL: deep/msg/Deep\n"
        "module deep { module msg { struct Deep { "
        + "sequence<" * 2000
        + "string"
        + ">" * 2000
        + " data; }; }; };",
    ),
    "chain": (
        "ros2msg",
        "T1 next\n"
        + "".join(f"{SEPARATOR}\nMSG: deep/T{i}\nT{i + 1} next\n" for i in range(1, 3000))
        + f"{SEPARATOR}\nMSG: deep/T3000\nstring data",
    ),
}


def deep_definition_db3(path: Path, kind: str) -> Path:
    """A sqlite3 bag whose `/status` is of type `deep/msg/Deep`, defined as `DEEP[kind]`
    (its messages' bytes unchanged: a `string` is what the shallowest reading finds)."""
    write_db3(path, 0.5)
    encoding, text = DEEP[kind]
    with sqlite3.connect(path) as db:
        db.execute("UPDATE topics SET type = 'deep/msg/Deep' WHERE name = '/status'")
        db.execute(
            "UPDATE message_definitions SET topic_type = 'deep/msg/Deep', encoding = ?, "
            "encoded_message_definition = ? WHERE topic_type = 'std_msgs/msg/String'",
            (encoding, text),
        )
    db.close()
    return path
