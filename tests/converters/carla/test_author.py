"""`nanorec carla author`: recorder files authored from trajectory tables, read back.

The round trips read the authored file through the converter (`CarlaRecording.rows`, the
rows `nanorec cat` prints), through the CLI's `cat --type position`, and through
scenario_runner's own parser of CARLA's `show_recorder_file_info` text: each gives the
table back within float32 centimetres.
"""

from __future__ import annotations

import csv
import io
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nanorec.cli import _register, app
from nanorec.converters.carla.author import RELEASES, author, recorded_uids, release_family
from nanorec.converters.carla.ids import FAMILIES, Engine
from nanorec.converters.carla.query import file_info
from nanorec.converters.carla.recording import CarlaRecording
from nanorec.errors import FormatError, OutputExistsError, UsageError
from tests.conftest import carla_realdata, make_runner

from .metrics_reference import load_reference, their_text

DATE = 1_700_000_000
REAL = carla_realdata()


def scene() -> dict[str, list[Any]]:
    """Three actors: a hero car the whole time (turning through yaw ±180), a second car
    from t=0.5 to t=1.5 (removed before the end), a walker from t=1.0 on."""
    rows: list[tuple[Any, ...]] = []
    for k in range(5):
        t = 0.5 * k
        yaw = 170.0 + 5.0 * k  # 170 .. 190, written as 170 .. -170
        rows.append((t, 7, "vehicle.tesla.model3", 10.0 + 3 * t, -2.5 * t, 0.25, yaw, "hero"))
        if 0.5 <= t <= 1.5:
            rows.append((t, 9, "vehicle.audi.tt", -40.0 + t, 5.125, 0.5, -90.0 + t, ""))
        if t >= 1.0:
            rows.append((t, 12, "walker.pedestrian.0001", 3.0, 1.0 + 1.5 * t, 1.0, 45.0, ""))
    names = ("t", "id", "type_id", "x", "y", "z", "yaw", "role_name")
    table: dict[str, list[Any]] = {name: [row[i] for row in rows] for i, name in enumerate(names)}
    table["pitch"] = [1.5 if actor == 7 else 0.0 for actor in table["id"]]
    table["roll"] = [-0.75 if actor == 7 else 0.0 for actor in table["id"]]
    table["throttle"] = [0.5 if actor == 7 else 0.0 for actor in table["id"]]
    table["gear"] = [2 if actor == 7 else 0 for actor in table["id"]]
    return table


def positions(path: Path) -> dict[tuple[float, int], tuple[float, ...]]:
    """(time, id) -> (x, y, z in cm, pitch, yaw, roll) from the recording's rows API."""
    with CarlaRecording.open(path) as rec:
        return {
            (row["time"], row["id"]): tuple(
                row[k] for k in ("location_x", "location_y", "location_z", "pitch", "yaw", "roll")
            )
            for row in rec.rows("position")
        }


def f32(value: float) -> float:
    return float(np.float32(value))


def same_angle(a: float, b: float) -> bool:
    return abs((a - b + 180.0) % 360.0 - 180.0) <= 1e-4


def expect_table(
    table: dict[str, list[Any]],
    got: dict[tuple[float, int], tuple[float, ...]],
    family: str = "0.9.16",
) -> None:
    """Every table row is in `got` at its time: float32 cm and degrees (float64 in UE5
    files, spec §1); angles outside (-180, 180] wrapped, within 1e-4 degrees."""
    t0 = min(table["t"])
    wide = FAMILIES[family].engine is Engine.UE5
    for i, actor in enumerate(table["id"]):
        found = got[(table["t"][i] - t0, actor)]
        for k, axis in enumerate("xyz"):
            cm = table[axis][i] * 100.0
            assert found[k] == (cm + 0.0 if wide else f32(cm)), (i, axis)
        for k, angle in enumerate(("pitch", "yaw", "roll"), start=3):
            want = table[angle][i] if angle in table else 0.0
            if -180.0 < want <= 180.0:  # kept as given (float32 in UE4 files)
                assert found[k] == (want + 0.0 if wide else f32(want)), (i, angle)
            else:  # wrapped into CARLA's range
                assert same_angle(found[k], want), (i, angle, found[k], want)


# ------------------------------------------------------------------------------ round trips


