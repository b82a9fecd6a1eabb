"""The compact layout (the default): every member deflated, `messages.msgpack` in independent
blocks listed in `nanorec.msgpack`, read one block at a time; `compact=False` stores."""

from __future__ import annotations

import contextlib
import itertools
import mmap
import threading
import zipfile
import zlib
from pathlib import Path

import msgpack
import numpy as np
import pytest

from nanorec import ArchiveReader, verify
from nanorec.archive.blockdeflate import _level
from nanorec.archive.blocks import BLOCK_BYTES, BlockDeflater
from nanorec.archive.closing import fast_members
from nanorec.archive.deflate import LEVEL, deflater
from nanorec.archive.layout import use_layout
from nanorec.archive.writer import ArchiveWriter
from nanorec.errors import NanorecError

from .helpers import block_ends, rebuild_zip, sample_messages, write_archive

COUNT = 3000


def _messages() -> list[dict[str, object]]:
    # sizes from a few bytes to 40 KiB: blocks of many messages and messages over a block
    out = sample_messages(COUNT)
    for i in range(0, COUNT, 97):
        out[i] = {"frame": {"blob": bytes(range(256)) * (i % 160)}}
    return out


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("compact")
    messages = _messages()
    compact = write_archive(folder / "compact.nanover.zip", messages, source_format="t")
    stored = write_archive(folder / "stored.nanover.zip", messages, compact=False)
    return compact, stored


def test_compact_is_the_default_and_deflates_every_member(pair: tuple[Path, Path]) -> None:
    compact, stored = pair
    with zipfile.ZipFile(compact) as archive:
        assert archive.testzip() is None
        # but the index pages, each compressed on its own (`nanorec.archive.pages`)
        types = {info.filename: info.compress_type for info in archive.infolist()}
        assert types.pop("nanorec.pages") == zipfile.ZIP_STORED
        assert set(types.values()) == {zipfile.ZIP_DEFLATED}
    with zipfile.ZipFile(stored) as archive:
        assert {info.compress_type for info in archive.infolist()} == {zipfile.ZIP_STORED}
    assert compact.stat().st_size < stored.stat().st_size / 2
    with ArchiveReader(compact) as reader:
        assert reader.compact and reader.index_source == "nanorec.msgpack"


def test_same_bytes_in_both_layouts(pair: tuple[Path, Path]) -> None:
    compact, stored = pair
    with zipfile.ZipFile(compact) as one, zipfile.ZipFile(stored) as other:
        for name in ("messages.msgpack", "index.msgpack"):
            assert one.read(name) == other.read(name)
    with ArchiveReader(compact) as one, ArchiveReader(stored) as other:
        assert not other.compact
        assert len(one) == len(other) == COUNT
        assert all(one.raw(i) == other.raw(i) for i in range(COUNT))
        assert list(one) == _messages()


def test_a_block_holds_messages_up_to_its_size_or_one_larger_message(
    pair: tuple[Path, Path],
) -> None:
    with ArchiveReader(pair[0]) as reader:
        blocks = reader._blocks
        assert blocks is not None and blocks.block_count > 10
        edges = [*blocks._offsets, len(reader.member("messages.msgpack"))]
        ends = reader.index.offset + reader.index.length
        for start, stop in itertools.pairwise(edges):
            inside = (reader.index.offset >= start) & (ends <= stop)
            assert int(reader.index.length[inside].sum()) == stop - start  # whole messages
            assert stop - start <= BLOCK_BYTES or int(inside.sum()) == 1


def test_random_reads_from_many_threads(pair: tuple[Path, Path]) -> None:
    expected = _messages()
    failures: list[int] = []
    with ArchiveReader(pair[0]) as reader:

        def work(seed: int) -> None:
            rng = np.random.default_rng(seed)
            for number in rng.integers(0, COUNT, 500).tolist():
                if reader[number] != expected[number]:
                    failures.append(number)

        threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        backwards = [reader[number] for number in range(COUNT - 1, -1, -1)]
    assert not failures and backwards[::-1] == expected


