"""Bad input: cut at any byte, corrupt gzip, lying sizes, unknown wire types and kinds,
members written with other gzip settings. Each gives a `NanorecError` naming the offset, or
a converted prefix with a report, and the export still gives the input back byte for byte."""

from __future__ import annotations

import gzip
import struct
import tracemalloc
import zlib
from pathlib import Path

import pytest

from nanorec.archive.reader import ArchiveReader
from nanorec.converters.pbstream.convert import convert
from nanorec.converters.pbstream.export import export_native
from nanorec.converters.pbstream.generate import Plan, iter_payloads
from nanorec.converters.pbstream.recording import PbstreamRecording
from nanorec.converters.pbstream.stream import MAGIC, Cut, build_member, inflate_member, iter_frames
from nanorec.errors import BadMagicError, FormatError, NanorecError, TruncatedError

PLAN = Plan(trajectories=1, nodes=6, nodes_per_submap=3, grid_cells=16, landmarks=1)


def _stream(payloads: list[bytes], members: dict[int, bytes] | None = None) -> bytes:
    parts = [MAGIC]
    for number, payload in enumerate(payloads):
        member = (members or {}).get(number) or build_member(payload)
        parts.append(struct.pack("<Q", len(member)) + member)
    return b"".join(parts)


def _roundtrip(data: bytes, folder: Path, name: str = "x") -> PbstreamRecording:
    source = folder / f"{name}.pbstream"
    source.write_bytes(data)
    archive = folder / f"{name}.nanover.zip"
    convert(source, archive, overwrite=True)
    reader = ArchiveReader(archive)
    back = folder / f"{name}.back"
    report = export_native(reader, back, overwrite=True)
    assert back.read_bytes() == data and report.identical
    return PbstreamRecording(reader)


@pytest.fixture(scope="module")
def payloads() -> list[bytes]:
    return list(iter_payloads(PLAN))


def test_frames_at_every_cut(payloads: list[bytes]) -> None:
    """Framing at every byte: complete records, then a `Cut` naming where the tail starts."""
    data = _stream(payloads)
    ends = []
    for frame in iter_frames(data):
        assert not isinstance(frame, Cut)
        ends.append(frame.end)
    for cut in range(8, len(data)):
        frames = list(iter_frames(data[:cut]))
        complete = [f for f in frames if not isinstance(f, Cut)]
        assert [f.end for f in complete] == [e for e in ends if e <= cut]
        if cut not in ends and cut > 8:
            assert isinstance(frames[-1], Cut) and frames[-1].offset == max(
                [8, *(e for e in ends if e <= cut)]
            )


def test_cut_files_convert_a_prefix(payloads: list[bytes], tmp_path: Path) -> None:
    data = _stream(payloads)
    for cut in [*range(0, 40), *range(40, len(data), 211), len(data) - 1]:
        source = tmp_path / "cut.pbstream"
        source.write_bytes(data[:cut])
        if cut < 8:
            with pytest.raises(TruncatedError) as error:
                convert(source, tmp_path / "cut.zip", overwrite=True)
            assert error.value.offset == cut
            continue
        report = convert(source, tmp_path / "cut.zip", overwrite=True)
        with ArchiveReader(tmp_path / "cut.zip") as reader:
            export_native(reader, tmp_path / "back", overwrite=True)
        assert (tmp_path / "back").read_bytes() == data[:cut]
        assert report.cut is None or report.cut.length > 0


def test_bad_magic_and_empty(tmp_path: Path) -> None:
    source = tmp_path / "x.pbstream"
    source.write_bytes(b"\x1f\x8b" + bytes(100))
    with pytest.raises(BadMagicError) as error:
        convert(source, tmp_path / "x.zip")
    assert error.value.offset == 0
    source.write_bytes(b"")
    with pytest.raises(TruncatedError):
        convert(source, tmp_path / "x.zip")


