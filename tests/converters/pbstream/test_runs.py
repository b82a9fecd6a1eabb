"""The run path of `convert` (`runs.Runs`: members inflated a run at a time, records read by
`vector.describe_run`, messages built by `glue.build_run`) against the per-record path it
replaced (`whole_payload` a member, `Runs._one` a record): the same archive, byte for byte,
on generated, fuzzed and damaged streams; and `glue`/`scan.inflate_run` on their own."""

from __future__ import annotations

import gzip
import random
import struct
import tracemalloc
import zlib
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import pytest

from nanorec.archive.layout import use_layout
from nanorec.archive.wire import timestamp_entry
from nanorec.converters.pbstream import runs
from nanorec.converters.pbstream.convert import convert
from nanorec.converters.pbstream.crc import MemberCheck
from nanorec.converters.pbstream.generate import Plan, iter_payloads
from nanorec.converters.pbstream.glue import KindNames, build_run
from nanorec.converters.pbstream.scan import WHOLE_BELOW, frame_table, inflate_run, whole_payload
from nanorec.converters.pbstream.stream import GZIP_HEADER, MAGIC, Cut, build_member, iter_frames

from .test_vector import _payloads as fuzzed_payloads


def _stream(members: list[bytes]) -> bytes:
    return MAGIC + b"".join(struct.pack("<Q", len(m)) + m for m in members)


def _damaged(members: list[bytes], rng: random.Random) -> list[bytes]:
    """Members broken in the ways a run must notice: a flipped byte, zeros after the
    member, a second member inside a record, another gzip header, garbage, a cut."""
    out = list(members)
    for _ in range(rng.choice((1, 2, 5))):
        number = rng.randrange(1, len(out))
        member = out[number]
        how = rng.randrange(7)
        if how == 0:
            edited = bytearray(member)
            edited[rng.randrange(len(edited))] ^= 1 << rng.randrange(8)
            member = bytes(edited)
        elif how == 1:
            member += bytes(rng.choice((1, 3, 4, 9)))
        elif how == 2:
            member = build_member(b"") + member
        elif how == 3:
            member = gzip.compress(gzip.decompress(member), mtime=5)
        elif how == 4:
            member += b"\x01junk"
        elif how == 5:
            member = member[: rng.randrange(1, len(member))]
        else:
            member = build_member(b"") if rng.random() < 0.5 else member + build_member(b"x")
        out[number] = member
    return out


def _sources(folder: Path) -> list[Path]:
    found = []
    rng = random.Random(3)
    streams: list[list[bytes]] = []
    for layout in ("2", "legacy"):
        plan = Plan(trajectories=3, nodes=90, nodes_per_submap=7, grid_cells=20)
        streams.append([build_member(p) for p in iter_payloads(plan, layout)])
    streams.append([build_member(p) for p in [*streams[0][:1], *fuzzed_payloads(1, 2500)]])
    streams += [_damaged(streams[k % 3], rng) for k in range(6)]
    for number, members in enumerate(streams):
        path = folder / f"s{number}.pbstream"
        data = _stream(members)
        path.write_bytes(data + (data[-7:] if number == 4 else b""))  # one cut file
        found.append(path)
    return found


def _per_record(monkeypatch: pytest.MonkeyPatch, *, describe: bool) -> None:
    """Send every member through `whole_payload` and, with `describe`, every record through
    `Runs._one`: the per-record path."""
    monkeypatch.setattr(runs, "inflate_run", lambda source, starts, sizes: None)
    if describe:
        real = runs.describe_run

        def nothing_read(*args: Any) -> Any:
            ok, *rest = real(*args)
            return (np.zeros_like(ok), *rest)

        monkeypatch.setattr(runs, "describe_run", nothing_read)


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["stored", "compact"])
def test_runs_write_what_the_per_record_path_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str
) -> None:
    monkeypatch.setattr(runs, "_AHEAD", 1)
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    for source in _sources(tmp_path):
        outputs = []
        reports = []
        for step in ("runs", "whole_payload", "per record"):
            with monkeypatch.context() as patch:
                if step != "runs":
                    _per_record(patch, describe=step == "per record")
                out = tmp_path / f"{source.stem}-{step}.zip"
                with use_layout(layout):
                    report = convert(source, out, overwrite=True)
            outputs.append(out.read_bytes())
            reports.append((report.messages, report.damaged, report.warnings, report.details))
        assert outputs[0] == outputs[1] == outputs[2], source.name
        assert reports[0] == reports[1] == reports[2], source.name


