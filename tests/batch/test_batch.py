"""Batch conversion: many files, a process pool, resumable, never stopped by one file."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from nanorec.cli import _register, app
from nanorec.maintain.batch import plan, run_batch
from tests.conftest import SAMPLES, make_runner
from tests.converters.fake_plugin import MAGIC, sample

runner = make_runner()


def _tree(root: Path) -> Path:
    """Two folders, same file names, a foreign file, a cut file, a plug-in format's file."""
    (root / "a").mkdir(parents=True)
    (root / "b").mkdir()
    shutil.copy(SAMPLES / "carla-0.9.16-town03.log", root / "a" / "run.log")
    shutil.copy(SAMPLES / "carla-0.9.15-town03.log", root / "b" / "run.log")
    (root / "a" / "notes.txt").write_text("not a recording\n")
    data = (SAMPLES / "carla-0.9.15-crash-town05.log").read_bytes()
    (root / "b" / "cut.log").write_bytes(data[: len(data) // 2])
    sample(root / "b" / "x.fakelog")
    return root


def _convert(*args: object) -> tuple[int, str, str]:
    _register()
    result = runner.invoke(app, ["convert", *map(str, args)])
    assert isinstance(result.exception, SystemExit | None), result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_directory_converts_then_resumes(tmp_path: Path, jobs: int) -> None:
    source = _tree(tmp_path / "in")
    out = tmp_path / "out"
    code, stdout, _ = _convert(source, "-o", out, "-j", jobs)
    assert code == 0, stdout
    assert stdout.startswith("4 converted") and "0 failed" in stdout
    made = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.nanover.zip"))
    assert made == [
        "a/run.log.nanover.zip",
        "b/cut.log.nanover.zip",
        "b/run.log.nanover.zip",
        "b/x.fakelog.nanover.zip",
    ]
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*.zip")}
    code, stdout, _ = _convert(source, "-o", out, "-j", jobs)
    assert code == 0 and stdout.startswith("0 converted") and "4 skipped" in stdout
    assert before == {p: p.stat().st_mtime_ns for p in out.rglob("*.zip")}
    (source / "b" / "x.fakelog").write_bytes(MAGIC)  # changed since: converted again
    code, stdout, _ = _convert(source, "-o", out, "--force", "-j", jobs)
    assert code == 0 and stdout.startswith("4 converted")


def test_bad_files_are_reported_never_fatal(tmp_path: Path) -> None:
    source = _tree(tmp_path / "in")
    png = tmp_path / "picture.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    code, stdout, _ = _convert(source, png, tmp_path / "missing.log", "-o", tmp_path / "out")
    assert code == 1
    assert stdout.startswith("4 converted") and "2 failed" in stdout
    assert f"FAILED {png}: " in stdout and "not a recording nanorec knows" in stdout
    assert "No such file" in stdout


def test_a_killed_worker_fails_only_its_file(tmp_path: Path) -> None:
    source = _tree(tmp_path / "in")
    (source / "b" / "die.fakelog").write_bytes(MAGIC + b"0 a fine\n100000 die now\n")
    out = tmp_path / "out"
    jobs, failed = plan([source], out)
    outcomes = list(run_batch(jobs, workers=2))
    status = {o.job.source.name + "/" + o.job.source.parent.name: o.status for o in outcomes}
    assert failed == [] and status.pop("die.fakelog/b") == "failed"
    assert set(status.values()) == {"converted"} and len(status) == 4, [
        (o.job.source, o.problem) for o in outcomes
    ]
    leftovers = [p.name for p in out.rglob("*") if p.name.endswith(".partial")]
    assert leftovers == [] and not (out / "b" / "die.fakelog.nanover.zip").exists()


def test_several_sources_need_an_output_directory(tmp_path: Path) -> None:
    source = _tree(tmp_path / "in")
    code, _, err = _convert(source)
    assert code == 2 and "need -o OUTDIR" in err


def _twins(root: Path) -> Path:
    """a/rec.log and b/rec.log: two different recordings sharing a file name."""
    for folder, sample_name in (("a", "carla-0.9.16-town03.log"), ("b", "carla-0.9.15-town03.log")):
        (root / folder).mkdir(parents=True)
        shutil.copy(SAMPLES / sample_name, root / folder / "rec.log")
    return root


@pytest.mark.parametrize("as_dirs", [False, True])
def test_recordings_sharing_a_name_get_an_archive_each(tmp_path: Path, as_dirs: bool) -> None:
    root = _twins(tmp_path / "in")
    sources = [root / "a", root / "b"] if as_dirs else [root / "a/rec.log", root / "b/rec.log"]
    out = tmp_path / "out"
    code, stdout, _ = _convert(*sources, "-o", out, "-j", 2)
    assert code == 0 and stdout.startswith("2 converted") and "0 failed" in stdout, stdout
    made = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.nanover.zip"))
    assert made == ["a/rec.log.nanover.zip", "b/rec.log.nanover.zip"]
    code, stdout, _ = _convert(*sources, "-o", out, "-j", 2)
    assert code == 0 and stdout.startswith("0 converted") and "2 skipped" in stdout


def test_the_same_file_twice_is_one_job_and_a_clash_left_fails(tmp_path: Path) -> None:
    root = _twins(tmp_path / "in")
    jobs, failed = plan([root / "a", root / "a" / "rec.log", root / "a/../a/rec.log"], tmp_path)
    assert failed == [] and [job.source for job in jobs] == [root / "a" / "rec.log"]
    (root / "x" / "a").mkdir(parents=True)  # x/a/rec.log keeps its place as out/a/rec.log...
    shutil.copy(SAMPLES / "carla-0.9.15-crash-town05.log", root / "x" / "a" / "rec.log")
    jobs, failed = plan([root / "x", root / "a/rec.log", root / "b/rec.log"], tmp_path / "out")
    assert [job.output.relative_to(tmp_path / "out").as_posix() for job in jobs] == [
        "b/rec.log.nanover.zip"
    ]
    assert sorted(o.job.source.relative_to(root).as_posix() for o in failed) == [
        "a/rec.log",
        "x/a/rec.log",
    ]
    assert all("a/rec.log.nanover.zip" in o.problem for o in failed), failed


def test_files_passed_over_are_named(tmp_path: Path) -> None:
    source = _tree(tmp_path / "in")
    (source / "a" / "random.log").write_bytes(bytes(range(256)) * 8)
    (source / "a" / "empty.bag").write_bytes(b"")
    code, stdout, _ = _convert(source, "-o", tmp_path / "out", "-j", 1)
    assert code == 0 and stdout.startswith("4 converted"), stdout
    assert "2 ignored (not recordings)" in stdout and "0 failed" in stdout
    assert f"ignored {source / 'a' / 'random.log'}: " in stdout
    assert f"ignored {source / 'a' / 'empty.bag'}: " in stdout and "is empty" in stdout
    assert "notes.txt" not in stdout  # no converter's suffix: a folder holds other things


def test_inputs_without_a_recording_are_an_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    code, stdout, err = _convert(empty, "-o", tmp_path / "out")
    assert code == 2 and stdout == "" and err == f"nanorec: no recording found in {empty}\n"
    (empty / "random.log").write_bytes(b"\x00" * 100)
    (empty / "notes.txt").write_text("hello\n")
    code, stdout, err = _convert(empty, tmp_path / "nothing-*.bag", "-o", tmp_path / "out")
    assert code == 2 and stdout == "" and len(err.splitlines()) == 1, err
    assert "no recording found in" in err and f"(not recordings: {empty / 'random.log'})" in err


def test_the_bar_counts_files_and_ends_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a terminal the bar counts files done (a byte count sits at 0 % while one big
    file converts) and its last state says every file."""
    import io

    import nanorec.cli.batch as batch_cli

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen = Terminal()
    monkeypatch.setattr(batch_cli.sys, "stderr", screen)
    source = _tree(tmp_path / "in")
    options: dict[str, str] = {}
    code = batch_cli.batch_convert(
        [source], tmp_path / "out", jobs=1, force=False, keep_going=False, fmt=None, options=options
    )
    assert code == 0
    last = screen.getvalue().replace("\r", "\n").strip().splitlines()[-1]
    assert "4/4 files" in last and "100%" in last, last