@pytest.mark.parametrize("family", list(FAMILIES))
def test_round_trip_every_release(tmp_path: Path, family: str) -> None:
    table = scene()
    out = tmp_path / "run.log"
    report = author(table, out, map_name="Town03", release=family, date=DATE)
    assert (report.frames, report.actors, report.release) == (5, 3, family)
    got = positions(out)
    assert len(got) == len(table["t"])  # no pose outside an actor's rows' span
    expect_table(table, got, family)
    with CarlaRecording.open(out) as rec:
        assert rec.map_name == "Town03" and rec.header.date == DATE
        # detected from the bytes, as for a real file (a 2026 ue4-dev file without a Weather
        # packet has 0.9.16's packets exactly: its header's version 2 tells them apart)
        assert rec.family.name == family
        spawns = {row["id"]: row for row in rec.rows("event_add")}
        removed = [(row["time"], row["id"]) for row in rec.rows("event_del")]
    assert {i: (s["time"], s["type_id"]) for i, s in spawns.items()} == {
        7: (0.0, "vehicle.tesla.model3"),
        9: (0.5, "vehicle.audi.tt"),
        12: (1.0, "walker.pedestrian.0001"),
    }
    assert spawns[7]["attributes"] == {"role_name": "hero"} and spawns[9]["attributes"] == {}
    assert removed == [(2.0, 9)]  # the frame after its last row; the others live on


def test_angles_are_stored_in_carla_ranges(tmp_path: Path) -> None:
    author(scene(), tmp_path / "a.log", map_name="Town03", date=DATE)
    yaws = [pose[4] for (_, actor), pose in positions(tmp_path / "a.log").items() if actor == 7]
    assert yaws == [f32(v) for v in (170.0, 175.0, 180.0, -175.0, -170.0)]


def test_controls_and_walker_speed(tmp_path: Path) -> None:
    author(scene(), tmp_path / "a.log", map_name="Town03", date=DATE)
    with CarlaRecording.open(tmp_path / "a.log") as rec:
        cars = [r for r in rec.rows("anim_vehicle") if r["id"] == 7]
        walkers = [r for r in rec.rows("anim_walker")]
    assert {(r["throttle"], r["gear"]) for r in cars} == {(0.5, 2)}
    assert len(cars) == 5
    assert [w["speed"] for w in walkers] == pytest.approx([150.0] * 3)  # 1.5 m/s in cm/s


