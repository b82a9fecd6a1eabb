"""Verbs are the core's (issue 35 item 1): one command per verb with every format's options
flattened in, one call to the input's format, no command line rewritten; and the
reproductions of the issue, each failing before."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nanorec.archive.reader import ArchiveReader
from nanorec.cli import _register, app
from tests.conftest import SAMPLES, make_runner

CARLA = SAMPLES / "carla-0.9.15-crash-town05.log"
BAG = SAMPLES / "rosbag-robot.bag"
ROS2 = SAMPLES / "ros2-robot"
#: A storage file needing no extra (the folder's MCAP has zstd chunks: `[ros]`).
ROS2_PLAIN = SAMPLES / "ros2-robot.db3"
PBSTREAM = SAMPLES / "pbstream-small.pbstream"
runner = make_runner()


def _run(*args: object) -> tuple[int, str, str]:
    _register()
    result = runner.invoke(app, [str(arg) for arg in args])
    assert isinstance(result.exception, SystemExit | None), result.exception
    return result.exit_code, result.stdout, result.stderr


def _one_line_error(code: int, err: str, says: str) -> None:
    assert code == 2 and err.startswith("nanorec: ") and err.count("\n") == 1, err
    assert says in err, err


# -- the reproductions ------------------------------------------------------------------------


def test_convert_takes_its_help_example_with_one_input(tmp_path: Path) -> None:
    """`convert --help`'s own example, `-O family=0.9.15`, with one input (it was handed to
    `carla convert`, which had no -O: "No such option: -O")."""
    out = tmp_path / "a.nanover.zip"
    code, _, err = _run("convert", CARLA, "-O", "family=0.9.15", "-o", out, "--keep-going")
    assert code == 0, err
    with ArchiveReader(out) as reader:
        assert (reader.description or {}).get("source_format") == "carla"


def test_convert_jobs_and_from_with_one_input(tmp_path: Path) -> None:
    code, _, err = _run("convert", CARLA, "--jobs", "2", "-o", tmp_path / "j.zip", "--keep-going")
    assert code == 0, err
    code, _, err = _run(
        "convert", CARLA, "--from", "carla", "-o", tmp_path / "f.zip", "--keep-going"
    )
    assert code == 0, err
    assert (tmp_path / "j.zip").read_bytes() == (tmp_path / "f.zip").read_bytes()


def test_a_bad_o_option_of_a_batch_is_one_line(tmp_path: Path) -> None:
    """`convert A B -O 1` raised its UsageError outside the command's boundary (a traceback
    under `nanorec`): found by the contract's every-option check."""
    code, _, err = _run("convert", CARLA, CARLA, "-O", "1", "-o", tmp_path)
    _one_line_error(code, err, "--option takes KEY=VALUE")


def test_a_format_option_of_convert_is_its_o_option(tmp_path: Path) -> None:
    """CARLA's `--family` (its former `carla convert`'s) is `-O family=`: the same archive."""
    for name, args in (("o", ("-O", "family=0.9.15")), ("family", ("--family", "0.9.15"))):
        code, _, err = _run("convert", CARLA, *args, "-o", tmp_path / name, "--keep-going")
        assert code == 0, err
    assert (tmp_path / "o").read_bytes() == (tmp_path / "family").read_bytes()


def test_a_missing_file_is_said_before_a_format_option(tmp_path: Path) -> None:
    """`info missing.bag --freq` said "No such option: --freq" (no file: no format to hand
    the command line to)."""
    missing = tmp_path / "missing.bag"
    code, _, err = _run("info", missing, "--freq")
    _one_line_error(code, err, f"{missing}: no such file")


def test_another_formats_option_is_refused_in_one_line() -> None:
    code, _, err = _run("info", CARLA, "--freq")
    _one_line_error(code, err, "--freq is an option of ROS1 bag files")
    assert f"{CARLA} is a CARLA recorder file" in err
    code, _, err = _run("cat", BAG, "--actor", "3")
    _one_line_error(code, err, "--actor is an option of CARLA recorder files")


