"""ArchiveWriter: refusal to overwrite, atomic publication, abort, input validation."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path
from unittest import mock

import msgpack
import pytest

import nanorec.archive.writer as writer_module
from nanorec import ArchiveReader, ArchiveWriter, verify
from nanorec.archive.writer import partial_path
from nanorec.errors import OutputExistsError

from .helpers import index_entries, sample_messages, write_archive


def test_refuses_existing_output_before_any_work(tmp_path: Path) -> None:
    path = tmp_path / "a.nanover.zip"
    path.write_bytes(b"precious")
    with pytest.raises(OutputExistsError):
        ArchiveWriter(path)
    assert path.read_bytes() == b"precious"
    assert not partial_path(path).exists()


def test_overwrite_replaces(tmp_path: Path) -> None:
    path = tmp_path / "a.nanover.zip"
    path.write_bytes(b"old")
    write_archive(path, sample_messages(3), overwrite=True)
    with ArchiveReader(path) as reader:
        assert len(reader) == 3


def test_leftover_partial_is_not_clobbered(tmp_path: Path) -> None:
    path = tmp_path / "a.nanover.zip"
    partial_path(path).write_bytes(b"crashed run")
    with pytest.raises(OutputExistsError, match="recover"):
        ArchiveWriter(path)
    assert partial_path(path).read_bytes() == b"crashed run"
    write_archive(path, sample_messages(2), overwrite=True)
    assert not partial_path(path).exists()


def test_final_name_appears_only_at_close(tmp_path: Path) -> None:
    path = tmp_path / "a.nanover.zip"
    writer = ArchiveWriter(path)
    assert partial_path(path) == tmp_path / ".a.nanover.zip.partial"
    for i, message in enumerate(sample_messages(3000)):
        writer.write(message, timestamp_us=i)
    assert not path.exists()
    assert partial_path(path).stat().st_size > 0  # flushed as it goes
    writer.close()
    assert path.exists()
    assert not partial_path(path).exists()
    assert sorted(os.listdir(tmp_path)) == ["a.nanover.zip"]  # spool file gone too
    writer.close()  # idempotent


def test_exception_inside_with_aborts(tmp_path: Path) -> None:
    path = tmp_path / "a.nanover.zip"
    with pytest.raises(RuntimeError), ArchiveWriter(path) as writer:
        writer.write({"frame": {}}, timestamp_us=0)
        raise RuntimeError("boom")
    assert os.listdir(tmp_path) == []


def test_final_path_created_meanwhile_is_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "a.nanover.zip"
    writer = ArchiveWriter(path)
    writer.write({"frame": {}}, timestamp_us=0)
    path.write_bytes(b"someone else")
    with pytest.raises(OutputExistsError):
        writer.close()
    assert path.read_bytes() == b"someone else"
    assert partial_path(path).exists()  # the finished archive is kept


@pytest.mark.parametrize(
    ("message", "error"),
    [
        ({"nanorec.t": 1}, ValueError),
        ({1: "x"}, TypeError),
        ([("frame", 1)], TypeError),
        ({"frame": object()}, TypeError),
    ],
)
def test_write_rejects_bad_messages(
    tmp_path: Path, message: object, error: type[Exception]
) -> None:
    with ArchiveWriter(tmp_path / "a.zip") as writer, pytest.raises(error):
        writer.write(message, timestamp_us=0)  # type: ignore[arg-type]


def test_write_rejects_bad_options(tmp_path: Path) -> None:
    with ArchiveWriter(tmp_path / "a.zip") as writer:
        writer.write({"a": 1}, timestamp_us=10)
        with pytest.raises(ValueError, match="decrease"):
            writer.write({"a": 1}, timestamp_us=9)
        with pytest.raises(ValueError, match="flags"):
            writer.write({"a": 1}, timestamp_us=10, flags=-1)
        with pytest.raises(ValueError, match="64 bits"):
            writer.write({"a": 1}, timestamp_us=2**63)
        with pytest.raises(ValueError, match="written by nanorec"):
            writer.write({"a": 1}, timestamp_us=10, metadata={"crc": 1})
        with pytest.raises(ValueError, match="entries"):
            writer.write_packed(msgpack.packb({"a": 1, "b": 2}), types=["a"], timestamp_us=10)
        with pytest.raises(ValueError, match="map"):
            writer.write_packed(msgpack.packb([1]), types=[], timestamp_us=10)
        assert writer.message_count == 1  # nothing half-written by the rejected calls
    with ArchiveReader(tmp_path / "a.zip") as reader:
        assert reader[:] == [{"a": 1}]
    assert verify(tmp_path / "a.zip").ok


def test_add_member_names(tmp_path: Path) -> None:
    with ArchiveWriter(tmp_path / "a.zip") as writer:
        for name in ("messages.msgpack", "index.msgpack", "nanorec.msgpack", "nanorec.x", ""):
            with pytest.raises(ValueError):
                writer.add_member(name, b"")
        writer.add_member("notes.txt", b"hi")
        with pytest.raises(ValueError):
            writer.add_member("notes.txt", b"again")
    with ArchiveReader(tmp_path / "a.zip") as reader:
        assert reader.member("notes.txt") == b"hi"
        # the paged layout: the description (with the page table) last, for a remote tail,
        # the side members just before it (in that tail when small)
        assert reader.member_names == (
            "messages.msgpack",
            "index.msgpack",
            "nanorec.pages",
            "notes.txt",
            "nanorec.msgpack",
        )


def test_write_after_close(tmp_path: Path) -> None:
    writer = ArchiveWriter(tmp_path / "a.zip")
    writer.close()
    with pytest.raises(ValueError):
        writer.write({"a": 1}, timestamp_us=0)
    with pytest.raises(ValueError):
        writer.add_member("x", b"")


def test_index_entries_are_nanover_shaped(tmp_path: Path) -> None:
    path = tmp_path / "a.zip"
    with ArchiveWriter(path) as writer:
        writer.write({"frame": {"frame.index": 0}}, timestamp_us=5)
        writer.write({"state": {}}, timestamp_us=6, flags=0b101, metadata={"note": "x"})
    first, second = index_entries(path)
    assert list(first) == ["offset", "length", "metadata"]
    assert list(first["metadata"]) == ["types", "timestamp", "crc"]
    assert list(second["metadata"]) == ["types", "timestamp", "crc", "f", "note"]
    assert second["metadata"]["f"] == 0b101
    assert "frame.index" not in first["metadata"]


def test_source_updated_before_close_is_recorded(tmp_path: Path) -> None:
    path = tmp_path / "a.zip"
    with ArchiveWriter(path, source_format="carla", source={"name": "r.log"}) as writer:
        writer.write({"frame": {}}, timestamp_us=0)
        writer.source["sha256"] = "ab" * 32
    with ArchiveReader(path) as reader:
        assert reader.description is not None
        assert reader.description["source"] == {"name": "r.log", "sha256": "ab" * 32}
        assert reader.description["source_format"] == "carla"
        assert reader.description["message_count"] == 1
        assert "columns" not in reader.description


def test_empty_archive(tmp_path: Path) -> None:
    path = write_archive(tmp_path / "e.zip", [])
    with ArchiveReader(path) as reader:
        assert len(reader) == 0
        assert reader.index_at_time(10) is None
        assert list(reader.iter_messages()) == []
    with zipfile.ZipFile(path) as archive:
        assert archive.testzip() is None
    assert verify(path).ok


def test_chunk_boundaries_and_spool(tmp_path: Path) -> None:
    messages = sample_messages(100)
    path = tmp_path / "a.zip"
    with mock.patch.object(writer_module, "CHUNK_ROWS", 7):
        write_archive(path, messages, flags=[i % 5 for i in range(100)])
    with ArchiveReader(path) as reader:
        assert reader[:] == messages
        assert reader.index.flags.tolist() == [i % 5 for i in range(100)]
    assert verify(path).ok
