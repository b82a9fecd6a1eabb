"""The same input converted twice gives byte-identical archives: no wall-clock time is
written unless SOURCE_DATE_EPOCH asks for one (reproducible-builds.org's convention), and
every zip member carries the fixed 1980 date. And `pip install "nanorec[all]"` means every
user-facing extra."""

from __future__ import annotations

import itertools
import subprocess
import sys
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from nanorec import ArchiveReader, registry
from nanorec.archive.writer import ArchiveWriter, partial_path
from nanorec.errors import UsageError
from nanorec.maintain.verify import verify
from tests.conftest import REPO, SAMPLES

#: One sample of each format (the crashed bag: its cut tail is kept verbatim too).
FORMAT_SAMPLES = (
    "carla-0.9.16-town03.log",
    "carla-0.9.15-crash-town05.log",
    "rosbag-robot-lz4.bag",
    "rosbag-crashed.bag.active",
    "pbstream-small.pbstream",
    "pbstream-legacy-small.pbstream",
)


@pytest.mark.parametrize("name", FORMAT_SAMPLES)
def test_converting_twice_gives_the_same_bytes(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if "lz4" in name:
        pytest.importorskip("lz4")
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    source = SAMPLES / name
    first, second = tmp_path / "first.nanover.zip", tmp_path / "second.nanover.zip"
    converter = registry.for_native(source)
    converter.convert(source, first)
    converter.convert(source, second)
    assert first.read_bytes() == second.read_bytes()
    with ArchiveReader(first) as reader:
        assert reader.description is not None
        assert reader.description["created_utc"] is None  # no wall clock in the bytes
    with zipfile.ZipFile(first) as archive:
        assert {info.date_time for info in archive.infolist()} == {(1980, 1, 1, 0, 0, 0)}


#: Converts argv[1] to argv[2] in a process where the `isal` package cannot be imported
#: when argv[3] says "hidden" (as on a plain install without the `fast` extra).
_CONVERT = """
import sys
class Hidden:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "isal" and sys.argv[3] == "hidden":
            raise ImportError(f"No module named {name!r}")
sys.meta_path.insert(0, Hidden())
from pathlib import Path
from nanorec import registry
from nanorec.archive import deflate
assert (deflate.isal_zlib is None) == (sys.argv[3] == "hidden")
source = Path(sys.argv[1])
registry.for_native(source).convert(source, Path(sys.argv[2]))
"""


@pytest.mark.parametrize("name", ["carla-0.9.16-town03.log", "pbstream-small.pbstream"])
def test_the_same_bytes_whatever_is_installed(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ISA-L (the `fast` extra) deflates other bytes than zlib: it is only used to inflate
    unless `NANOREC_DEFLATE=isal` asks for it, so installing it changes no archive."""
    pytest.importorskip("isal")
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    monkeypatch.delenv("NANOREC_DEFLATE", raising=False)
    outputs = {}
    for state in ("installed", "hidden"):
        outputs[state] = tmp_path / f"{state}.nanover.zip"
        command = [sys.executable, "-c", _CONVERT, str(SAMPLES / name), str(outputs[state])]
        subprocess.run([*command, state], cwd=REPO, check=True, timeout=300)
    assert outputs["installed"].read_bytes() == outputs["hidden"].read_bytes()
    asked = tmp_path / "asked.nanover.zip"
    monkeypatch.setenv("NANOREC_DEFLATE", "isal")
    command = [sys.executable, "-c", _CONVERT, str(SAMPLES / name), str(asked), "installed"]
    subprocess.run(command, cwd=REPO, check=True, timeout=300)
    assert asked.read_bytes() != outputs["hidden"].read_bytes()  # asked for: ISA-L's bytes
    assert verify(asked).ok


@pytest.mark.parametrize("name", FORMAT_SAMPLES)
def test_a_slow_machine_gives_the_same_bytes(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer also flushes by time (each second): on a slow or loaded machine that must
    not move where compact blocks end. Here a second passes at every clock reading."""
    if "lz4" in name:
        pytest.importorskip("lz4")
    source = SAMPLES / name
    converter = registry.for_native(source)
    quick, slow = tmp_path / "quick.nanover.zip", tmp_path / "slow.nanover.zip"
    converter.convert(source, quick)
    clock = itertools.count(0.0, 1.5)
    monkeypatch.setattr(
        "nanorec.archive.message_stream.time", SimpleNamespace(monotonic=lambda: next(clock))
    )
    converter.convert(source, slow)
    assert next(clock) > 4  # a flush by time was due: the test tests something
    assert quick.read_bytes() == slow.read_bytes()


def test_source_date_epoch_is_the_creation_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    path = tmp_path / "a.nanover.zip"
    with ArchiveWriter(path) as writer:
        writer.write({"x": 1}, timestamp_us=0)
    with ArchiveReader(path) as reader:
        assert reader.description is not None
        assert reader.description["created_utc"] == "2023-11-14T22:13:20+00:00"


@pytest.mark.parametrize("value", ["soon", "1.5", "1e9"])
def test_a_malformed_source_date_epoch_is_refused_before_writing(
    value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", value)
    path = tmp_path / "a.nanover.zip"
    with pytest.raises(UsageError, match="SOURCE_DATE_EPOCH"):
        ArchiveWriter(path)
    assert not path.exists() and not partial_path(path).exists()


def test_the_all_extra_is_every_user_facing_extra() -> None:
    tomllib = pytest.importorskip("tomllib")
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    wanted = {
        req for name, reqs in extras.items() if name not in ("all", "dev", "bench") for req in reqs
    }
    assert set(extras["all"]) == wanted