def test_cli_csv_and_parquet_give_the_same_file(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    table = scene()
    write_csv(tmp_path / "t.csv", table)
    pq.write_table(pa.table(table), tmp_path / "t.parquet")
    runner = make_runner()
    _register()
    for name in ("t.csv", "t.parquet"):
        args = ["carla", "author", str(tmp_path / name), "-o", str(tmp_path / f"{name}.log")]
        result = runner.invoke(app, [*args, "--map", "Town03", "--date", str(DATE)])
        assert result.exit_code == 0, result.stderr
        assert "5 frames, 3 actors" in result.stdout
    assert (tmp_path / "t.csv.log").read_bytes() == (tmp_path / "t.parquet.log").read_bytes()
    archive = tmp_path / "run.nanover.zip"
    result = runner.invoke(app, ["convert", str(tmp_path / "t.csv.log"), "-o", str(archive)])
    assert result.exit_code == 0, result.stderr
    back = tmp_path / "back.log"
    assert runner.invoke(app, ["export", str(archive), "-o", str(back)]).exit_code == 0
    assert back.read_bytes() == (tmp_path / "t.csv.log").read_bytes()  # as for real files
    result = runner.invoke(app, ["cat", str(archive), "--type", "position", "--format", "csv"])
    assert result.exit_code == 0, result.stderr
    got = {
        (float(row["time"]), int(row["id"])): tuple(
            float(row[k])
            for k in ("location_x", "location_y", "location_z", "pitch", "yaw", "roll")
        )
        for row in csv.DictReader(io.StringIO(result.stdout))
    }
    expect_table(table, got)


def test_info_text_parses_as_carlas(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """scenario_runner's parser of CARLA's recorder text reads the authored file's text."""
    table = scene()
    out = tmp_path / "a.log"
    author(table, out, map_name="Town03", release="0.9.15", date=DATE)
    their_log, _carla = load_reference(monkeypatch, prefer_real=False)
    text = file_info(out, show_all=True)
    assert text.startswith("Version: 1\nMap: Town03\nDate: ")
    assert text.endswith("\nFrames: 5\nDuration: 2 seconds\n")
    assert "\n Create 7: vehicle.tesla.model3 (1) at (1000, 0, 25)\n  role_name = hero\n" in text
    _register()
    printed = make_runner().invoke(app, ["info", str(out), "--show-all"])
    assert printed.exit_code == 0 and printed.stdout == text  # what `nanorec info` prints
    log = their_log(their_text(text))
    assert log.get_ego_vehicle_id() == 7
    assert sorted(log.get_actor_ids_with_type_id("vehicle.*")) == [7, 9]
    assert log.get_actor_alive_frames(9) == (2, 4)  # removed in frame 5
    location = log.get_actor_transform(12, 5).location
    assert (location.x, location.y, location.z) == pytest.approx((3.0, 4.0, 1.0), abs=1e-5)


def test_extents_are_bounding_boxes_at_spawn(tmp_path: Path) -> None:
    table = scene()
    for axis, half in zip("xyz", (2.4, 0.95, 0.75), strict=True):
        table[f"extent_{axis}"] = [half if a != 12 else 0.2 for a in table["id"]]
    author(table, tmp_path / "a.log", map_name="Town03", release="0.9.15", date=DATE)
    with CarlaRecording.open(tmp_path / "a.log") as rec:
        boxes = [
            (r["time"], r["id"], r["extent_x"], r["extent_y"], r["extent_z"])
            for r in rec.rows("bounding_box")
        ]
    assert boxes == [
        (0.0, 7, 240.0, 95.0, 75.0),
        (0.5, 9, 240.0, 95.0, 75.0),
        (1.0, 12, f32(20.0), f32(20.0), f32(20.0)),
    ]
    with pytest.raises(UsageError, match="does not record"):
        author(table, tmp_path / "b.log", map_name="Town03", release="0.9.6")


def test_blueprint_uids(tmp_path: Path) -> None:
    """The release's own numbers (the Tesla is 16 in 0.9.6, 24 in 0.9.15), a uid column
    first, and every guess listed in the report."""

    def uids(release: str, table: dict[str, list[Any]]) -> tuple[dict[int, int], str]:
        out = tmp_path / f"{release}.log"
        report = author(table, out, map_name="Town03", release=release, date=DATE, overwrite=True)
        with CarlaRecording.open(out) as rec:
            return {r["id"]: r["uid"] for r in rec.rows("event_add")}, report.line()

    table = scene()
    assert uids("0.9.6", table)[0] == {7: 16, 9: 2, 12: 0}
    found, line = uids("0.9.15", table)
    assert found == {7: 24, 9: 2, 12: 0}
    assert "walker.pedestrian.0001 written as 0" in line and "give a uid column" in line
    table["type_id"] = [t.replace("audi.tt", "audi.a2") for t in table["type_id"]]
    table["uid"] = [60 if a == 12 else 0 for a in table["id"]]
    with pytest.raises(FormatError, match=r"row 1, column uid: 0 is outside 1\.\.4294967295"):
        uids("0.9.15", table)
    table["uid"] = [60 if a == 12 else 23 if a == 9 else 24 for a in table["id"]]
    found, line = uids("0.9.15", table)
    assert found == {7: 24, 9: 23, 12: 60} and "not known" not in line

    # --uids-from: the numbers of a recording made on the replaying server
    recorded = recorded_uids(tmp_path / "0.9.15.log")
    assert recorded == {
        "vehicle.tesla.model3": 24,
        "vehicle.audi.a2": 23,
        "walker.pedestrian.0001": 60,
    }
    del table["uid"]
    source = write_csv(tmp_path / "t.csv", table)
    _register()
    args = ["carla", "author", str(source), "-o", str(tmp_path / "u.log"), "--map", "Town03"]
    result = make_runner().invoke(app, [*args, "--uids-from", str(tmp_path / "0.9.15.log")])
    assert result.exit_code == 0 and "not known" not in result.stdout, result.stderr
    with CarlaRecording.open(tmp_path / "u.log") as rec:
        assert {r["id"]: r["uid"] for r in rec.rows("event_add")} == {7: 24, 9: 23, 12: 60}
    result = make_runner().invoke(app, [*args, "--force", "--uids-from", str(source)])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"nanorec: --uids-from {source}: not a CARLA recording")


@pytest.mark.parametrize(("release", "moves"), [("0.9.6", False), ("0.9.10", True)])
def test_props_move_where_the_release_records_them(
    tmp_path: Path, release: str, moves: bool
) -> None:
    """Position records for "Other" actors (props) exist since ~0.9.10 (spec §5.6)."""
    table = scene()
    for name, value in (("t", 0.0), ("id", 50), ("type_id", "static.prop.barrel")):
        table[name].append(value)
    for name in table:
        if len(table[name]) < len(table["t"]):
            table[name].append("" if name == "role_name" else 0.0)
    author(table, tmp_path / "a.log", map_name="Town03", release=release, date=DATE)
    with CarlaRecording.open(tmp_path / "a.log") as rec:
        spawned = {r["id"]: r["type"] for r in rec.rows("event_add")}
        moved = {r["id"] for r in rec.rows("position")}
    assert spawned[50] == 0 and (50 in moved) is moves


def test_reverse_hand_brake_and_ignored_columns(tmp_path: Path) -> None:
    table = {
        "t": [0.0, 1.0],
        "id": [5, 5],
        "type_id": ["vehicle.audi.tt"] * 2,
        "x": [0.0, -1.0],
        "y": [0.0, 0.0],
        "z": [0.0, 0.0],
        "yaw": [0.0, 0.0],
        "reverse": ["true", "1"],
        "hand_brake": ["false", "True"],
        "speed_kmh": ["3.6", "3.6"],
    }
    source = write_csv(tmp_path / "t.csv", table)
    report = author(source, tmp_path / "a.log", map_name="Town03", date=DATE)
    assert report.ignored_columns == ("speed_kmh",)
    with CarlaRecording.open(tmp_path / "a.log") as rec:
        rows = [(r["gear"], r["handbrake"]) for r in rec.rows("anim_vehicle")]
    assert rows == [(-1, False), (-1, True)]


@st.composite
def tables(draw: st.DrawFn) -> dict[str, list[Any]]:
    """Random tables: up to 4 actors, each with rows at increasing times on a 1/8 s grid."""
    table: dict[str, list[Any]] = {k: [] for k in ("t", "id", "type_id", "x", "y", "z")}
    table |= {"pitch": [], "yaw": [], "roll": []}
    metres = st.floats(-2000.0, 2000.0, allow_nan=False)
    ids = draw(st.lists(st.integers(1, 2**32 - 2), min_size=1, max_size=4, unique=True))
    for actor in ids:
        ticks = draw(st.lists(st.integers(0, 40), min_size=1, max_size=6, unique=True))
        blueprint = draw(st.sampled_from(["vehicle.audi.tt", "walker.pedestrian.0007"]))
        for tick in sorted(ticks):
            table["t"].append(tick / 8)
            table["id"].append(actor)
            table["type_id"].append(blueprint)
            for axis in "xyz":
                table[axis].append(draw(metres))
            table["pitch"].append(draw(st.floats(-89.0, 89.0)))
            table["yaw"].append(draw(st.floats(-720.0, 720.0)))
            table["roll"].append(draw(st.floats(-180.0, 180.0)))
    return table


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(table=tables(), family=st.sampled_from(list(FAMILIES)))
def test_any_table_round_trips(tmp_path: Path, table: dict[str, list[Any]], family: str) -> None:
    out = tmp_path / "a.log"
    report = author(table, out, map_name="Town03", release=family, date=DATE, overwrite=True)
    assert report.frames == len(set(table["t"]))
    got = positions(out)
    assert len(got) >= len(table["t"])  # plus the poses between an actor's rows
    expect_table(table, got, family)


# ---------------------------------------------------------------------------- --fps


def test_fps_interpolates_a_straight_line_exactly(tmp_path: Path) -> None:
    """Two rows, 2 s apart, at 10 fps: 21 frames on the line, yaw across ±180."""
    table = {
        "t": [4.0, 6.0],
        "id": [3, 3],
        "type_id": ["vehicle.audi.tt"] * 2,
        "x": [1.0, 9.0],
        "y": [-2.0, 2.0],
        "z": [0.5, 0.5],
        "yaw": [170.0, -170.0],
    }
    report = author(table, tmp_path / "a.log", map_name="Town03", fps=10, date=DATE)
    assert report.frames == 21
    with CarlaRecording.open(tmp_path / "a.log") as rec:
        rows = list(rec.rows("position"))
    assert len(rows) == 21
    for k, row in enumerate(rows):
        elapsed = row["time"]
        assert elapsed == pytest.approx(k / 10, abs=1e-6)  # float32 steps summed, as CARLA
        s = min(elapsed / 2.0, 1.0)
        assert row["location_x"] == pytest.approx(f32((1.0 + 8.0 * s) * 100), rel=1e-6)
        assert row["location_y"] == pytest.approx(f32((-2.0 + 4.0 * s) * 100), abs=1e-3)
        assert same_angle(row["yaw"], 170.0 + 20.0 * s)  # the short way, through 180
    assert rows[-1]["location_x"] == f32(900.0)


def test_fps_leaves_out_an_actor_between_two_frames(tmp_path: Path) -> None:
    table = scene()
    for name in table:
        table[name].append({"t": 0.6, "id": 40, "type_id": "vehicle.audi.tt"}.get(name, 0.0))
    report = author(table, tmp_path / "a.log", map_name="Town03", fps=2, date=DATE)
    assert report.skipped_actors == (40,) and report.actors == 3
    assert "1 actors between frames left out" in report.line()


def test_fps_adds_and_removes_within_the_rows_span(tmp_path: Path) -> None:
    table = scene()
    author(table, tmp_path / "a.log", map_name="Town03", fps=4, date=DATE)
    got = positions(tmp_path / "a.log")
    times_of = {actor: sorted(t for t, a in got if a == actor) for actor in (7, 9, 12)}
    assert times_of[7][0] == 0.0 and times_of[7][-1] == pytest.approx(2.0)
    assert times_of[9][0] == pytest.approx(0.5) and times_of[9][-1] == pytest.approx(1.5)
    assert len(times_of[7]) == 9 and len(times_of[9]) == 5 and len(times_of[12]) == 5


# ----------------------------------------------------------------------------- real logs


@pytest.mark.realdata
@pytest.mark.parametrize("path", REAL, ids=[p.name for p in REAL])
def test_table_from_a_real_log(tmp_path: Path, path: Path) -> None:
    """Vehicles' and walkers' positions of a real log, as a table, authored and read back."""
    table, family = table_from(path)
    if not table["t"]:
        pytest.skip(f"{path.name} has no vehicle or walker positions")
    out = tmp_path / "a.log"
    author(table, out, map_name="Town03", release=family, date=DATE)
    got = positions(out)
    expect_table(table, got, family)


@pytest.mark.realdata
@pytest.mark.parametrize("path", REAL, ids=[p.name for p in REAL])
def test_info_lines_of_a_real_log(tmp_path: Path, path: Path) -> None:
    """The authored file's `info --show-all` prints each vehicle's and walker's position
    line exactly as the real file's text does, and its Create lines in the same layout."""
    table, family = table_from(path)
    if not table["t"]:
        pytest.skip(f"{path.name} has no vehicle or walker positions")
    out = tmp_path / "a.log"
    author(table, out, map_name="Town03", release=family, date=DATE)
    real = file_info(path, show_all=True).splitlines()
    ours = file_info(out, show_all=True).splitlines()
    moving = {f"  Id: {actor} " for actor in table["id"]}
    wanted = {line for line in real if line.startswith(tuple(moving)) and " Location" in line}
    positions_ours = [line for line in ours if line.startswith("  Id: ") and " Location" in line]
    assert set(positions_ours) <= wanted and len(positions_ours) == len(table["t"])
    creates = [line for line in ours if line.startswith(" Create ")]
    assert len(creates) == len(set(table["id"]))
    for line in creates:  # ` Create <id>: <blueprint> (<type>) at (<x>, <y>, <z>)`
        head = line.split(" at (")[0]
        assert any(other.startswith(head + " at (") for other in real), line


def table_from(path: Path) -> tuple[dict[str, list[Any]], str]:
    with CarlaRecording.open(path) as rec:
        kinds = {row["id"]: row["type_id"] for row in rec.rows("event_add")}
        table: dict[str, list[Any]] = {k: [] for k in ("t", "id", "type_id", "x", "y", "z")}
        table |= {"pitch": [], "yaw": [], "roll": []}
        for row in rec.rows("position"):
            blueprint = kinds.get(row["id"], "")
            if not blueprint.startswith(("vehicle.", "walker.pedestrian")):
                continue
            for name, value in (("t", row["time"]), ("id", row["id"]), ("type_id", blueprint)):
                table[name].append(value)
            for axis in "xyz":
                table[axis].append(row[f"location_{axis}"] / 100.0)
            for angle in ("pitch", "yaw", "roll"):
                table[angle].append(row[angle])
        return table, rec.family.name


# ---------------------------------------------------------------------------- bad input


def write_csv(path: Path, table: dict[str, list[Any]]) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(table)
        writer.writerows(zip(*table.values(), strict=True))
    return path


def _edited(edit: str) -> dict[str, list[Any]]:
    table = scene()
    if edit == "missing":
        del table["yaw"]
    elif edit == "text":
        table["x"][3] = "abc"
    elif edit == "nan":
        table["y"][3] = "nan"
    elif edit == "inf":
        table["z"][3] = "-inf"
    elif edit == "backwards":
        table["t"][3] = 0.25  # actor 7's third row before its second
    elif edit == "id0":
        table["id"][3] = 0
    elif edit == "id_big":
        table["id"][3] = 2**32
    elif edit == "duplicate":
        table["t"][3] = table["t"][1]  # actor 7's second and third rows both at t=0.5
    elif edit == "type":
        table["type_id"][3] = "vehicle.audi.tt"
    elif edit == "traffic":
        table["type_id"] = ["traffic.traffic_light"] * len(table["t"])
    return table


BAD = {
    # edit: (words the one line must have)
    "missing": ("header", "missing column(s) yaw"),
    "text": ("row 4 (line 5), column x", "'abc' is not a number"),
    "nan": ("row 4 (line 5), column y", "not a finite number"),
    "inf": ("row 4 (line 5), column z", "not a finite number"),
    "backwards": ("row 4 (line 5), column t", "is not after its previous row's"),
    "id0": ("row 4 (line 5), column id", "outside 1..4294967294"),
    "id_big": ("row 4 (line 5), column id", "outside 1..4294967294"),
    "duplicate": ("row 4 (line 5), column t", "duplicate (t, id) = (0.5, 7)", "row 2 (line 3)"),
    "type": ("row 4 (line 5), column type_id", "differs from 'vehicle.tesla.model3'"),
    "traffic": ("traffic.traffic_light", "does not move traffic lights"),
}


@pytest.mark.parametrize("edit", list(BAD))
def test_bad_table_is_one_line_exit_2(tmp_path: Path, edit: str) -> None:
    source = write_csv(tmp_path / "t.csv", _edited(edit))
    out = tmp_path / "a.log"
    _register()
    result = make_runner().invoke(
        app, ["carla", "author", str(source), "-o", str(out), "--map", "Town03"]
    )
    assert result.exit_code == 2, result.stdout
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("nanorec: "), result.stderr
    for words in BAD[edit]:
        assert words in lines[0]
    assert not out.exists() and list(tmp_path.iterdir()) == [source]


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (
            b"t,id,type_id,x,y,z,yaw\n0,1,vehicle.a,0,0,0,0\n1,1,vehicle.a,\xff,0,0,0\n",
            "line 3: not UTF-8",
        ),
        (b't,id,type_id,x,y,z,yaw\n0,1,"vehicle.a,0,0,0,0\n', "line 2: not CSV"),
        (b"t,id,type_id,x,y,z,yaw\n0,1,vehicle.a,0,0,0\n", "row 1 (line 2): 6 values"),
        (b"t,id,type_id,x,y,z,yaw\n\n0,1,vehicle.a,0,0,0,0\n", "row 1 (line 2): empty line"),
        (b"t,id,type_id,x,y,z,yaw\n", "header: the table has no rows"),
        (b"t,id,id,type_id,x,y,z,yaw\n", "column id appears more than once"),
        (b"t,id,type_id,x,y,z,yaw,extent_x\n0,1,v,0,0,0,0,1\n", "missing extent_y, extent_z"),
        (b"t,id,type_id,x,y,z,yaw\n0,1.5,v,0,0,0,0\n", "column id: '1.5' is not an integer"),
        (b"t,id,type_id,x,y,z,yaw\n0,1, ,0,0,0,0\n", "column type_id: empty blueprint id"),
        (b"t,id,type_id,x,y,z,yaw\n0,1,v,1e37,0,0,0\n", "does not fit the file's float32"),
    ],
)
def test_damaged_csv_is_one_line(tmp_path: Path, content: bytes, words: str) -> None:
    (tmp_path / "t.csv").write_bytes(content)
    _register()
    args = ["carla", "author", str(tmp_path / "t.csv"), "-o", str(tmp_path / "a.log")]
    result = make_runner().invoke(app, [*args, "--map", "Town03"])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("nanorec: ") and words in result.stderr, result.stderr


