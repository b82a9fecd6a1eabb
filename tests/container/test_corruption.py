"""Corruption ladder: one damage per test; `verify` names it, reading raises a NanorecError.

Damage is made two ways: in place (bytes flipped or cut, so zip CRCs no longer match) and by
rebuilding a zip that is valid as a zip but carries bad content.
"""

from __future__ import annotations

import contextlib
import zipfile
from pathlib import Path

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nanorec import ArchiveReader, recover, verify
from nanorec.errors import (
    ArchiveError,
    ChecksumError,
    IndexMismatchError,
    NanorecError,
    TruncatedError,
)
from nanorec.maintain.verify import VerifyReport

from .helpers import index_entries, rebuild_zip, sample_messages, write_archive

COUNT = 40


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    return write_archive(tmp_path / "good.nanover.zip", sample_messages(COUNT))


def _read_everything(path: Path, *, use_description: bool = True) -> None:
    """Every read path; raises whatever the reader raises."""
    with ArchiveReader(path, use_description=use_description) as reader:
        for i in range(len(reader)):
            reader.read(i, verify=True)
            reader.metadata(i)
        list(reader.iter_messages(types="state"))
        for name in reader.member_names:
            reader.member(name)


def _kinds(report: VerifyReport) -> list[str]:
    return [problem.kind for problem in report.problems]


def test_good_archive_verifies(archive: Path) -> None:
    report = verify(archive)
    assert report.ok, report.problems
    assert report.message_count == COUNT
    _read_everything(archive)


@pytest.mark.parametrize("cut", [1, 10, 30, 200, "half"])
def test_truncated_zip(archive: Path, cut: int | str) -> None:
    data = archive.read_bytes()
    keep = len(data) // 2 if cut == "half" else len(data) - int(cut)
    archive.write_bytes(data[:keep])
    report = verify(archive)
    assert report.problems[0].kind in ("truncated", "zip")
    with pytest.raises((TruncatedError, ArchiveError)):
        _read_everything(archive)


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.zip"
    path.write_bytes(b"")
    assert _kinds(verify(path)) == ["truncated"]
    with pytest.raises(TruncatedError):
        ArchiveReader(path)


@pytest.mark.parametrize("member", ["index.msgpack", "messages.msgpack"])
def test_missing_member(archive: Path, tmp_path: Path, member: str) -> None:
    damaged = rebuild_zip(archive, tmp_path / "missing.zip", replace={member: None})
    report = verify(damaged)
    assert _kinds(report) == ["missing-member"]
    assert report.problems[0].member == member
    with pytest.raises(ArchiveError, match=member):
        ArchiveReader(damaged)


def test_index_pointing_past_the_data(archive: Path, tmp_path: Path) -> None:
    entries = index_entries(archive)
    with zipfile.ZipFile(archive) as z:
        size = z.getinfo("messages.msgpack").file_size
    entries[17]["offset"] = size + 100
    damaged = rebuild_zip(
        archive, tmp_path / "past.zip", replace={"index.msgpack": msgpack.packb(entries)}
    )
    report = verify(damaged)
    assert report.problems[0].kind == "index-range"
    assert report.problems[0].entry == 17
    with pytest.raises(IndexMismatchError, match="entry 17"):
        ArchiveReader(damaged)  # the description no longer matches: index.msgpack is parsed


def test_one_flipped_byte_in_a_message(tmp_path: Path) -> None:
    archive = write_archive(tmp_path / "stored.nanover.zip", sample_messages(COUNT), compact=False)
    with ArchiveReader(archive) as reader:
        target = 23
        position = reader._messages_start + int(reader.index.offset[target]) + 5
    data = bytearray(archive.read_bytes())
    data[position] ^= 0x01
    archive.write_bytes(bytes(data))
    report = verify(archive)
    assert "member-crc" in _kinds(report)
    checksum = next(p for p in report.problems if p.kind == "checksum")
    assert checksum.entry == target
    with ArchiveReader(archive) as reader:
        with pytest.raises(ChecksumError, match=f"message {target}"):
            reader.read(target, verify=True)
        # An unchecked read gives a (damaged) message or a NanorecError, nothing else.
        with contextlib.suppress(NanorecError):
            reader[target]
        assert reader[target + 1] == sample_messages(COUNT)[target + 1]