def test_a_pass_inflates_spans_and_still_reads_any_message(pair: tuple[Path, Path]) -> None:
    """`advise_sequential`: spans of blocks inflated a call; reads out of order in the
    middle of a pass stay right."""
    expected = _messages()
    with ArchiveReader(pair[0]) as reader:
        reader.advise_sequential()
        blocks = reader._blocks
        assert blocks is not None and blocks.sequential
        assert reader[0] == expected[0]
        total = len(reader.member("messages.msgpack"))
        assert len(blocks._cached.out) >= min(total, 16 * BLOCK_BYTES)  # spans, not blocks
        assert list(reader) == expected
        jumps = [5, COUNT - 1, 0, COUNT // 2, COUNT // 2 + 1, COUNT - 2, 7]
        assert [reader[number] for number in jumps] == [expected[number] for number in jumps]


def test_a_pass_over_a_damaged_block_is_an_error_never_a_wrong_value(
    pair: tuple[Path, Path], tmp_path: Path
) -> None:
    with ArchiveReader(pair[0]) as reader:
        member = reader._messages
        position = member.data_start + member.size // 2
    data = bytearray(pair[0].read_bytes())
    data[position] ^= 0xFF
    damaged = tmp_path / "damaged.nanover.zip"
    damaged.write_bytes(bytes(data))
    expected = _messages()
    errors = wrong = 0
    with ArchiveReader(damaged) as reader:
        reader.advise_sequential()
        for number in range(COUNT):
            try:
                wrong += reader[number] != expected[number]
            except NanorecError:
                errors += 1
    assert wrong == 0 and errors > 0


def test_verify_and_metadata_on_a_compact_archive(pair: tuple[Path, Path]) -> None:
    assert verify(pair[0]).ok
    with ArchiveReader(pair[0]) as reader:
        assert reader.metadata(COUNT - 1)["timestamp"] == 1000 * (COUNT - 1)


@pytest.mark.parametrize("where", [0.1, 0.5, 0.9])
def test_a_flipped_byte_in_the_deflated_messages(
    pair: tuple[Path, Path], tmp_path: Path, where: float
) -> None:
    with ArchiveReader(pair[0]) as reader:
        member = reader._messages
        position = member.data_start + int(member.size * where)
    data = bytearray(pair[0].read_bytes())
    data[position] ^= 0xFF  # every bit: one bit could be a deflate block's padding, ignored
    damaged = tmp_path / "damaged.nanover.zip"
    damaged.write_bytes(bytes(data))
    assert not verify(damaged).ok
    expected = _messages()
    wrong = 0
    with ArchiveReader(damaged) as reader:
        for number in range(COUNT):
            with contextlib.suppress(NanorecError):
                wrong += reader[number] != expected[number]
    assert wrong == 0  # a damaged message is an error, never a wrong value


@pytest.mark.parametrize("damage", ["garbage", "another stream"])
def test_a_bad_block_table_falls_back_to_inflating_the_member(
    pair: tuple[Path, Path], tmp_path: Path, damage: str
) -> None:
    # the block table of format_version 1 (`paged=False`), kept in the description
    unpaged = write_archive(tmp_path / "unpaged.zip", _messages(), paged=False)
    with zipfile.ZipFile(unpaged) as archive:
        description = msgpack.unpackb(archive.read("nanorec.msgpack"))
    if damage == "garbage":
        description["blocks"]["start"] = b"garbage"
    # rebuilt by zipfile: messages.msgpack deflated again, as one stream the table does not fit
    damaged = rebuild_zip(
        unpaged,
        tmp_path / "bad.zip",
        replace={"nanorec.msgpack": msgpack.packb(description)},
        compression=zipfile.ZIP_DEFLATED,
    )
    with ArchiveReader(damaged) as reader:
        assert not reader.compact and "block table" in (reader.description_problem or "")
        assert reader[COUNT - 1] == _messages()[COUNT - 1]


def test_a_paged_archive_deflated_again_reads_without_its_block_rows(
    pair: tuple[Path, Path], tmp_path: Path
) -> None:
    """The block rows in the pages describe the stream as written: another tool deflating
    the messages again leaves them void (said), the index pages still serve."""
    damaged = rebuild_zip(pair[0], tmp_path / "bad.zip", compression=zipfile.ZIP_DEFLATED)
    with ArchiveReader(damaged) as reader:
        assert not reader.compact and "block table" in (reader.description_problem or "")
        assert reader.index_source == "nanorec.msgpack"
        assert reader[COUNT - 1] == _messages()[COUNT - 1]


def test_use_layout_and_stored_writer(tmp_path: Path) -> None:
    with use_layout("stored"), ArchiveWriter(tmp_path / "s.zip") as writer:
        writer.write({"a": 1}, timestamp_us=0)
    with ArchiveReader(tmp_path / "s.zip") as reader:
        assert not reader.compact and reader[0] == {"a": 1}
    with pytest.raises(ValueError, match="layout"), use_layout("zstd"):
        pass


def test_empty_compact_archive(tmp_path: Path) -> None:
    write_archive(tmp_path / "e.zip", [])
    with ArchiveReader(tmp_path / "e.zip") as reader, zipfile.ZipFile(tmp_path / "e.zip") as z:
        assert len(reader) == 0 and z.read("messages.msgpack") == b""
    assert verify(tmp_path / "e.zip").ok


def test_member_view_of_a_large_deflated_member_is_a_mapped_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import nanorec.archive.member_access

    monkeypatch.setattr(nanorec.archive.member_access, "_SPOOL_MEMBER", 1000)
    data = bytes(range(256)) * 40
    with ArchiveWriter(tmp_path / "m.zip") as writer:
        writer.write({"a": 1}, timestamp_us=0)
        writer.add_member("big.bin", data)
        writer.add_member("small.bin", b"x" * 100)
    with ArchiveReader(tmp_path / "m.zip") as reader:
        view = reader.member_view("big.bin")
        assert view.readonly and bytes(view) == data and isinstance(view.obj, mmap.mmap)
        assert bytes(reader.member_view("small.bin")) == b"x" * 100
    assert bytes(view) == data  # outlives the reader


def test_reading_a_closed_compact_reader(pair: tuple[Path, Path]) -> None:
    from nanorec.errors import UsageError

    reader = ArchiveReader(pair[0])
    reader.close()
    with pytest.raises(UsageError, match="closed"):
        reader.raw(0)


def test_incompressible_blocks_are_stored_in_one_deflate_stream(tmp_path: Path) -> None:
    """Blocks of already-compressed bytes are written as stored deflate blocks: no size gain
    sought, the member still one deflate stream that zipfile (NanoVer's reader) inflates;
    compressible blocks beside them are deflated."""
    rng = np.random.default_rng(7)
    blobs = [rng.bytes(3000) if i % 10 else bytes(3000) for i in range(60)]
    blobs[30] = rng.bytes(150_000)  # a block of its own, over one stored block's 65,535
    path = tmp_path / "mixed.nanover.zip"
    with ArchiveWriter(path, compact=True) as writer:
        for number, blob in enumerate(blobs):
            writer.write({"blob": {"b": blob}}, timestamp_us=number)
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo("messages.msgpack")
        whole = msgpack.Unpacker(archive.open("messages.msgpack"))
        assert [message["blob"]["b"] for message in whole] == blobs
    assert info.compress_type == zipfile.ZIP_DEFLATED
    assert _level(rng.bytes(BLOCK_BYTES)) == 0 and _level(bytes(BLOCK_BYTES)) == LEVEL
    assert 0.85 * info.file_size < info.compress_size < 1.01 * info.file_size
    with ArchiveReader(path) as reader:
        assert [reader[n]["blob"]["b"] for n in (59, 0, 31, 30)] == [
            blobs[n] for n in (59, 0, 31, 30)
        ]


def test_a_member_too_redundant_to_deflate_safely_is_stored(tmp_path: Path) -> None:
    """4 MiB of zeros deflate over 1000x, which readers refuse as a zip bomb: the writer
    stores such a member, and it reads back (a ROS 2 bag's column of one value did this)."""
    path = tmp_path / "a.nanover.zip"
    zeros = bytes(4 << 20)
    with ArchiveWriter(path) as writer:
        writer.write({"x": 1}, timestamp_us=0)
        writer.add_member("column.bin", zeros)
    with ArchiveReader(path) as reader:
        assert reader.member("column.bin") == zeros
    with zipfile.ZipFile(path) as archive:
        assert archive.getinfo("column.bin").compress_type == zipfile.ZIP_STORED


def test_a_run_makes_the_same_blocks_as_messages_one_by_one() -> None:
    """`add_run` (the writers' path) against `add` per message: same block table, bytes
    and stream CRC, over lengths that cross both block limits (whole and half blocks)."""
    rng = np.random.default_rng(7)
    lengths = rng.choice([30, 700, 1500, 9000, 20000], size=600).tolist()
    messages = [bytes([n % 251]) * length for n, length in enumerate(lengths)]
    runs = [BlockDeflater(threads=0), BlockDeflater(threads=2)]
    one_by_one = BlockDeflater(threads=0)
    out: list[list[bytes]] = [[], [], []]
    for start in range(0, len(messages), 97):  # runs of uneven size
        part = messages[start : start + 97]
        crcs = [zlib.crc32(m) for m in part]
        out[0] += runs[0].add_run([(m,) for m in part], [len(m) for m in part], crcs)
        out[1] += runs[1].add_run([(m[:5], m[5:]) for m in part], [len(m) for m in part], crcs)
        for message in part:
            out[2] += one_by_one.add((message,), len(message), zlib.crc32(message))
    for blocks, made in zip([*runs, one_by_one], out, strict=True):
        made += blocks.finish()
    assert b"".join(out[0]) == b"".join(out[1]) == b"".join(out[2])
    assert runs[0].table() == runs[1].table() == one_by_one.table()
    stream = b"".join(messages)
    assert zlib.decompress(b"".join(out[0]), -15) == stream
    assert runs[0].crc == runs[1].crc == one_by_one.crc == zlib.crc32(stream)
    ends, _, _ = block_ends(lengths, 0, 0, BLOCK_BYTES)
    sizes = np.cumsum([0, *lengths]).tolist()
    assert runs[0].offsets == [0, *(sizes[end] for end in ends if end < len(lengths))]


def test_a_member_larger_than_a_piece_is_one_deflate_stream() -> None:
    """`MemberDeflater` cuts what it is given into pieces for its threads: joined, they
    still inflate to the member (a chunk may hold several pieces)."""
    rng = np.random.default_rng(3)
    data = rng.integers(0, 40, size=(3 << 20) + 12345, dtype=np.uint8).tobytes()
    compressor = deflater()
    out = [compressor.compress(data[:100]), compressor.compress(data[100:])]
    out.append(compressor.flush())
    assert zlib.decompress(b"".join(out), -15) == data


def _write_in_child(path: str) -> None:
    write_archive(Path(path), _messages()[:500])


def test_a_forked_worker_deflates_with_threads_of_its_own(
    pair: tuple[Path, Path], tmp_path: Path
) -> None:
    """The deflating threads are shared by a process's writers; this process has started
    them (the fixture wrote a compact archive), and a forked worker (batch convert's process
    pool) must start its own instead of waiting for the parent's, which are not there."""
    import multiprocessing

    target = tmp_path / "child.nanover.zip"
    child = multiprocessing.get_context("fork").Process(target=_write_in_child, args=(target,))
    child.start()
    child.join(60)
    if child.is_alive():
        child.kill()
        pytest.fail("the forked writer hung: it waited for its parent's deflating threads")
    assert child.exitcode == 0
    with ArchiveReader(target) as reader:
        assert len(reader) == 500
        assert reader.compact


def test_a_member_that_does_not_deflate_is_taken_back_and_stored(tmp_path: Path) -> None:
    """The deflate of a whole member is streamed to the file; when it is no smaller (random
    bytes, larger than what is buffered, so part of it is on disk), the file is cut back
    and the member stored: the members around it are intact (a small stored one still
    buffered before it too)."""
    rng = np.random.default_rng(5)
    members = {
        "tiny.bin": rng.bytes(100),
        "small-noise.bin": rng.bytes(1000),
        "noise.bin": rng.bytes(3 << 20),
        "text.bin": b"a compressible member " * 50_000,
    }
    path = tmp_path / "a.nanover.zip"
    with ArchiveWriter(path) as writer:
        writer.write({"x": 1}, timestamp_us=0)
        for name, data in members.items():
            writer.add_member(name, data)
    with zipfile.ZipFile(path) as archive:
        assert archive.testzip() is None
        assert archive.getinfo("noise.bin").compress_type == zipfile.ZIP_STORED
        assert archive.getinfo("text.bin").compress_type == zipfile.ZIP_DEFLATED
    with ArchiveReader(path) as reader:
        assert {name: reader.member(name) for name in members} == members
    assert verify(path).ok


def test_members_of_tiny_messages_keep_zlib() -> None:
    """ISA-L deflates the closing members unless the source holds under 40 bytes a message
    (the bz2 bag of 29-byte messages: 251,141 bytes, 17,294 messages), whose budget binds."""
    assert not fast_members(17_294, 947_459, {"size": 251_141})
    assert fast_members(17_294, 947_459, {"size": 868_400})  # the same messages, uncompressed
    assert fast_members(10, 5_000, {})  # no source size: the messages' own bytes count
    assert not fast_members(10, 1_000, {"name": "x"})