def _reference(member: bytes, name: str, node: bool, columns: tuple[int, int, int, int]) -> bytes:
    trajectory, index, ticks, stamp = columns
    entry: dict[str, Any] = {"member": member, "trajectory_id": trajectory}
    if node:
        entry["index"] = index
    entry["timestamp"] = ticks
    return b"\x82" + msgpack.packb({name: entry})[1:] + timestamp_entry(stamp)


def test_glue_packs_as_msgpack() -> None:
    rng = random.Random(2)
    names = [f"kind{key >> 3}" * (1 + key % 5) for key in range(256)]
    kinds = KindNames(names)
    edges = [0, 1, 31, 32, 127, 128, 255, 256, 65535, 65536, 2**31, 2**32, 2**40, 2**63 - 1]
    values = [*edges, *(-v for v in edges), -(2**63)]
    for _ in range(20):
        count = rng.randrange(1, 300)
        # each a member with Cartographer's gzip header; the glue holds the header
        bodies = [
            rng.randbytes(rng.choice((0, 1, 245, 246, 700, 65525, 65526, 70000)))
            for _ in range(count)
        ]
        members = [GZIP_HEADER + body for body in bodies]
        sizes = [len(member) for member in members]
        keys = np.array([rng.randrange(256) for _ in range(count)], np.int64)
        nodes = np.array([rng.random() < 0.4 for _ in range(count)])
        fast = np.array([rng.random() < 0.8 for _ in range(count)])
        columns = tuple(
            np.array([rng.choice(values) for _ in range(count)], np.int64) for _ in range(4)
        )
        slow = {row: rng.randbytes(rng.randrange(1, 50)) for row in np.flatnonzero(~fast)}
        joined, lengths = build_run(
            bodies, np.array(sizes, np.int64), fast, keys, nodes, columns, kinds, slow
        )
        want = [
            slow[row]
            if row in slow
            else _reference(
                members[row],
                names[int(keys[row])],
                bool(nodes[row]),
                tuple(int(column[row]) for column in columns),  # type: ignore[arg-type]
            )
            for row in range(count)
        ]
        assert joined == b"".join(want)
        assert lengths.tolist() == [len(item) for item in want]


def _inflate_run(members: list[bytes]) -> tuple[bytes, np.ndarray[Any, Any]] | None:
    """`inflate_run` as `Runs` calls it: members in a stream, some not adjacent."""
    records = [struct.pack("<Q", len(member)) + member for member in members]
    gaps = [
        build_member(b"elsewhere") if number % 7 == 3 else b"" for number in range(len(records))
    ]
    starts = np.cumsum([len(gap) + len(record) for gap, record in zip(gaps, records, strict=True)])
    sizes = np.array([len(member) for member in members], np.int64)
    source = b"".join(gap + record for gap, record in zip(gaps, records, strict=True))
    return inflate_run(memoryview(source), starts - sizes, sizes)


def test_inflate_run_reads_as_whole_payload_or_refuses() -> None:
    pytest.importorskip("isal")  # without ISA-L a run is always read member by member
    rng = random.Random(4)
    payloads = fuzzed_payloads(2, 400)
    members = [build_member(payload) for payload in payloads]
    found = _inflate_run(members)
    assert found is not None
    assert found[0] == b"".join(payloads)
    assert found[1].tolist() == [len(payload) for payload in payloads]
    for _ in range(200):
        # what `Runs` hands it: members with Cartographer's header, each of 18 bytes or more
        broken = [
            member
            for member in _damaged(members, rng)
            if member[:10] == GZIP_HEADER and len(member) >= 18
        ]
        each = [whole_payload(member) for member in broken]
        found = _inflate_run(broken)
        if found is not None:  # only when every member still reads whole on its own
            assert all(payload is not None for payload in each)
            assert found[0] == b"".join(each)  # type: ignore[arg-type]
        elif all(payload is not None for payload in each):
            # refused although each reads: an empty payload, or a signature by chance
            assert any(not payload for payload in each) or any(
                member.count(b"\x1f\x8b\x08") > 1 for member in broken
            )


