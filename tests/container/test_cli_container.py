"""`nanorec verify` and `nanorec recover`: output and exit status (0 ok, 1 problem, 2 bad input)."""

from __future__ import annotations

from pathlib import Path

from nanorec.archive.writer import ArchiveWriter, partial_path
from nanorec.cli import _register, app
from tests.conftest import make_runner

from .helpers import sample_messages, write_archive

_register()
runner = make_runner()


def test_verify_ok(tmp_path: Path) -> None:
    path = write_archive(tmp_path / "a.nanover.zip", sample_messages(5))
    result = runner.invoke(app, ["verify", str(path)])
    assert result.exit_code == 0, result.output
    assert "OK (5 messages" in result.stdout
    quiet = runner.invoke(app, ["verify", "-q", str(path)])
    assert quiet.exit_code == 0
    assert quiet.stdout == ""


def test_verify_names_the_problem(tmp_path: Path) -> None:
    path = write_archive(tmp_path / "a.nanover.zip", sample_messages(5))
    path.write_bytes(path.read_bytes()[:-5])
    result = runner.invoke(app, ["verify", str(path)])
    assert result.exit_code == 1
    assert "[truncated]" in result.stderr


def test_verify_unreadable_input(tmp_path: Path) -> None:
    result = runner.invoke(app, ["verify", str(tmp_path / "missing.zip")])
    assert result.exit_code == 2
    assert "no such file" in result.stderr


def test_recover(tmp_path: Path) -> None:
    final = tmp_path / "a.nanover.zip"
    writer = ArchiveWriter(final)
    for i, message in enumerate(sample_messages(30)):
        writer.write(message, timestamp_us=i)
    writer.flush()  # then "crash": the partial file stays as it is
    out = tmp_path / "out.nanover.zip"
    result = runner.invoke(app, ["recover", str(partial_path(final)), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "30 messages recovered" in result.stdout
    assert runner.invoke(app, ["verify", str(out)]).exit_code == 0
    again = runner.invoke(app, ["recover", str(partial_path(final)), "-o", str(out)])
    assert again.exit_code == 2
    assert "--force" in again.stderr
    forced = runner.invoke(app, ["recover", str(partial_path(final)), "-o", str(out), "--force"])
    assert forced.exit_code == 0
    writer.abort()


def test_recover_nothing_to_recover(tmp_path: Path) -> None:
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"hello" * 20)
    result = runner.invoke(app, ["recover", str(junk), "-o", str(tmp_path / "o.zip")])
    assert result.exit_code == 2
    assert result.stderr.startswith("nanorec: ")


def test_recover_a_native_recording_says_to_convert(tmp_path: Path) -> None:
    """A recording that was never an archive (a CARLA log, a ROS bag) is not something to
    recover: the one line says so and names the command that makes an archive of it."""
    from tests.conftest import SAMPLES

    for name in ("carla-0.9.16-town03.log", "rosbag-robot.bag", "pbstream-small.pbstream"):
        result = runner.invoke(app, ["recover", str(SAMPLES / name), "-o", str(tmp_path / "o")])
        assert result.exit_code == 2, result.output
        lines = result.stderr.splitlines()
        assert len(lines) == 1, result.stderr
        assert "not a nanorec archive" in lines[0]
        assert "nanorec convert" in lines[0]
        assert "central directory" not in lines[0]
        assert not (tmp_path / "o").exists()
