"""Archives read in place by URL (#36): against a Range-capable HTTP server that logs each
request and moto's S3 server, both on 127.0.0.1 and started here. Reads are counted in requests
and bytes (bounds, never times); export, verify and a server ignoring `Range` end to end."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("obstore")

from nanorec import ArchiveReader, registry, verify
from nanorec.archive.remote import RemoteError
from nanorec.archive.source import PAGE
from nanorec.errors import TruncatedError, UnsupportedError

from ..conftest import SAMPLES
from ..container.helpers import sample_messages, write_archive
from .servers import RangeServer, moto_s3, put_object

COUNT = 20_000
CARLA = SAMPLES / "carla-0.9.15-town03.log"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A compact archive of 20 000 small messages and a stored one, and a CARLA archive."""
    out = tmp_path_factory.mktemp("remote")
    messages = sample_messages(COUNT)
    write_archive(out / "compact.nanover.zip", messages, source_format="t")
    write_archive(out / "stored.nanover.zip", messages, compact=False)
    registry.get("carla").convert(CARLA, out / "carla.nanover.zip")
    return out


@pytest.fixture
def server(folder: Path) -> Iterator[RangeServer]:
    with RangeServer(folder).running() as running:
        yield running


@pytest.mark.parametrize("name", ["compact.nanover.zip", "stored.nanover.zip"])
def test_open_and_read_message_n_moves_pages_not_the_archive(
    server: RangeServer, folder: Path, name: str
) -> None:
    local = ArchiveReader(folder / name)
    size = (folder / name).stat().st_size
    with ArchiveReader(server.url(name)) as reader:
        opened = server.requests
        # the tail by a suffix range, then the local headers in one parallel batch
        assert opened <= 1 + len(reader.member_names)
        assert len(reader) == COUNT and reader.index_source == local.index_source
        server.reset()
        assert reader.read(12_345) == local.read(12_345)
        assert 1 <= server.requests <= 2 and server.sent <= 2 * PAGE
        server.reset()
        assert reader.read(12_346) == local.read(12_346)  # warm: its page is cached
        assert server.requests == 0
        t_us = int(local.index.timestamp_us[15_000]) + 1
        number = reader.index_at_time(t_us)
        assert number == local.index_at_time(t_us)
        assert number is not None and reader.read(number) == local.read(number)
        assert server.requests <= 2
        assert reader.remote is not None and reader.remote.source.bytes_read < size
    local.close()


def test_open_by_url_gives_the_recording_a_path_gives(server: RangeServer, folder: Path) -> None:
    with (
        registry.open(server.url("carla.nanover.zip")) as remote,
        registry.open(folder / "carla.nanover.zip") as local,
    ):
        assert type(remote) is type(local)
        assert len(remote) == len(local)
        assert remote.reader.path.name == "carla.nanover.zip"
        assert remote.reader.raw(len(local) - 1) == local.reader.raw(len(local) - 1)


def test_export_of_a_remote_carla_archive_is_byte_exact(
    server: RangeServer, folder: Path, tmp_path: Path
) -> None:
    converter = registry.get("carla")
    with registry.open(server.url("carla.nanover.zip")) as recording:
        report = converter.export(recording.reader, tmp_path / "out.log")
    assert report.identical
    exported = (tmp_path / "out.log").read_bytes()
    assert hashlib.sha256(exported).digest() == hashlib.sha256(CARLA.read_bytes()).digest()


def test_verify_checks_a_remote_archive(server: RangeServer, folder: Path) -> None:
    report = verify(server.url("compact.nanover.zip"))
    assert report.ok and report.message_count == COUNT
    # every byte once, but the tail's partial first page (fetched at open, dropped)
    assert server.sent <= (folder / "compact.nanover.zip").stat().st_size + PAGE


def test_verify_reports_damage_in_a_remote_archive(server: RangeServer, folder: Path) -> None:
    data = bytearray((folder / "stored.nanover.zip").read_bytes())
    data[200] ^= 0xFF  # a message byte: its member's CRC no longer matches
    (folder / "damaged.nanover.zip").write_bytes(bytes(data))
    report = verify(server.url("damaged.nanover.zip"))
    assert not report.ok
    assert {problem.kind for problem in report.problems} & {"crc", "checksum", "message"}


