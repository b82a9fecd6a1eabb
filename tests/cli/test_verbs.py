"""The format-neutral verbs: routing, one vocabulary, one-line errors, safe outputs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nanorec import verify
from nanorec.archive.reader import ArchiveReader
from nanorec.cli import _register, app
from tests.conftest import REALDATA, SAMPLES, make_runner

SAMPLE = SAMPLES / "carla-0.9.16-town03.log"
NANOVER = REALDATA / "nanover" / "nanotube-example-recording.nanover.zip"
runner = make_runner()


def _run(*args: object) -> tuple[int, str, str]:
    _register()
    result = runner.invoke(app, [str(arg) for arg in args])
    assert isinstance(result.exception, SystemExit | None), result.exception
    return result.exit_code, result.stdout, result.stderr


def _one_line_error(code: int, err: str) -> None:
    assert code == 2 and err.startswith("nanorec: ") and err.count("\n") == 1, err


def test_help_reads_like_one_tool() -> None:
    code, out, _ = _run("--help")
    assert code == 0
    rows = out.split("Commands:")[1].splitlines()
    listed = [line.split()[0] for line in rows if line[2:3].strip()]  # not a wrapped line
    assert listed[:11] == [
        *("convert", "export", "info", "cat", "play", "plot", "view", "verify", "recover"),
        *("repack", "roundtrip"),
    ]
    assert "carla" in listed[11:]
    assert not [x for x in rows if x.rstrip().endswith("...")]  # whole sentences, wrapped


@pytest.mark.slow
def test_bare_nanorec_and_h_print_the_usage(capsys: pytest.CaptureFixture[str]) -> None:
    from nanorec.cli import main

    with pytest.raises(SystemExit) as exited:
        main([])
    assert exited.value.code == 0 and capsys.readouterr().out.startswith("Usage: nanorec")
    assert _run("-h") == (0, _run("--help")[1], "")
    code, out, _ = _run("carla", "-h")
    assert code == 0 and not [x for x in out.splitlines()[1:] if x.rstrip().endswith("...")]
    code, out, _ = _run("convert", "-h")
    assert out.startswith("Usage: nanorec convert [OPTIONS] SOURCES...\n")
    assert "<list[" not in out and "{" not in out


def test_a_verb_goes_to_the_formats_own_command(tmp_path: Path) -> None:
    code, out, _ = _run("info", SAMPLE)
    assert code == 0 and out.startswith("Version: 1\nMap: Town03\n")  # CARLA's own text
    assert _run("carla", "info", SAMPLE)[1] == out
    assert _run("collisions", SAMPLE)[1] == _run("carla", "collisions", SAMPLE)[1]  # an alias


@pytest.mark.parametrize(
    "args",
    [
        ["export", SAMPLE, "-o", "{tmp}/x.log", "--start", "nan"],
        ["export", SAMPLE, "-o", "{tmp}/x.log", "--end", "inf"],
        ["export", SAMPLE, "-o", "{tmp}/x.log", "--start", "-1"],
        ["export", SAMPLE, "-o", "{tmp}/x.log", "--start", "5", "--end", "2"],
        ["export", SAMPLE, "-o", "{tmp}/x.log", "--duration", "0"],
        ["export", SAMPLE, "-o", "{tmp}/x.log", "--messages", "a:b"],
        ["cat", SAMPLE, "-t", "pos", "--start", "nan"],
        ["cat", SAMPLE, "-t", "pos", "--end", "-inf"],
        ["play", SAMPLE, "--rate", "nan"],
        ["play", SAMPLE, "--duration", "inf"],
        ["play", SAMPLE, "--start", "nan"],
        ["blocked", SAMPLE, "--min-time", "nan"],
        ["blocked", SAMPLE, "--min-distance", "-5"],
        ["plot", SAMPLE, "-o", "{tmp}/p.png", "--start", "inf"],
    ],
)
def test_every_numeric_option_is_checked(args: list[object], tmp_path: Path) -> None:
    filled = [str(a).replace("{tmp}", str(tmp_path)) for a in args]
    _one_line_error(*_run(*filled)[::2])


def test_inputs_that_are_not_recordings(tmp_path: Path) -> None:
    png = tmp_path / "picture.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(200))
    noise = tmp_path / "noise.log"
    noise.write_bytes(os.urandom(3000))
    for path in (png, noise):
        for verb in ("info", "verify", "convert", "cat"):
            code, _, err = _run(verb, path)
            _one_line_error(code, err)
            assert "not a recording nanorec knows" in err and "cut short" not in err
    code, _, err = _run("info", tmp_path / "missing.log")
    _one_line_error(code, err)
    assert "no such file" in err
    (tmp_path / "empty.log").write_bytes(b"")
    code, _, err = _run("verify", tmp_path / "empty.log")
    _one_line_error(code, err)
    assert "empty" in err


def test_convert_never_writes_over_its_input_and_says_what_an_archive_is(
    tmp_path: Path,
) -> None:
    source = tmp_path / "run.log"
    source.write_bytes(SAMPLE.read_bytes())
    code, _, err = _run("convert", source, "-o", source, "--force")
    _one_line_error(code, err)
    assert "is the input" in err and source.read_bytes() == SAMPLE.read_bytes()
    archive = tmp_path / "run.nanover.zip"
    assert _run("convert", source, "-o", archive)[0] == 0
    code, _, err = _run("convert", archive)
    _one_line_error(code, err)
    assert "already an archive" in err
    code, _, err = _run("convert", source, "-o", archive)
    _one_line_error(code, err)
    assert "--force" in err
    code, _, err = _run("convert", source, "-o", tmp_path / "nodir" / "x.zip")
    _one_line_error(code, err)
    assert "nodir does not exist" in err and ".partial" not in err


def test_native_files_verify_and_export(tmp_path: Path) -> None:
    code, out, _ = _run("verify", SAMPLE, "--json")
    report = json.loads(out)
    assert code == 0 and report["ok"] and report["kind"] == "carla"
    code, out, _ = _run("export", SAMPLE, "-o", tmp_path / "same.log")
    assert code == 0 and "identical to the source" in out
    assert (tmp_path / "same.log").read_bytes() == SAMPLE.read_bytes()


def test_plain_archives_are_first_class(tmp_path: Path) -> None:
    if not NANOVER.exists():
        pytest.skip("../shared/realdata is not present")
    code, out, _ = _run("info", NANOVER, "--json")
    summary = json.loads(out)
    assert code == 0 and summary["messages"] == 930 and summary["format"] == "archive"
    code, out, _ = _run("cat", NANOVER, "--messages", "0:3")
    assert code == 0 and len(out.splitlines()) == 3
    assert _run("verify", NANOVER)[0] == 0
    code, out, _ = _run("play", NANOVER, "--immediate", "--end", "0.1")
    assert code == 0 and all(json.loads(line)["time"] <= 0.1 for line in out.splitlines())
    # a cut of a NanoVer recording is a NanoVer recording of the selected messages
    cut = tmp_path / "cut.nanover.zip"
    code, out, _ = _run("export", NANOVER, "-o", cut, "--messages", "2:7")
    assert code == 0 and "5 messages" in out
    with ArchiveReader(NANOVER) as whole, ArchiveReader(cut) as part:
        assert [part.read(i) for i in range(5)] == [whole.read(i) for i in range(2, 7)]
        kept = [{k: v for k, v in part.metadata(i).items() if k != "crc"} for i in range(5)]
        assert kept == [whole.metadata(i) for i in range(2, 7)]  # our writer adds a CRC
    code, _, err = _run("export", NANOVER, "-o", cut, "--force", "--start", "1000")
    _one_line_error(code, err)
    assert "--start 1000 selects no message" in err


@pytest.mark.slow
def test_sigterm_during_convert_leaves_nothing(tmp_path: Path) -> None:
    from nanorec.converters.carla.generate import generate_to

    source = tmp_path / "big.log"
    generate_to(source, "0.9.16", target_bytes=40_000_000)
    out = tmp_path / "big.nanover.zip"
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from nanorec.cli import main; main()",
            "convert",
            str(source),
            "-o",
            str(out),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    partial = tmp_path / ".big.nanover.zip.partial"
    deadline = time.monotonic() + 30
    while not partial.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=60)
    if process.returncode == 0:
        pytest.skip("the conversion finished before the signal")
    assert process.returncode == 128 + signal.SIGTERM
    left = sorted(p.name for p in tmp_path.iterdir())
    if left == ["big.log", "big.nanover.zip"]:  # the signal came just after publishing
        assert verify(out).ok
    else:
        assert left == ["big.log"]


@pytest.mark.slow
def test_one_wording_for_missing_and_empty_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    for verb in ("info", "collisions", "blocked", "cat", "play", "verify", "export", "convert"):
        extra = ["-o", str(tmp_path / "out")] if verb == "export" else []
        for path, words in ((empty, "the file is empty"), (tmp_path / "nope.log", "no such file")):
            code, _, err = _run(verb, path, *extra)
            _one_line_error(code, err)
            assert err == f"nanorec: {path}: {words}\n", (verb, err)


def test_a_warning_is_one_clean_line(tmp_path: Path) -> None:
    """A damaged record opens with a warning: on the command line it is one
    `nanorec: warning: ...` line on stderr, not Python's (source path, code line)."""
    data = bytearray((SAMPLES / "pbstream-small.pbstream").read_bytes())
    data[600] ^= 0xFF  # inside a gzip member: a damaged record, kept verbatim
    source = tmp_path / "damaged.pbstream"
    source.write_bytes(data)
    done = subprocess.run(
        [sys.executable, "-c", "from nanorec.cli import main; main()", "info", str(source)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 and "records:" in done.stdout
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("nanorec: warning: "), done.stderr
    assert "UserWarning" not in lines[0] and ".py:" not in lines[0]


def test_a_verbs_help_shows_the_formats_options() -> None:
    """The verb's help lists every format's options (one command, issue 35), and ends with
    what each format adds (a bag's --freq, pbstream's --trajectory, a bag's export form
    `indexed`); the format's group gives its own help and options only."""
    bag = SAMPLES / "rosbag-robot.bag"
    code, out, _ = _run("info", bag, "--help")
    assert code == 0 and out.startswith("Usage: nanorec info") and "--freq" in out
    code, out, _ = _run("rosbag", "info", "--help")
    assert code == 0 and "rosbag info" in out and "--freq" in out and "--show-all" not in out
    code, out, _ = _run("info", "--help")
    assert code == 0 and "rosbag: --freq" in out.replace("\n", " ")
    code, out, _ = _run("export", "--help")
    flat = " ".join(out.split())
    assert "--trajectory" in flat and "rosbag: --format indexed" in flat
    code, out, _ = _run("play", "--help")
    assert "--topics" in out and "--clock" in out and "--skip-empty" in out
