"""Outputs to object storage (#36 item 4) against moto's S3 server on 127.0.0.1: `convert -o
s3://...` equals the local conversion byte for byte, nothing is at the key until the upload
completes (a part refused: no object, the multipart upload aborted), an object there is
refused without --force and replaced with it, a batch writes one key per input, export reads
an s3:// archive and writes an s3:// file, and a store that cannot be used is one line."""

from __future__ import annotations

import hashlib
import os
import pickle
import shutil
import signal
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("obstore")
pytest.importorskip("moto.server")

from nanorec import registry
from nanorec.archive import upload
from nanorec.archive.remote import RemoteError
from nanorec.archive.urls import url_path
from nanorec.cli import _register, app
from nanorec.errors import OutputExistsError, UnsupportedError

from ..conftest import SAMPLES, make_runner
from .servers import moto_s3, put_object

CARLA = SAMPLES / "carla-0.9.15-town03.log"
BUCKET = "out"
runner = make_runner()
_register()


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with moto_s3() as running:
        put_object(running, BUCKET, "seed", b"")  # creates the bucket
        yield running


@pytest.fixture
def s3(endpoint: str) -> Any:
    import boto3

    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample converted to a local archive: what every upload must equal."""
    out = tmp_path_factory.mktemp("upload") / "carla.nanover.zip"
    done = runner.invoke(app, ["convert", str(CARLA), "-o", str(out)])
    assert done.exit_code == 0, done.output
    return out


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _body(s3: Any, key: str) -> bytes:
    data: bytes = s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
    return data


def _absent(s3: Any, key: str) -> bool:
    listed = s3.list_objects_v2(Bucket=BUCKET, Prefix=key).get("Contents", [])
    return not any(item["Key"] == key for item in listed)


def _no_temporary_left(before: set[str]) -> None:
    import tempfile

    left = {p.name for p in Path(tempfile.gettempdir()).glob("nanorec-upload-*")} - before
    assert not left


def _temporaries() -> set[str]:
    import tempfile

    return {p.name for p in Path(tempfile.gettempdir()).glob("nanorec-upload-*")}


def test_convert_to_s3_equals_the_local_conversion(endpoint: str, s3: Any, local: Path) -> None:
    before = _temporaries()
    url = f"s3://{BUCKET}/runs/carla.nanover.zip"
    done = runner.invoke(app, ["convert", str(CARLA), "-o", url])
    assert done.exit_code == 0, done.output
    assert _sha(_body(s3, "runs/carla.nanover.zip")) == _sha(local.read_bytes())
    assert f"-> {url}" in done.stdout and "nanorec-upload-" not in done.stdout
    _no_temporary_left(before)


def test_an_object_there_is_refused_without_force_and_replaced_with_it(
    endpoint: str, s3: Any, local: Path
) -> None:
    put_object(endpoint, BUCKET, "taken.nanover.zip", b"someone else's")
    url = f"s3://{BUCKET}/taken.nanover.zip"
    refused = runner.invoke(app, ["convert", str(CARLA), "-o", url])
    assert refused.exit_code == 2
    assert refused.stderr == f"nanorec: {url} exists; pass --force to replace it\n"
    assert _body(s3, "taken.nanover.zip") == b"someone else's"
    forced = runner.invoke(app, ["convert", str(CARLA), "-o", url, "--force"])
    assert forced.exit_code == 0, forced.output
    assert _body(s3, "taken.nanover.zip") == local.read_bytes()


def test_nothing_is_at_the_key_until_the_upload_completes(
    endpoint: str, s3: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second part is refused by the server: the object never appears and the multipart
    upload is aborted (none left listed), whichever part fails."""
    from moto.s3 import exceptions, models

    data = os.urandom(3 * (5 << 20) + 1234)  # S3's smallest part is 5 MiB
    source = tmp_path / "big.bin"
    source.write_bytes(data)
    monkeypatch.setattr(upload, "PART", 5 << 20)
    real = models.S3Backend.upload_part
    seen: list[int] = []

    def refuse_second(self: Any, bucket: str, upload_id: str, number: int, value: Any) -> Any:
        seen.append(int(number))
        assert _absent(s3, "big.bin")  # while parts go up, nothing is at the key
        if int(number) == 2:
            raise exceptions.InvalidPart()
        return real(self, bucket, upload_id, number, value)

    monkeypatch.setattr(models.S3Backend, "upload_part", refuse_second)
    with pytest.raises(RemoteError, match="refused the upload"):
        upload.upload(source, f"s3://{BUCKET}/big.bin")
    assert 2 in seen
    assert _absent(s3, "big.bin")
    assert not s3.list_multipart_uploads(Bucket=BUCKET).get("Uploads")
    monkeypatch.setattr(models.S3Backend, "upload_part", real)
    said: list[tuple[int, int]] = []
    sent = upload.upload(source, f"s3://{BUCKET}/big.bin", progress=lambda *a: said.append(a))
    assert sent == len(data)  # then it goes up whole, a part at a time
    assert said == [(min(n * (5 << 20), len(data)), len(data)) for n in range(1, 5)]
    assert _sha(_body(s3, "big.bin")) == _sha(data)
    assert not s3.list_multipart_uploads(Bucket=BUCKET).get("Uploads")


