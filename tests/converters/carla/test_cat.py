"""`nanorec cat`: record tables checked against records decoded independently from the bytes."""

from __future__ import annotations

import csv
import io
import json
import math
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nanorec.cli import _register, app
from nanorec.converters.carla.ids import Kind
from nanorec.converters.carla.recording import CarlaRecording
from nanorec.converters.carla.table import (
    columns,
    frame_span,
    iter_rows,
    kind_names,
    parse_kind,
    table_kinds,
    write_csv,
    write_ndjson,
)
from tests.conftest import SAMPLES, carla_realdata, make_runner

SAMPLE_FILES = sorted(SAMPLES.glob("*.log"))
REAL = carla_realdata()


# ----------------------------------------------------------------- an independent decoder


def native_records(
    path: Path, packet_id: int, record: struct.Struct
) -> Iterator[tuple[object, ...]]:
    """`(frame id, elapsed, *record)` for every record of `packet_id`, straight from the file
    (spec §2, §3, §5): header, then `u8 id, u32 size` packets. A frame counts once its
    FrameEnd is read: a crashed server's last frame (no FrameEnd) is not a frame."""
    data = path.read_bytes()
    at = 2
    (magic_len,) = struct.unpack_from("<H", data, at)
    at += 2 + magic_len + 8
    (map_len,) = struct.unpack_from("<H", data, at)
    at += 2 + map_len
    frame_id, elapsed = 0, 0.0
    pending: list[tuple[object, ...]] = []
    while at + 5 <= len(data):
        pid, size = struct.unpack_from("<BI", data, at)
        body = at + 5
        if body + size > len(data):
            break
        if pid == 0:
            frame_id, _duration, elapsed = struct.unpack_from("<Qdd", data, body)
        elif pid == 1:
            yield from pending
            pending = []
        elif pid == packet_id:
            (count,) = struct.unpack_from("<H", data, body)
            assert size == 2 + count * record.size
            for i in range(count):
                values = record.unpack_from(data, body + 2 + i * record.size)
                pending.append((frame_id, elapsed, *values))
        at = body + size


def _vector(path: Path) -> str:
    return "d" if "ue5" in path.name else "f"


@pytest.fixture(scope="module")
def recordings() -> Iterator[dict[str, CarlaRecording]]:
    opened = {path.name: CarlaRecording.open(path) for path in SAMPLE_FILES}
    yield opened
    for rec in opened.values():
        rec.close()


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.name)
def test_positions_match_the_bytes(path: Path, recordings: dict[str, CarlaRecording]) -> None:
    v = _vector(path)
    expected = list(native_records(path, 6, struct.Struct(f"<I3{v}3{v}")))
    rows = list(iter_rows(recordings[path.name], "position"))
    assert len(rows) == len(expected) > 0
    for row, (frame, elapsed, actor, x, y, z, roll, pitch, yaw) in zip(rows, expected, strict=True):
        assert (row["frame"], row["time"], row["id"]) == (frame, elapsed, actor)
        got = (row["location_x"], row["location_y"], row["location_z"])
        assert got == (x, y, z)  # exact: a float32 widened, never rounded
        assert (row["pitch"], row["yaw"], row["roll"]) == (pitch, yaw, roll)
    assert list(rows[0]) == list(columns(Kind.POSITION))


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.name)
def test_collisions_and_frames_match_the_bytes(
    path: Path, recordings: dict[str, CarlaRecording]
) -> None:
    rec = recordings[path.name]
    expected = list(native_records(path, 5, struct.Struct("<IIIBB")))
    rows = list(iter_rows(rec, "hit"))
    assert [(r["frame"], r["time"], r["id"], r["actor1_id"], r["actor2_id"]) for r in rows] == [
        e[:5] for e in expected
    ]
    assert all(isinstance(r["is_actor1_hero"], bool) for r in rows)
    starts = list(iter_rows(rec, Kind.FRAME_START))
    assert [r["index"] for r in starts] == list(range(len(rec)))
    assert [(r["frame"], r["time"]) for r in starts[:5]] == [
        (w.frame_id, w.elapsed) for w in rec.frames(0, 5)
    ]


@pytest.mark.slow
def test_every_kind_tabulates_on_every_sample(recordings: dict[str, CarlaRecording]) -> None:
    for rec in recordings.values():
        for kind in table_kinds():
            header = columns(kind)
            for row in iter_rows(rec, kind):
                assert tuple(row) == header, kind
                json.dumps(row, allow_nan=False)