def test_frame_table_reads_as_iter_frames() -> None:
    members = [build_member(p) for p in fuzzed_payloads(5, 40)]
    data = _stream(members)
    rng = random.Random(6)
    for end in [len(data), *range(len(data) - 30, len(data)), *rng.sample(range(9), 5)]:
        cut_data = data[:end]
        offsets, sizes, cut = frame_table(cut_data, len(MAGIC))
        frames = list(iter_frames(cut_data))
        want_cut = frames.pop() if frames and isinstance(frames[-1], Cut) else None
        assert [(f.offset, f.size) for f in frames] == list(zip(offsets, sizes, strict=True))
        assert cut == want_cut


def test_small_members_that_inflate_far_are_not_all_held(tmp_path: Path) -> None:
    """Members of ~4 KB that inflate to 4 MB each (zeros, valid): a run holds no more than
    `_PAYLOADS_BUDGET` of payloads, the rest are checked in steps. Before the budget, these
    48 records (188 KB) took 370 MB at once."""
    payload = bytes(4_000_000)
    deflater = zlib.compressobj(9, zlib.DEFLATED, -15)
    body = deflater.compress(payload) + deflater.flush()
    member = GZIP_HEADER + body + struct.pack("<II", zlib.crc32(payload), len(payload))
    assert len(member) < WHOLE_BELOW  # a small member, inflated whole with its run
    members = [member for _ in range(48)]
    source = tmp_path / "zeros.pbstream"
    source.write_bytes(_stream(members))
    tracemalloc.start()
    try:
        report = convert(source, tmp_path / "zeros.zip")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert report.messages == 48 and not report.damaged and not report.warnings
    assert peak < runs._PAYLOADS_BUDGET + (48 << 20)


def test_large_members_are_checked_as_they_come() -> None:
    """A batch goes to the checking thread by bytes too: a file's few large members are
    checked beside the conversion, not all at its end; a damaged one is still reported."""
    good = build_member(random.Random(5).randbytes(300_000))
    bad = bytearray(good)
    bad[-8] ^= 1  # its CRC-32
    source = _stream([good, good, good, bytes(bad), good])
    starts = [start for start, _ in _frames(source)]
    check = MemberCheck(source)
    with check:
        for number, start in enumerate(starts[:4]):
            check.add(number, start - 8, start, start + len(good))
        assert check.batch == []  # 1.2 MB handed over before the end
        check.add(4, starts[4] - 8, starts[4], starts[4] + len(good))
        found = check.problems()
    assert [(number, reason) for number, _, reason in found] == [
        (3, "a record fails its gzip CRC-32")
    ]


def _frames(source: bytes) -> list[tuple[int, int]]:
    return [
        (frame.start, frame.size) for frame in iter_frames(source) if not isinstance(frame, Cut)
    ]


def test_a_failed_conversion_stops_the_source_hash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The source is hashed from the start, beside the framing: a conversion that fails
    leaves no hashing thread behind, and no output."""
    import threading

    from nanorec.archive.filehash import THREAD_NAME
    from nanorec.converters.pbstream import convert as module
    from nanorec.errors import NanorecError

    def failing_frames(*args: object) -> None:
        raise NanorecError("the framing failed")

    monkeypatch.setattr(module, "frame_table", failing_frames)
    source = tmp_path / "big.pbstream"
    source.write_bytes(MAGIC + bytes(64 << 20))  # (hashing it takes longer than failing)
    with pytest.raises(NanorecError, match="the framing failed"):
        convert(source, tmp_path / "out.zip")
    assert not [t for t in threading.enumerate() if t.name == THREAD_NAME]
    assert not (tmp_path / "out.zip").exists()