def test_ctrl_c_while_uploading_aborts_the_multipart_upload(
    endpoint: str, s3: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C lands while the file is read part after part (the first part already sent):
    the multipart upload is aborted, nothing is at the key."""
    from moto.s3 import models

    source = tmp_path / "stopped.bin"
    source.write_bytes(os.urandom(4 * (5 << 20)))
    monkeypatch.setattr(upload, "PART", 5 << 20)
    started: list[str] = []
    real_create = models.S3Backend.create_multipart_upload

    def create(self: Any, *args: Any, **kwargs: Any) -> Any:
        started.append("upload")
        return real_create(self, *args, **kwargs)

    monkeypatch.setattr(models.S3Backend, "create_multipart_upload", create)
    real_open = Path.open

    class Interrupted:
        def __init__(self, handle: Any) -> None:
            self.handle, self.reads = handle, 0

        def read(self, size: int) -> bytes:
            self.reads += 1
            if self.reads == 3:
                raise KeyboardInterrupt
            data: bytes = self.handle.read(size)
            return data

        def __enter__(self) -> Interrupted:
            return self

        def __exit__(self, *exc: object) -> None:
            self.handle.close()

    def opened(self: Path, *args: Any, **kwargs: Any) -> Any:
        handle = real_open(self, *args, **kwargs)
        return Interrupted(handle) if self == source else handle

    monkeypatch.setattr(Path, "open", opened)
    with pytest.raises(KeyboardInterrupt):
        upload.upload(source, f"s3://{BUCKET}/stopped.bin")
    assert started  # it was a multipart upload, under way
    assert _absent(s3, "stopped.bin")
    assert not s3.list_multipart_uploads(Bucket=BUCKET).get("Uploads")


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_uploading_leaves_nothing(
    endpoint: str, s3: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, signum: int
) -> None:
    """`nanorec repack -o s3://...` in a child process, stopped by a signal while it still
    hands parts to the upload: the server holds every part until the signal is sent (no
    timing), so the child waits with `PARALLEL` parts in flight and the next one read. Exit
    status 130 or 143, no object, the multipart upload aborted, no local file left."""
    import subprocess
    import sys
    import threading

    from moto.s3 import models

    from nanorec.archive.writer import ArchiveWriter

    big = tmp_path / "big.nanover.zip"
    with ArchiveWriter(big, source_format="t") as writer:  # > PARALLEL + 1 parts, not deflated
        for i in range((upload.PARALLEL + 2) * upload.PART // 500_000):
            writer.write({"m": os.urandom(500_000)}, timestamp_us=i)
    arrived, sent = threading.Semaphore(0), threading.Event()
    real = models.S3Backend.upload_part

    def held(self: Any, *args: Any) -> Any:
        arrived.release()
        sent.wait(60)
        return real(self, *args)

    monkeypatch.setattr(models.S3Backend, "upload_part", held)
    key = f"signal-{signum}.nanover.zip"
    folder = tmp_path / "tmp"
    folder.mkdir()
    command = ["repack", str(big), "-o", f"s3://{BUCKET}/{key}", "--stored"]
    process = subprocess.Popen(
        [sys.executable, "-c", "from nanorec.cli import main; main()", *command],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "TMPDIR": str(folder)},
    )
    try:
        for _ in range(upload.PARALLEL):
            assert arrived.acquire(timeout=120), "the parts never came"
        process.send_signal(signum)
    finally:
        sent.set()
        _, stderr = process.communicate(timeout=120)
    assert process.returncode in (128 + signum, 130), stderr
    assert _absent(s3, key)
    assert not s3.list_multipart_uploads(Bucket=BUCKET).get("Uploads")
    assert not list(folder.iterdir())


def test_an_error_while_writing_uploads_nothing_and_removes_the_local_file(
    endpoint: str, s3: Any
) -> None:
    before = _temporaries()
    with pytest.raises(KeyboardInterrupt), upload.staged(f"s3://{BUCKET}/never.bin") as path:
        path.write_bytes(b"half")
        raise KeyboardInterrupt
    assert _absent(s3, "never.bin")
    _no_temporary_left(before)


def test_a_folder_output_is_refused(endpoint: str, s3: Any) -> None:
    before = _temporaries()
    with (
        pytest.raises(UnsupportedError, match="writes a folder"),
        upload.staged(f"s3://{BUCKET}/bag") as path,
    ):
        path.mkdir()
        (path / "metadata.yaml").write_text("x")
    assert _absent(s3, "bag") and _absent(s3, "bag/metadata.yaml")
    _no_temporary_left(before)


def test_a_bag_folder_export_is_refused_naming_the_verb(endpoint: str, s3: Any) -> None:
    before = _temporaries()
    url = f"s3://{BUCKET}/bag"
    done = runner.invoke(app, ["export", str(SAMPLES / "ros2-robot"), "-o", url])
    assert done.exit_code == 2 and not done.stdout
    assert done.stderr.startswith(f"nanorec: {url}: nanorec export writes a folder here")
    assert done.stderr.count("\n") == 1
    assert not s3.list_objects_v2(Bucket=BUCKET, Prefix="bag").get("Contents")
    _no_temporary_left(before)


def test_an_object_appearing_while_uploading_is_not_replaced(
    endpoint: str, s3: Any, tmp_path: Path
) -> None:
    source = tmp_path / "late.bin"
    source.write_bytes(b"ours")
    with pytest.raises(OutputExistsError), upload.staged(f"s3://{BUCKET}/late.bin") as path:
        shutil.copy(source, path)
        put_object(endpoint, BUCKET, "late.bin", b"theirs")
    assert _body(s3, "late.bin") == b"theirs"


def test_export_from_s3_to_s3_equals_the_native_file(endpoint: str, s3: Any, local: Path) -> None:
    put_object(endpoint, BUCKET, "in/carla.nanover.zip", local.read_bytes())
    url = f"s3://{BUCKET}/back/carla.log"
    done = runner.invoke(app, ["export", f"s3://{BUCKET}/in/carla.nanover.zip", "-o", url])
    assert done.exit_code == 0, done.output
    assert _body(s3, "back/carla.log") == CARLA.read_bytes()
    assert done.stdout.startswith(f"{url}: ") and "identical to the source" in done.stdout
    again = runner.invoke(app, ["export", f"s3://{BUCKET}/in/carla.nanover.zip", "-o", url])
    assert again.exit_code == 2 and "exists; pass --force" in again.stderr


def test_mcap_export_and_plot_to_s3(endpoint: str, s3: Any, local: Path, tmp_path: Path) -> None:
    """Other outputs of export and plot (the core's generic bodies and a format's hook) go
    through the same staging: the MCAP equals the local export (of the archive: from a
    native file the MCAP's metadata names the temporary archive it was converted into)."""
    pytest.importorskip("mcap")
    here = tmp_path / "carla.mcap"
    done = runner.invoke(app, ["export", str(local), "-F", "mcap", "-o", str(here)])
    assert done.exit_code == 0, done.output
    url = f"s3://{BUCKET}/carla.mcap"
    done = runner.invoke(app, ["export", str(local), "-F", "mcap", "-o", url])
    assert done.exit_code == 0, done.output
    assert _body(s3, "carla.mcap") == here.read_bytes()
    pytest.importorskip("matplotlib")
    done = runner.invoke(app, ["plot", str(CARLA), "-o", f"s3://{BUCKET}/carla.png"])
    assert done.exit_code == 0, done.output
    assert _body(s3, "carla.png").startswith(b"\x89PNG")
    assert done.stdout.startswith(f"s3://{BUCKET}/carla.png: ")


def test_an_output_naming_the_input_is_refused(endpoint: str, s3: Any, local: Path) -> None:
    put_object(endpoint, BUCKET, "self.nanover.zip", local.read_bytes())
    url = f"s3://{BUCKET}/self.nanover.zip"
    done = runner.invoke(app, ["export", url, "-o", url, "--force"])
    assert done.exit_code == 2
    assert done.stderr == f"nanorec: {url} is the input: refusing to write over it\n"
    assert _body(s3, "self.nanover.zip") == local.read_bytes()


def test_repack_to_s3(endpoint: str, s3: Any, local: Path, tmp_path: Path) -> None:
    here = tmp_path / "stored.nanover.zip"
    done = runner.invoke(app, ["repack", str(local), "-o", str(here), "--stored"])
    assert done.exit_code == 0, done.output
    url = f"s3://{BUCKET}/stored.nanover.zip"
    done = runner.invoke(app, ["repack", str(local), "-o", url, "--stored"])
    assert done.exit_code == 0, done.output
    assert _body(s3, "stored.nanover.zip") == here.read_bytes()
    assert done.stdout.startswith(f"{url}: ")


@pytest.mark.slow
def test_batch_to_a_prefix_writes_one_key_per_input(endpoint: str, s3: Any, tmp_path: Path) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    names = ["carla-0.9.15-town03.log", "pbstream-small.pbstream", "rosbag-robot-lz4.bag"]
    for name in names:
        shutil.copy(SAMPLES / name, inputs / name)
    here = tmp_path / "here"
    done = runner.invoke(app, ["convert", str(inputs), "-o", str(here)])
    assert done.exit_code == 0, done.output
    prefix = f"s3://{BUCKET}/batch/"
    done = runner.invoke(app, ["convert", str(inputs), "-o", prefix, "-j", "2"])
    assert done.exit_code == 0, done.output
    assert "3 converted" in done.stdout
    listed = s3.list_objects_v2(Bucket=BUCKET, Prefix="batch/")["Contents"]
    assert sorted(item["Key"] for item in listed) == [f"batch/{n}.nanover.zip" for n in names]
    for name in names:
        local = (here / f"{name}.nanover.zip").read_bytes()
        assert _body(s3, f"batch/{name}.nanover.zip") == local
    again = runner.invoke(app, ["convert", str(inputs), "-o", prefix])  # resumed: all there
    assert again.exit_code == 0 and "0 converted" in again.stdout and "3 skipped" in again.stdout


def test_one_file_into_a_prefix_is_a_key_under_it(endpoint: str, s3: Any, local: Path) -> None:
    done = runner.invoke(app, ["convert", str(CARLA), "-o", f"s3://{BUCKET}/into/"])
    assert done.exit_code == 0, done.output
    assert _body(s3, f"into/{CARLA.name}.nanover.zip") == local.read_bytes()


def test_a_missing_bucket_is_one_line(endpoint: str) -> None:
    before = _temporaries()
    done = runner.invoke(app, ["convert", str(CARLA), "-o", "s3://no-such-bucket/x.nanover.zip"])
    assert done.exit_code == 2
    assert done.stderr.startswith("nanorec: s3://no-such-bucket/x.nanover.zip: ")
    assert done.stderr.count("\n") == 1
    _no_temporary_left(before)


def test_an_endpoint_down_is_one_line(
    endpoint: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import socket

    with socket.socket() as unused:  # a port nothing listens on
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setattr(upload, "RETRY", {"max_retries": 0, "retry_timeout": timedelta(seconds=5)})
    done = runner.invoke(app, ["convert", str(CARLA), "-o", f"s3://{BUCKET}/down.nanover.zip"])
    assert done.exit_code == 2
    assert done.stderr.startswith(f"nanorec: s3://{BUCKET}/down.nanover.zip: ")
    assert done.stderr.count("\n") == 1


def test_no_credentials_is_one_line(endpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without keys object_store asks the instance's metadata endpoint, which is not there
    (moto itself takes any keys: a wrong one cannot be told from a right one here)."""
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    monkeypatch.setattr(upload, "RETRY", {"max_retries": 0, "retry_timeout": timedelta(seconds=5)})
    url = f"s3://{BUCKET}/denied.nanover.zip"
    before = _temporaries()
    done = runner.invoke(app, ["convert", str(CARLA), "-o", url])
    assert done.exit_code == 2, done.output
    assert done.stderr.startswith(f"nanorec: {url}: ") and done.stderr.count("\n") == 1
    assert not done.stdout  # refused before converting
    _no_temporary_left(before)


def test_a_forbidden_head_says_that_force_writes_without_asking(
    endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """S3 answers 403 to a HEAD of a missing key when the credentials may not list the
    bucket: the line says so, and --force (which asks nothing) still writes."""
    import obstore
    from obstore.exceptions import PermissionDeniedError

    def forbidden(store: Any, path: str) -> Any:
        raise PermissionDeniedError("Error performing HEAD: 403 Forbidden")

    monkeypatch.setattr(obstore, "head", forbidden)
    url = f"s3://{BUCKET}/forbidden.nanover.zip"
    done = runner.invoke(app, ["convert", str(CARLA), "-o", url])
    assert done.exit_code == 2 and done.stderr.count("\n") == 1
    assert "403 Forbidden" in done.stderr and "--force writes without asking" in done.stderr
    forced = runner.invoke(app, ["convert", str(CARLA), "-o", url, "--force"])
    assert forced.exit_code == 0, forced.output


def test_a_url_naming_no_object_is_one_line() -> None:
    done = runner.invoke(app, ["convert", str(CARLA), "-o", "s3://bucket-only"])
    assert done.exit_code == 2
    assert done.stderr == "nanorec: s3://bucket-only names no object (expected " + (
        "SCHEME://HOST/.../NAME)\n"
    )


def test_an_http_output_is_refused() -> None:
    done = runner.invoke(app, ["convert", str(CARLA), "-o", "https://example.com/x.nanover.zip"])
    assert done.exit_code == 2
    assert "goes to object storage" in done.stderr and done.stderr.count("\n") == 1


def test_a_url_path_keeps_its_url_across_processes() -> None:
    path = url_path("s3://bucket/a/b.nanover.zip")
    copy = pickle.loads(pickle.dumps(path))
    assert str(copy) == "s3://bucket/a/b.nanover.zip" and copy.name == "b.nanover.zip"
    assert registry  # the registry is what the batch's workers convert with