# -- one command per verb ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("verb", "sample", "args"),
    [
        ("info", BAG, ("--freq",)),
        ("info", ROS2, ("--distro", "humble")),
        ("info", CARLA, ()),
        ("info", PBSTREAM, ()),
        ("cat", BAG, ("--messages", "0:3")),
        ("play", BAG, ("--immediate", "--messages", "0:3", "--quiet")),
        ("cat", PBSTREAM, ("--type", "trajectory", "--format", "csv")),
    ],
)
def test_a_formats_group_is_the_verb_with_the_format_pinned(
    verb: str, sample: Path, args: tuple[str, ...]
) -> None:
    """`nanorec rosbag info x.bag` is `nanorec info x.bag`: one command, the format pinned."""
    from nanorec.cli.dispatch import format_of

    name = format_of(sample)
    assert name is not None
    assert _run(name, verb, sample, *args) == _run(verb, sample, *args)


def test_a_pinned_verb_answers_as_its_format_on_another_formats_file() -> None:
    code, _, err = _run("pbstream", "info", BAG)
    _one_line_error(code, err, "is not a pbstream recording")


def test_the_verb_lists_every_formats_options() -> None:
    code, out, _ = _run("info", "--help")
    assert code == 0
    for spelling in ("--json", "--freq", "--yaml", "--tz", "--show-all", "--pre-2024-fraction"):
        assert spelling in out, spelling
    code, out, _ = _run("rosbag", "info", "--help")
    assert "--freq" in out and "--show-all" not in out  # only the pinned format's


def test_a_format_respelling_of_a_common_option_is_that_option() -> None:
    """ros2 bag play's `--start-offset` is `--start`, rosbag's `--topics` adds to `--topic`."""
    common = _run("play", ROS2_PLAIN, "--immediate", "--quiet", "--start", "0.5")
    assert common[0] == 0 and common == _run(
        "play", ROS2_PLAIN, "--immediate", "--quiet", "--start-offset", "0.5"
    )
    topic = json.loads(_run("cat", BAG, "--messages", "0:1")[1].splitlines()[0])["topic"]
    assert _run("cat", BAG, "--topic", topic) == _run("cat", BAG, "--topics", topic)


def test_building_a_verb_imports_no_formats_commands() -> None:
    """The formats' options come from their light declarations: `info --help` imports no
    format's commands (nor numpy)."""
    probe = (
        "import sys\n"
        "from nanorec.cli import main\n"
        "try:\n    main(['info', '--help'])\nexcept SystemExit:\n    pass\n"
        "print([m for m in sys.modules if m.endswith('.cli') and 'converters' in m], "
        "'numpy' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, check=True
    )
    assert done.stdout.splitlines()[-1] == "[] False"


def test_the_format_of_an_archive_is_read_once_while_it_is_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Routing a command and running its verb both ask the input's format: an archive is
    opened once for both (an open of a 1 GB archive is ~45 ms of `nanorec view`'s first
    paint), and again once the file changed."""
    from nanorec import registry
    from nanorec.archive import reader
    from nanorec.cli.dispatch import format_of

    opened: list[object] = []

    class Counted(ArchiveReader):
        def __init__(self, path: object, **options: object) -> None:
            opened.append(path)
            super().__init__(path, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(reader, "ArchiveReader", Counted)
    archive = tmp_path / "recording.nanover.zip"
    registry.get("carla").convert(CARLA, archive)
    assert format_of(archive) == format_of(archive) == "carla"
    assert len(opened) == 1
    archive.unlink()
    registry.get("pbstream").convert(PBSTREAM, archive)
    assert format_of(archive) == format_of(archive) == "pbstream"
    assert len(opened) == 2
    assert format_of(ROS2) == "ros2"  # a folder: sniffed each time, never opened
    assert len(opened) == 2
