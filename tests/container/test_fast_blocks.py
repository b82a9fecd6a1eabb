"""The fast blocks of a small source (`ArchiveWriter(fast_blocks=True)`, `blockdeflate.FastBlocks`):
one compressor a level kept from block to block, in the writing thread, no sample. Each block
must still inflate on its own, the stream and its table must read back, the same messages
must give the same bytes (CARLA's small logs: tests/converters/carla/test_small_logs.py)."""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pytest

from nanorec.archive.blocks import BlockDeflater
from nanorec.archive.deflate import FINAL_BLOCK
from nanorec.archive.writer import ArchiveWriter
from nanorec.errors import UsageError


def _messages(seed: int) -> list[bytes]:
    """Messages that deflate (repeated structure) and some that do not (random bytes, larger
    than a block: a block of their own)."""
    rng = np.random.default_rng(seed)
    out = []
    for n in range(400):
        if n % 7 == 3:
            out.append(rng.bytes(int(rng.integers(17_000, 30_000))))
        else:
            out.append(b"frame %d " % n * int(rng.integers(5, 400)))
    return out


def _deflate(messages: list[bytes], *, fast: bool) -> tuple[bytes, BlockDeflater]:
    blocks = BlockDeflater(threads=0, fast=fast)
    out: list[bytes | memoryview] = []
    for start in range(0, len(messages), 37):
        part = messages[start : start + 37]
        crcs = [zlib.crc32(m) for m in part]
        out += blocks.add_run([(m,) for m in part], [len(m) for m in part], crcs)
    out += blocks.finish()
    return b"".join(out), blocks


def test_fast_blocks_inflate_each_on_its_own() -> None:
    messages = _messages(1)
    stream, blocks = _deflate(messages, fast=True)
    whole = b"".join(messages)
    assert zlib.decompress(stream, -15) == whole
    assert blocks.crc == zlib.crc32(whole)
    assert len(blocks.offsets) == len(blocks.starts) > 10
    ends = [*blocks.offsets[1:], len(whole)]
    for offset, start, end in zip(blocks.offsets, blocks.starts, ends, strict=True):
        inflater = zlib.decompressobj(-15)  # a fresh one at the block's start
        assert inflater.decompress(stream[start:], end - offset) == whole[offset:end]


def test_fast_blocks_have_the_same_table_and_store_what_does_not_deflate() -> None:
    messages = _messages(2)
    fast_stream, fast = _deflate(messages, fast=True)
    _, fresh = _deflate(messages, fast=False)
    assert fast.offsets == fresh.offsets  # where blocks end depends on the messages alone
    assert fast.crc == fresh.crc
    random_block = next(m for m in messages if len(m) > 17_000)
    assert random_block in fast_stream  # stored as is, not deflated
    assert fast_stream.endswith(FINAL_BLOCK)


def test_fast_blocks_give_the_same_bytes_twice() -> None:
    messages = _messages(3)
    assert _deflate(messages, fast=True)[0] == _deflate(messages, fast=True)[0]


def test_fast_blocks_need_the_writing_thread(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="threads=0"):
        BlockDeflater(threads=2, fast=True)
    with pytest.raises(UsageError, match="threads=0"):
        ArchiveWriter(tmp_path / "a.nanover.zip", fast_blocks=True)
    assert not (tmp_path / "a.nanover.zip").exists()