def test_a_server_ignoring_range_is_one_clear_error(folder: Path) -> None:
    with RangeServer(folder, ignore_range=True).running() as server:
        with pytest.raises(RemoteError, match="ignores Range"):
            ArchiveReader(server.url("compact.nanover.zip"))
        with pytest.raises(RemoteError, match="ignores Range"):
            registry.open(server.url("compact.nanover.zip"))


def test_an_archive_replaced_under_the_reader_is_refused(server: RangeServer, folder: Path) -> None:
    path = folder / "replaced.nanover.zip"
    path.write_bytes((folder / "stored.nanover.zip").read_bytes())
    with ArchiveReader(server.url("replaced.nanover.zip")) as reader:
        path.write_bytes((folder / "compact.nanover.zip").read_bytes())
        with pytest.raises(RemoteError, match="changed while it was read"):
            reader.read(COUNT // 2)


def test_a_missing_object_is_file_not_found(server: RangeServer) -> None:
    with pytest.raises(FileNotFoundError):
        ArchiveReader(server.url("absent.nanover.zip"))


def test_an_empty_object_is_truncated_not_a_range_problem(
    server: RangeServer, folder: Path
) -> None:
    (folder / "empty.nanover.zip").write_bytes(b"")
    with pytest.raises(TruncatedError, match="is empty"):
        ArchiveReader(server.url("empty.nanover.zip"))


def test_a_native_file_by_url_is_not_taken(server: RangeServer, folder: Path) -> None:
    (folder / "native.log").write_bytes(CARLA.read_bytes())
    with pytest.raises(UnsupportedError, match="archives only"):
        registry.open(server.url("native.log"))


def test_plain_http_is_refused_off_loopback() -> None:
    from nanorec.errors import UsageError

    with pytest.raises(UsageError, match="plain http"):
        ArchiveReader("http://example.com/x.nanover.zip")


@pytest.fixture(scope="module")
def s3(folder: Path) -> Iterator[str]:
    pytest.importorskip("moto.server")
    with moto_s3() as endpoint:
        for name in ("compact.nanover.zip", "carla.nanover.zip"):
            put_object(endpoint, "runs", f"day1/{name}", (folder / name).read_bytes())
        yield endpoint


def test_s3_open_read_and_export(s3: str, folder: Path, tmp_path: Path) -> None:
    local = ArchiveReader(folder / "compact.nanover.zip")
    with ArchiveReader("s3://runs/day1/compact.nanover.zip") as reader:
        assert reader.remote is not None
        source = reader.remote.source
        opened = (source.requests, source.bytes_read)  # type: ignore[attr-defined]
        assert opened[0] <= 1 + len(reader.member_names)
        assert reader.read(777) == local.read(777)
        assert source.requests - opened[0] <= 2  # type: ignore[attr-defined]
        assert source.bytes_read - opened[1] <= 2 * PAGE  # type: ignore[attr-defined]
    local.close()
    with registry.open("s3://runs/day1/carla.nanover.zip") as recording:
        report = registry.get("carla").export(recording.reader, tmp_path / "back.log")
    assert report.identical
    assert (tmp_path / "back.log").read_bytes() == CARLA.read_bytes()
    assert verify("s3://runs/day1/compact.nanover.zip").ok


@pytest.mark.realdata
@pytest.mark.parametrize(
    "bag", ["rosbag2_cpp_bags_topics_and_services_db3", "rosbag2_humble_py_talker"]
)
def test_a_real_ros2_bag_exports_from_http_as_from_disk(
    realdata_dir: Path, tmp_path: Path, bag: str
) -> None:
    """Real rosbag2 recordings (../shared/realdata/ros2): the export of the archive read by
    URL is the export of the archive read from disk, file for file."""
    source = realdata_dir / "ros2" / bag
    if not source.is_dir():
        pytest.skip(f"{source} is not present")
    converter = registry.get("ros2")
    archive = tmp_path / f"{bag}.nanover.zip"
    converter.convert(source, archive)
    with (
        RangeServer(tmp_path).running() as server,
        registry.open(server.url(archive.name)) as remote,
        registry.open(archive) as local,
    ):
        converter.export(remote.reader, tmp_path / "remote")
        converter.export(local.reader, tmp_path / "local")
    remote_files = sorted(p.name for p in (tmp_path / "remote").iterdir())
    assert remote_files == sorted(p.name for p in (tmp_path / "local").iterdir())
    for name in remote_files:
        assert (tmp_path / "remote" / name).read_bytes() == (tmp_path / "local" / name).read_bytes()