@pytest.mark.parametrize("how", ["rebuilt", "in-place"])
def test_garbage_index(archive: Path, tmp_path: Path, how: str) -> None:
    if how == "rebuilt":
        damaged = rebuild_zip(
            archive, tmp_path / "garbage.zip", replace={"index.msgpack": bytes(range(256)) * 4}
        )
    else:
        damaged = archive
        with ArchiveReader(archive) as reader:
            member = reader._members["index.msgpack"]
        data = bytearray(archive.read_bytes())
        data[member.data_start + 1 : member.data_start + member.size] = b"\xc1" * (member.size - 1)
        archive.write_bytes(bytes(data))
    report = verify(damaged)
    assert "index" in _kinds(report)
    with pytest.raises(ArchiveError):
        _read_everything(damaged, use_description=False)
    if how == "rebuilt":
        with pytest.raises(ArchiveError):
            ArchiveReader(damaged)  # description mismatch -> index.msgpack parsed -> error


def test_index_with_an_extra_key(archive: Path, tmp_path: Path) -> None:
    entries = index_entries(archive)
    entries[5]["frame.index"] = 5  # NanoVer's RecordingIndexEntry(**entry) would fail
    damaged = rebuild_zip(
        archive, tmp_path / "k.zip", replace={"index.msgpack": msgpack.packb(entries)}
    )
    report = verify(damaged)
    assert report.problems[0].kind == "index"
    assert "entry 5" in report.problems[0].message
    with pytest.raises(IndexMismatchError, match="entry 5"):
        ArchiveReader(damaged)


def test_index_not_contiguous(archive: Path, tmp_path: Path) -> None:
    entries = index_entries(archive)
    entries[9]["offset"] -= 1
    damaged = rebuild_zip(
        archive, tmp_path / "c.zip", replace={"index.msgpack": msgpack.packb(entries)}
    )
    report = verify(damaged)
    assert report.problems[0].kind == "not-contiguous"
    assert report.problems[0].entry == 9
    assert "message" in _kinds(report)  # entry 9 no longer decodes to exactly one object
    with ArchiveReader(damaged) as reader, pytest.raises(NanorecError, match="message 9"):
        reader[9]


def test_garbage_description_falls_back(archive: Path, tmp_path: Path) -> None:
    damaged = rebuild_zip(archive, tmp_path / "d.zip", replace={"nanorec.msgpack": b"\x93garbage"})
    assert _kinds(verify(damaged)) == ["description"]
    with ArchiveReader(damaged) as reader:
        assert reader.index_source == "index.msgpack"
        assert reader.description_problem is not None
        assert reader[:] == sample_messages(COUNT)


def test_description_disagreeing_with_index(archive: Path, tmp_path: Path) -> None:
    entries = index_entries(archive)
    entries[3]["metadata"]["timestamp"] += 1
    damaged = rebuild_zip(
        archive, tmp_path / "t.zip", replace={"index.msgpack": msgpack.packb(entries)}
    )
    kinds = _kinds(verify(damaged))
    assert "description" in kinds  # index_size/crc differ, and the timestamp column
    assert "timestamp" in kinds  # "nanorec.t" in message 3 disagrees with the index


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    position=st.floats(0, 1),
    value=st.integers(0, 255),
    truncate=st.booleans(),
    use_description=st.booleans(),
    deflated=st.booleans(),
)
def test_fuzzed_damage_only_raises_nanorec_errors(
    archive: Path,
    tmp_path: Path,
    position: float,
    value: int,
    truncate: bool,
    use_description: bool,
    deflated: bool,
) -> None:
    source = archive
    if deflated:
        source = tmp_path / "deflated.zip"
        if not source.exists():
            rebuild_zip(archive, source, compression=zipfile.ZIP_DEFLATED)
    data = bytearray(source.read_bytes())
    where = min(int(position * len(data)), len(data) - 1)
    if truncate:
        del data[where:]
    else:
        data[where] = value
    damaged = tmp_path / "fuzz.zip"
    damaged.write_bytes(bytes(data))
    verify(damaged)  # must not raise
    with contextlib.suppress(NanorecError):
        _read_everything(damaged, use_description=use_description)
    recovered = tmp_path / "recovered.zip"
    recovered.unlink(missing_ok=True)
    with contextlib.suppress(NanorecError):
        recover(damaged, recovered)
