"""`nanorec repack` and `--stored`: the layout changes, the content and the export do not."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from nanorec import ArchiveReader, verify
from nanorec.archive.atomic import file_sha256
from nanorec.cli import _register, app
from nanorec.errors import UnsupportedError
from nanorec.maintain.repack import repack
from tests.conftest import SAMPLES, make_runner

from .helpers import rebuild_zip, sample_messages, write_archive

runner = make_runner()


def _methods(path: Path) -> set[int]:
    with zipfile.ZipFile(path) as archive:
        return {info.compress_type for info in archive.infolist()}


def _contents(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        return {
            i.filename: archive.read(i)
            for i in archive.infolist()
            # nanorec's own, written afresh (the pages hold a compact layout's block rows)
            if i.filename not in ("nanorec.msgpack", "nanorec.pages")
        }


@pytest.mark.parametrize(
    "sample", ["rosbag-robot-bz2.bag", "pbstream-small.pbstream", "carla-0.9.16-town03.log"]
)
def test_convert_stored_repack_compact_and_back_export_the_same_bytes(
    tmp_path: Path, sample: str
) -> None:
    _register()
    source = SAMPLES / sample
    stored, compact, again = (tmp_path / f"{n}.nanover.zip" for n in ("s", "c", "again"))
    result = runner.invoke(app, ["convert", str(source), "-o", str(stored), "--stored"])
    assert result.exit_code == 0, result.output
    assert _methods(stored) == {zipfile.ZIP_STORED}
    result = runner.invoke(app, ["repack", str(stored), "-o", str(compact)])
    assert result.exit_code == 0, result.output
    assert "compact layout" in result.stdout
    assert zipfile.ZIP_DEFLATED in _methods(compact)
    assert compact.stat().st_size < stored.stat().st_size
    assert runner.invoke(app, ["repack", str(compact), "-o", str(again), "--stored"]).exit_code == 0
    assert _contents(stored) == _contents(compact) == _contents(again)
    for archive in (stored, compact, again):
        assert verify(archive).ok
        back = tmp_path / f"{archive.name}.native"
        result = runner.invoke(app, ["export", str(archive), "-o", str(back)])
        assert result.exit_code == 0, result.output
        assert file_sha256(back) == file_sha256(source)
    with ArchiveReader(compact) as one, ArchiveReader(stored) as other:
        assert one.compact and not other.compact
        assert one.description and other.description
        assert one.description["source"] == other.description["source"]


def test_repack_keeps_caller_metadata_and_refuses_itself(tmp_path: Path) -> None:
    from nanorec import ArchiveWriter

    path = tmp_path / "m.zip"
    with ArchiveWriter(path, compact=False) as writer:
        for i, message in enumerate(sample_messages(5)):
            writer.write(message, timestamp_us=i, metadata={"note": f"n{i}"})
    result = repack(path, tmp_path / "c.zip")
    assert result.compact and result.messages == 5
    with ArchiveReader(tmp_path / "c.zip") as reader:
        assert reader.metadata(3)["note"] == "n3"
    assert runner.invoke(app, ["repack", str(path), "-o", str(path), "--force"]).exit_code == 2


def test_repack_refuses_an_index_out_of_order(tmp_path: Path) -> None:
    import msgpack

    from .helpers import index_entries

    path = write_archive(tmp_path / "a.zip", sample_messages(4), compact=False)
    entries = index_entries(path)
    entries[1], entries[2] = entries[2], entries[1]
    swapped = rebuild_zip(
        path, tmp_path / "b.zip", replace={"index.msgpack": msgpack.packb(entries)}
    )
    with pytest.raises(UnsupportedError, match="back to back"):
        repack(swapped, tmp_path / "c.zip")


def test_recover_stored(tmp_path: Path) -> None:
    from nanorec import ArchiveWriter
    from nanorec.archive.writer import partial_path

    final = tmp_path / "a.nanover.zip"
    writer = ArchiveWriter(final)
    for i, message in enumerate(sample_messages(30)):
        writer.write(message, timestamp_us=i)
    writer.flush()
    out = tmp_path / "out.nanover.zip"
    result = runner.invoke(app, ["recover", str(partial_path(final)), "-o", str(out), "--stored"])
    assert result.exit_code == 0, result.output
    assert _methods(out) == {zipfile.ZIP_STORED}
    writer.abort()


def test_repack_nanovers_own_recording(realdata_dir: Path, tmp_path: Path) -> None:
    from .nanover_reference import NanoverRecordingReader

    theirs = realdata_dir / "nanover" / "nanotube-example-recording.nanover.zip"
    if not theirs.is_file():
        pytest.skip("NanoVer's recording is not present")
    compact = tmp_path / "compact.nanover.zip"
    result = repack(theirs, compact)
    assert result.output_size < result.input_size
    assert verify(compact).ok
    with ArchiveReader(theirs) as one, ArchiveReader(compact) as other:
        assert other.compact and list(one) == list(other)
    with NanoverRecordingReader.from_path(compact) as reader:
        assert sum(1 for _ in reader.iter_message_events()) == result.messages


def test_batch_convert_stored(tmp_path: Path) -> None:
    _register()
    sources = [SAMPLES / "rosbag-robot.bag", SAMPLES / "pbstream-small.pbstream"]
    out = tmp_path / "out"
    result = runner.invoke(app, ["convert", *map(str, sources), "-o", str(out), "--stored"])
    assert result.exit_code == 0, result.output
    archives = sorted(out.glob("*.nanover.zip"))
    assert len(archives) == 2 and all(_methods(a) == {zipfile.ZIP_STORED} for a in archives)
    compact = tmp_path / "compact"
    assert runner.invoke(app, ["convert", *map(str, sources), "-o", str(compact)]).exit_code == 0
    assert all(zipfile.ZIP_DEFLATED in _methods(a) for a in compact.glob("*.nanover.zip"))