def test_summary_counts(recordings: dict[str, CarlaRecording]) -> None:
    """Spawns, destructions and traffic-light states agree with the samples' JSON twins."""
    for name, rec in recordings.items():
        twin = json.loads((SAMPLES / f"{name}.json").read_text())
        adds = list(iter_rows(rec, "event_add"))
        by_type: dict[str, int] = {}
        for row in adds:
            by_type[row["type_name"]] = by_type.get(row["type_name"], 0) + 1
        assert by_type == twin["actors_spawned"], name
        destroyed = [row["id"] for row in iter_rows(rec, "event_del")]
        assert len(destroyed) == sum(twin["actors_destroyed"].values()), name
        spectator = adds[0]
        assert spectator["attributes"] == {} and spectator["type_name"] == "other"
        hero = [row for row in adds if row["attributes"].get("role_name") == "hero"]
        assert hero and hero[0]["type_name"] == "vehicle"
        states = list(iter_rows(rec, "tl"))
        assert {row["state_name"] for row in states} <= {"red", "yellow", "green", "off"}


def test_actor_filter_and_time_range(recordings: dict[str, CarlaRecording]) -> None:
    rec = recordings["carla-0.9.15-town03.log"]
    everything = list(iter_rows(rec, "position"))
    mine = list(iter_rows(rec, "position", actor=6))
    assert mine == [row for row in everything if row["id"] == 6] and mine
    window = list(iter_rows(rec, "position", start_s=2.0, stop_s=3.0))
    assert window == [row for row in everything if 2.0 <= round(row["time"], 6) <= 3.0]
    assert window[0]["time"] == pytest.approx(2.0) and window[-1]["time"] == pytest.approx(3.0)
    hits = list(iter_rows(rec, "collision", actor=7))
    assert hits and all(7 in (r["actor1_id"], r["actor2_id"]) for r in hits)
    parents = list(iter_rows(rec, "event_parent", actor=6))
    assert parents and all(6 in (r["id"], r["parent_id"]) for r in parents)
    wheels = list(iter_rows(rec, "wheels", actor=6, stop_s=0.0))
    assert [row["wheel"] for row in wheels] == [0, 1, 2, 3]
    assert frame_span(rec, 100.0, None) == range(len(rec), len(rec))
    assert list(iter_rows(rec, "position", start_s=100.0)) == []
    with pytest.raises(ValueError, match="after the end"):
        frame_span(rec, 3.0, 2.0)
    with pytest.raises(ValueError, match="name no actor"):
        list(iter_rows(rec, "weather", actor=1))


def test_kind_names() -> None:
    assert parse_kind("pos") is parse_kind("Position") is Kind.POSITION
    assert parse_kind("tl") is parse_kind("traffic-light") is Kind.STATE
    assert parse_kind("wheels") is Kind.ANIM_VEHICLE_WHEELS
    assert "position" in kind_names() and "pos" in kind_names()
    with pytest.raises(ValueError, match="valid: frame_start, event_add"):
        parse_kind("physics_control")
    with pytest.raises(ValueError, match="not tabulated"):
        columns(Kind.WALKER_BONES)


def test_writers() -> None:
    rows = [
        {"frame": 1, "index": 0, "time": 0.0, "x": math.nan, "attributes": {"a": "b,c"}},
        {"frame": 2, "index": 1, "time": 0.05, "x": 1.5, "attributes": {}},
    ]
    text = io.StringIO()
    assert write_ndjson(rows, text) == 2
    lines = [json.loads(line) for line in text.getvalue().splitlines()]
    assert lines[0]["x"] is None and lines[1]["x"] == 1.5
    text = io.StringIO()
    assert write_csv(rows, text, ["frame", "time", "x", "attributes", "missing"]) == 2
    table = list(csv.reader(io.StringIO(text.getvalue())))
    assert table[0] == ["frame", "time", "x", "attributes", "missing"]
    assert table[1] == ["1", "0.0", "nan", '{"a": "b,c"}', ""]
    assert table[2] == ["2", "0.05", "1.5", "{}", ""]


# --------------------------------------------------------------------------- CLI


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    _register()
    return make_runner()


def test_cli_csv_round_trips(runner: CliRunner, recordings: dict[str, CarlaRecording]) -> None:
    path = SAMPLES / "carla-0.9.15-town03.log"
    result = runner.invoke(
        app, ["cat", str(path), "--type", "pos", "--actor", "6", "--format", "csv", "--end", "1"]
    )
    assert result.exit_code == 0, result.stderr
    table = list(csv.DictReader(io.StringIO(result.stdout)))
    rows = list(iter_rows(recordings[path.name], "position", actor=6, stop_s=1.0))
    assert len(table) == len(rows) == 21
    for line, row in zip(table, rows, strict=True):
        assert {key: float(value) for key, value in line.items()} == pytest.approx(row, rel=0)
    result = runner.invoke(app, ["cat", str(path), "-t", "collision"])
    assert result.exit_code == 0
    parsed = [json.loads(line) for line in result.stdout.splitlines()]
    assert parsed == list(iter_rows(recordings[path.name], "collision"))