def test_lying_size_is_a_cut_not_an_allocation(payloads: list[bytes], tmp_path: Path) -> None:
    data = bytearray(_stream(payloads))
    second = 8 + 8 + struct.unpack_from("<Q", data, 8)[0]
    struct.pack_into("<Q", data, second, 1 << 60)
    tracemalloc.start()
    try:
        rec = _roundtrip(bytes(data), tmp_path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20
    assert len(rec) == 1 and rec.meta["cut"]["offset"] == second
    assert str(1 << 60) in rec.meta["cut"]["reason"]
    rec.close()


def test_corrupt_gzip_is_kept_as_damaged(payloads: list[bytes], tmp_path: Path) -> None:
    member = bytearray(build_member(payloads[3]))
    member[20] ^= 0x55  # inside the deflate body
    with pytest.raises(FormatError):
        inflate_member(bytes(member), 1234)
    data = _stream(payloads, {3: bytes(member)})
    rec = _roundtrip(data, tmp_path)
    assert rec.kind_of(3) == "damaged"
    assert rec.summary()["damaged"] == 1 and rec.meta["damaged"][0][0] > 0
    assert rec.decode(3)["reason"]
    rec.close()


def test_other_gzip_settings_keep_the_original_member(
    payloads: list[bytes], tmp_path: Path
) -> None:
    members = {
        2: gzip.compress(payloads[2], 9, mtime=0),
        4: zlib.compress(payloads[4], 1, wbits=31),
    }
    rec = _roundtrip(_stream(payloads, members), tmp_path)
    assert rec.summary()["raw_members"] == 2
    assert rec.payload(2) == payloads[2]
    rec.close()


def test_unknown_kinds_and_wire_types_are_kept(payloads: list[bytes], tmp_path: Path) -> None:
    odd = [
        *payloads,
        b"\x62\x02\x08\x01",  # SerializedData field 12: a kind from the future
        b"\x23\x24",  # wire type 3 (a group): not a record we know
        b"\x22\x03\xf8\x06\x07",  # a node with only an unknown field 111
    ]
    rec = _roundtrip(_stream(odd), tmp_path)
    count = len(payloads)
    assert [rec.kind_of(count + k) for k in range(3)] == ["unknown", "unknown", "node"]
    assert rec.decode(count)["payload"] == odd[count]
    assert rec.decode(count + 2)["data"]["_unknown"] == [[111, 0, 7]]
    rec.close()


def test_header_variants(payloads: list[bytes], tmp_path: Path) -> None:
    rec = _roundtrip(_stream([b"\x08\x07", *payloads[1:]]), tmp_path, "v7")
    assert rec.format_version == "7"
    rec.close()
    legacy = list(iter_payloads(PLAN, "legacy"))
    rec = _roundtrip(_stream(legacy), tmp_path, "legacy")
    assert rec.format_version == "legacy"
    assert rec.kind_of(0) == "pose_graph" and rec.kind_of(1) == "all_trajectory_builder_options"
    assert rec.summary()["trajectories"]["0"]["nodes"] == PLAN.nodes
    rec.close()


def test_damaged_archive_side_member_is_a_nanorec_error(tmp_path: Path) -> None:
    from nanorec.archive.writer import ArchiveWriter

    archive = tmp_path / "plain.zip"
    with ArchiveWriter(archive, source_format="pbstream") as writer:
        writer.write({"node": {"payload": b""}}, timestamp_us=0)
    with ArchiveReader(archive) as reader, pytest.raises(NanorecError):
        PbstreamRecording(reader)


def test_a_cut_at_a_record_boundary_says_what_is_missing(
    payloads: list[bytes], tmp_path: Path
) -> None:
    nodes = [n for n, p in enumerate(payloads) if p[0] == 0x22]
    rec = _roundtrip(_stream(payloads[: nodes[2]]), tmp_path)
    summary = rec.summary()
    assert summary["cut"] is None
    assert summary["missing"] == ["trajectory 0: 2 nodes records for 6 in the pose graph"]
    rec.close()
    rec = _roundtrip(_stream(payloads[:2]), tmp_path, "two")
    assert rec.summary()["missing"][0] == "no all_trajectory_builder_options record"
    rec.close()


def test_a_damaged_pose_graph_still_summarises(payloads: list[bytes], tmp_path: Path) -> None:
    broken = b"\x0a\x04\x12\x09\x08\x01"  # pose graph whose constraint runs past its end
    rec = _roundtrip(_stream([payloads[0], broken, *payloads[2:]]), tmp_path)
    summary = rec.summary()
    assert summary["constraints"]["total"] == 0 and summary["problems"]
    assert summary["trajectories"]["0"]["nodes"] == PLAN.nodes
    assert len(rec.trajectory(0)) == PLAN.nodes  # local poses stand in
    rec.close()


def test_a_node_time_of_the_wrong_wire_type_is_flagged_not_fatal(
    payloads: list[bytes], tmp_path: Path
) -> None:
    """A node whose timestamp is a fixed64 instead of a varint: every record is kept, the
    node is untimed and named in the report and the summary."""
    from nanorec import registry
    from nanorec.converters.pbstream.wire import FIXED64, field_bytes, key

    data = field_bytes(1, b"\x08\x00\x10\x00") + field_bytes(
        5, key(1, FIXED64) + struct.pack("<q", 638220896057529180)
    )
    node = field_bytes(4, data)
    stream = _stream([*payloads[:3], node])
    rec = _roundtrip(stream, tmp_path)
    assert len(rec) == 4 and rec.kind_of(3) == "node" and not rec.timed[3]
    assert any("record 3" in p and "wire type 1" in p for p in rec.summary()["problems"])
    rec.close()
    report = registry.get("pbstream").convert(tmp_path / "x.pbstream", tmp_path / "y.zip")
    assert report.messages == 4
    assert len(report.warnings) == 1 and "record 3 (node" in report.warnings[0]


@pytest.mark.parametrize(
    ("meta", "says"),
    [
        ([1, 2], "not a pbstream description"),
        ({"magic": MAGIC, "format": "2", "raw_members": 0}, "lacks 'columns'"),
    ],
)
def test_a_bad_side_member_says_what_is_wrong(meta: object, says: str, tmp_path: Path) -> None:
    """A FormatError in plain words (no Python exception reprs)."""
    import msgpack

    from nanorec.archive.writer import ArchiveWriter
    from nanorec.converters.pbstream.convert import META_MEMBER, read_meta

    archive = tmp_path / "meta.zip"
    with ArchiveWriter(archive, source_format="pbstream") as writer:
        writer.write({"node": {"payload": b""}}, timestamp_us=0)
        writer.add_member(META_MEMBER, zlib.compress(msgpack.packb(meta)))
    with ArchiveReader(archive) as reader, pytest.raises(FormatError) as caught:
        read_meta(reader)
    assert says in str(caught.value) and "Error(" not in str(caught.value)


def test_the_converter_raises_only_nanorec_errors() -> None:
    """Bad input is a NanorecError: no bare ValueError/KeyError in the converter's code."""
    import ast

    import nanorec.converters.pbstream as package

    for path in Path(package.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                name = getattr(node.exc.func, "id", "")
                assert name not in ("ValueError", "KeyError"), (path.name, node.lineno)


def _bomb(size: int, declared: int | None = None) -> bytes:
    """A gzip member as Cartographer writes it, inflating to `size` bytes (a node record
    of zeros), built block by block; its ISIZE says `declared` (default: the truth)."""
    from nanorec.converters.pbstream.stream import GZIP_HEADER
    from nanorec.converters.pbstream.wire import varint

    head = b"\x22" + varint(size - 6) + b"\x0a"
    deflater = zlib.compressobj(1, zlib.DEFLATED, -15, 8)
    parts, crc, done = [GZIP_HEADER, deflater.compress(head)], zlib.crc32(head), len(head)
    block = bytes(1 << 20)
    while done < size:
        piece = block[: min(len(block), size - done)]
        parts.append(deflater.compress(piece))
        crc, done = zlib.crc32(piece, crc), done + len(piece)
    trailer = struct.pack("<II", crc, (size if declared is None else declared) & 0xFFFF_FFFF)
    return b"".join([*parts, deflater.flush(), trailer])


@pytest.mark.slow
def test_a_record_inflating_to_a_gibibyte_is_never_held(tmp_path: Path) -> None:
    """1 GiB records (honest size, or a size that lies low) are kept compressed as damaged
    records: the conversion's peak memory (VmHWM, in a child) stays a few hundred MB."""
    import subprocess
    import sys

    honest, lying = _bomb(1 << 30), _bomb(1 << 30, declared=100 << 20)
    source = tmp_path / "bomb.pbstream"
    source.write_bytes(_stream([b"\x08\x02", b"", b""], {1: honest, 2: lying}))
    script = (
        "import sys\n"
        "from nanorec.converters.pbstream.convert import convert\n"
        "report = convert(sys.argv[1], sys.argv[2])\n"
        "print(report.messages, *(region.reason for region in report.damaged), sep='\\n')\n"
        "print([l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1])\n"
    )
    archive = tmp_path / "bomb.nanover.zip"
    done = subprocess.run(
        [sys.executable, "-c", script, str(source), str(archive)],
        capture_output=True,
        text=True,
        check=True,
    )
    records, first, second, peak_kb = done.stdout.splitlines()
    assert records == "3"
    assert "declares 1073741824" in first and "inflates past" in second
    assert int(peak_kb) < 400 << 10, f"peak {int(peak_kb) >> 10} MB"
    back = tmp_path / "back.pbstream"
    with ArchiveReader(archive) as reader:
        assert export_native(reader, back).identical


def test_a_record_cut_inside_a_varint_is_unknown(payloads: list[bytes], tmp_path: Path) -> None:
    """A whole payload whose last varint runs past its end: `unknown`, kept (the prefix scan
    must not ask for more than the payload holds)."""
    rec = _roundtrip(_stream([*payloads[:3], b"\x22\x02\x08\x96"]), tmp_path)
    assert rec.kind_of(3) == "unknown"
    rec.close()