def test_bad_columns_in_memory_name_the_row() -> None:
    table = scene()
    table["yaw"][2] = math.inf
    with pytest.raises(FormatError, match=r"table: row 3, column yaw: inf is not a finite"):
        author(table, "never.log", map_name="Town03")


def test_parquet_null_names_the_row(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    table: dict[str, list[Any]] = scene()
    table["y"][1] = None
    pq.write_table(pa.table(table), tmp_path / "t.parquet")
    with pytest.raises(FormatError, match=r"t.parquet: row 2, column y: None is not a finite"):
        author(tmp_path / "t.parquet", tmp_path / "a.log", map_name="Town03")
    (tmp_path / "t.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(FormatError, match="not a readable Parquet file"):
        author(tmp_path / "t.parquet", tmp_path / "a.log", map_name="Town03")


def test_no_overwrite_without_force(tmp_path: Path) -> None:
    out = tmp_path / "a.log"
    out.write_bytes(b"mine")
    with pytest.raises(OutputExistsError):
        author(scene(), out, map_name="Town03", date=DATE)
    assert out.read_bytes() == b"mine"
    source = write_csv(tmp_path / "t.csv", scene())
    _register()
    args = ["carla", "author", str(source), "-o", str(out), "--map", "Town03"]
    result = make_runner().invoke(app, args)
    assert result.exit_code == 2 and "--force" in result.stderr
    assert make_runner().invoke(app, [*args, "--force"]).exit_code == 0
    assert out.read_bytes()[4:18] == b"CARLA_RECORDER"


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"release": "0.9.99"}, "unknown CARLA release '0.9.99'"),
        ({"fps": 0.0}, "--fps must be a positive number"),
        ({"fps": 1e9}, "at most 10000000 are written"),
        ({"map_name": ""}, "the map name is empty"),
        ({"map_name": "T" * 40000}, "longer than CARLA's 32767 bytes"),
        (
            {"table": {**scene(), "t": [t * 1e307 for t in scene()["t"]]}, "fps": 10},
            "at most 10000000 are written",
        ),
        ({"table": {**scene(), "t": 0.5}}, "header, column t: not a sequence"),
        (
            {"table": {**scene(), "role_name": ["é" * 20000] * 11}},
            "row 1, column role_name: text longer",
        ),
    ],
)
def test_bad_arguments(tmp_path: Path, kwargs: dict[str, Any], words: str) -> None:
    options: dict[str, Any] = {"map_name": "Town03", **kwargs}
    table = options.pop("table", scene())
    with pytest.raises((UsageError, FormatError)) as caught:
        author(table, tmp_path / "a.log", **options)
    assert words in str(caught.value)
    assert not (tmp_path / "a.log").exists()


def test_the_command_imports_no_writer() -> None:
    """Every `nanorec carla ...` command imports the author command; it costs no writer."""
    heavy = [f"nanorec.converters.carla.{m}" for m in ("writer", "author", "author_table")]
    probe = "import sys, nanorec.converters.carla.cli_author; "
    probe += f"print([m in sys.modules for m in {heavy}])"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[False, False, False]"


def test_releases_name_families() -> None:
    assert release_family("0.9.11").name == "0.9.10-0.9.13"
    assert release_family("0.10.0").name == "ue5-0.10"
    assert set(RELEASES.values()) == set(FAMILIES)