def test_cli_takes_the_common_selection(
    runner: CliRunner, recordings: dict[str, CarlaRecording]
) -> None:
    """Without --type every frame is one NDJSON message line, as the generic cat prints;
    --messages/--frames and --duration pick frames as every verb does."""
    from nanorec.converters.carla.play import world_dict
    from nanorec.outputs.tables import json_safe

    path = SAMPLES / "carla-0.9.15-town03.log"
    rec = recordings[path.name]
    result = runner.invoke(app, ["cat", str(path), "--messages", "0:2"])
    assert result.exit_code == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(line["number"], line["kind"]) for line in lines] == [(0, "frame"), (1, "frame")]
    assert lines[1]["time"] == rec.time_of(1)
    assert lines[1]["value"] == json_safe(world_dict(rec.frame(1)))
    result = runner.invoke(app, ["cat", str(path), "-t", "pos", "--frames", "3:5"])
    assert result.exit_code == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert rows == list(iter_rows(rec, "position", frames=range(3, 5)))
    assert {row["index"] for row in rows} == {3, 4}
    result = runner.invoke(app, ["cat", str(path), "-t", "pos", "-s", "1", "-u", "0.1"])
    assert {json.loads(line)["index"] for line in result.stdout.splitlines()} == {20, 21, 22}
    result = runner.invoke(app, ["cat", str(path), "-t", "pos", "-t", "hit", "--frames", "0:1"])
    assert result.exit_code == 0, result.stderr
    assert len(result.stdout.splitlines()) == len(list(iter_rows(rec, "position", frames=range(1))))
    for args in (["--start", "1000000"], ["-t", "pos", "--start", "1e6"]):
        result = runner.invoke(app, ["cat", str(path), *args])
        assert result.exit_code == 2 and result.stdout == "", args
        assert result.stderr.startswith("nanorec: --start 1000000 selects no message"), args
    result = runner.invoke(app, ["cat", str(path), "-t", "pos", "-t", "hit", "-F", "csv"])
    assert result.exit_code == 2 and "one --type" in result.stderr


def test_cli_errors_are_one_line(runner: CliRunner, tmp_path: Path) -> None:
    path = SAMPLES / "carla-0.9.15-town03.log"
    junk = tmp_path / "junk.log"
    junk.write_bytes(b"neither a recording nor an archive")
    for args in (
        ["cat", str(path), "--type", "bogus"],
        ["cat", str(path), "--type", "pos", "--format", "xml"],
        ["cat", str(path), "--type", "weather", "--actor", "3"],
        ["cat", str(path), "--type", "pos", "--start", "5", "--end", "1"],
        ["cat", str(tmp_path / "missing.log"), "--type", "pos"],
        ["cat", str(junk), "--type", "pos"],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, args
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("nanorec: "), args
    result = runner.invoke(app, ["cat", "--help"])
    assert result.exit_code == 0 and "Example: nanorec cat" in result.stdout


@pytest.mark.realdata
@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_real_positions_match_the_bytes(path: Path, realdata_dir: Path) -> None:
    with CarlaRecording.open(path) as rec:
        v = "f" if rec.family.vector_size == 12 else "d"
        rows = list(iter_rows(rec, "position"))
    expected = list(native_records(path, 6, struct.Struct(f"<I3{v}3{v}")))
    got = [(r["frame"], r["time"], r["id"], r["location_x"], r["yaw"]) for r in rows]
    assert got == [(*e[:4], e[8]) for e in expected]


@pytest.mark.slow
def test_cat_writes_non_utf8_strings_back_as_found(tmp_path: Path) -> None:
    import subprocess
    import sys

    from nanorec.converters.carla.writer import RecordingWriter

    path = tmp_path / "bytes.log"
    with RecordingWriter(path, "0.9.16", map_name="Town03") as out, out.frame(delta=0.05):
        out.spawn(7, 1, "vehicle.\udcffbad", attributes=[(3, "role_name", "h\udce9ro")])
    for fmt in ("ndjson", "csv"):
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                "from nanorec.cli import main; main()",
                "cat",
                str(path),
                "--type",
                "add",
                "--format",
                fmt,
            ],
            capture_output=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert b"vehicle.\xffbad" in done.stdout and b"h\xe9ro" in done.stdout
