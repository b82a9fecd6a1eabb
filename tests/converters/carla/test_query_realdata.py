"""Golden tests of `info`, `collisions` and `blocked` on the real recordings.

The expected text is derived here, independently of `nanorec.converters.carla.query`: the test
walks the packets with `struct`, decodes the records it needs by hand and formats the
expected lines with Python's own `%g`/`%.0f` (which the textfmt tests tie to glibc) and
`time.strftime`. The blocked rows are recomputed from the positions with a plain
re-implementation of spec §7.6. Snapshot digests of the full outputs are checked in
addition, to catch any unintended change.
"""

# The expected text is spelled with printf-style `%` on purpose: it mirrors the C formats.
# ruff: noqa: UP031

from __future__ import annotations

import hashlib
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from nanorec.converters.carla.query import actors_blocked, collisions, file_info

pytestmark = pytest.mark.realdata

TKORTZ = "tkortz_isorc20_2762.rec"  # CARLA 0.9.6 era, one collision
SR2020 = "scenario_runner_2020_DistanceToLaneCenter.log"  # 0.9.10, additional data
SR2021 = "scenario_runner_DistanceToLaneCenter.log"  # 0.9.13 era, additional data
SCENIC = "mastersproj_scenic_scenario1.log"  # 0.9.10-0.9.13
SUPP878 = "supp878_crash.log"  # 0.9.15
COLUMNS = "    Time  Types     Id Actor 1" + " " * 33 + "Id Actor 2" + " " * 28 + "\n"


@pytest.fixture
def carla_dir(realdata_dir: Path) -> Path:
    folder = realdata_dir / "carla"
    if not folder.is_dir():
        pytest.skip("no ../shared/realdata/carla")
    return folder


# ---------------------------------------------------------------- an independent reader


def read_header(data: bytes) -> tuple[int, str, int, str, int]:
    (version,) = struct.unpack_from("<H", data, 0)
    (n,) = struct.unpack_from("<H", data, 2)
    magic = data[4 : 4 + n].decode()
    pos = 4 + n
    (date,) = struct.unpack_from("<q", data, pos)
    (m,) = struct.unpack_from("<H", data, pos + 8)
    name = data[pos + 10 : pos + 10 + m].decode()
    return version, magic, date, name, pos + 10 + m


def packets(data: bytes) -> Iterator[tuple[int, bytes]]:
    pos = read_header(data)[4]
    while pos + 5 <= len(data):
        pid, size = struct.unpack_from("<BI", data, pos)
        yield pid, data[pos + 5 : pos + 5 + size]
        pos += 5 + size


def event_adds(
    body: bytes,
) -> Iterator[tuple[int, int, tuple[float, ...], str, list[tuple[str, str]]]]:
    (count,) = struct.unpack_from("<H", body, 0)
    pos = 2
    for _ in range(count):
        actor_id, actor_type = struct.unpack_from("<IB", body, pos)
        location = struct.unpack_from("<3f", body, pos + 5)
        pos += 5 + 24 + 4
        (n,) = struct.unpack_from("<H", body, pos)
        blueprint = body[pos + 2 : pos + 2 + n].decode()
        pos += 2 + n
        (attrs,) = struct.unpack_from("<H", body, pos)
        pos += 2
        pairs = []
        for _ in range(attrs):
            pos += 1
            (n,) = struct.unpack_from("<H", body, pos)
            key = body[pos + 2 : pos + 2 + n].decode()
            pos += 2 + n
            (n,) = struct.unpack_from("<H", body, pos)
            value = body[pos + 2 : pos + 2 + n].decode()
            pos += 2 + n
            pairs.append((key, value))
        yield actor_id, actor_type, location, blueprint, pairs


def head_text(data: bytes) -> str:
    version, _magic, date, name, _ = read_header(data)
    stamp = time.strftime("%m/%d/%y %H:%M:%S", time.gmtime(date))
    return f"Version: {version}\nMap: {name}\nDate: {stamp}\n\n"


def last_frame(data: bytes) -> tuple[int, float]:
    frame = (0, 0.0)
    for pid, body in packets(data):
        if pid == 0:
            frame_id, _duration, elapsed = struct.unpack("<Qdd", body)
            frame = (frame_id, elapsed)
    return frame


ALL = [TKORTZ, SR2020, SR2021, SCENIC, SUPP878]


# ---------------------------------------------------------------- info


@pytest.mark.parametrize("name", ALL)
def test_info_header_creates_and_trailer(carla_dir: Path, name: str) -> None:
    path = carla_dir / name
    data = path.read_bytes()
    text = file_info(path)
    assert text.startswith(head_text(data) + "Frame 1 at 0 seconds\n")
    frame_id, elapsed = last_frame(data)
    assert text.endswith("\nFrames: %d\nDuration: %g seconds\n" % (frame_id, elapsed))
    # The first EventAdd packet (frame 1) line by line, attributes included.
    body = next(body for pid, body in packets(data) if pid == 2)
    expected = []
    for actor_id, actor_type, loc, blueprint, attrs in event_adds(body):
        expected.append(
            " Create %d: %s (%d) at (%g, %g, %g)\n" % (actor_id, blueprint, actor_type, *loc)
        )
        expected += [f"  {key} = {value}\n" for key, value in attrs]
    start = len(head_text(data) + "Frame 1 at 0 seconds\n")
    assert text[start : start + len("".join(expected))] == "".join(expected)


def test_info_spot_lines_by_hand(carla_dir: Path) -> None:
    scenic = file_info(carla_dir / SCENIC)
    assert " Create 2151: spectator (0) at (-1310.18, 77.3507, 909.119)\n" in scenic
    assert "  object_type = \n" in scenic  # an empty value keeps its trailing space
    assert " Parenting 2230 with 2229 (parent)\n" in scenic
    tkortz = file_info(carla_dir / TKORTZ)
    # The collision record of frame 136, decoded by hand.
    data = (carla_dir / TKORTZ).read_bytes()
    frame = 0.0
    for pid, body in packets(data):
        if pid == 0:
            frame = struct.unpack("<Qdd", body)[2]
        if pid == 5 and struct.unpack_from("<H", body)[0]:
            cid, id1, id2, hero1, hero2 = struct.unpack_from("<IIIBB", body, 2)
            break
    assert (hero1, hero2) == (0, 0)
    assert (
        "Frame 136 at %g seconds\n Collision id %d between %d with %d\n"
        % (
            frame,
            cid,
            id1,
            id2,
        )
        in tkortz
    )


def test_show_all_label_forms_and_values_by_hand(carla_dir: Path) -> None:
    # 0.9.15: colon forms. Frame 2's first Position record, decoded here.
    data = (carla_dir / SUPP878).read_bytes()
    bodies = [body for pid, body in packets(data) if pid == 6]
    actor_id, *values = struct.unpack_from("<I6f", bodies[1], 2)
    line = "  Id: %d Location: (%g, %g, %g) Rotation: (%g, %g, %g)\n" % (actor_id, *values)
    text = file_info(carla_dir / SUPP878, show_all=True)
    assert line in text and " Brake: " in text and " Brake 0" not in text
    assert " Vehicle light animations: " in text and " None\n" in text
    # 0.9.10: `Rotation (` and `Brake `; PhysicsControl with the default gear switch time.
    data = (carla_dir / SR2020).read_bytes()
    bodies = [body for pid, body in packets(data) if pid == 6]
    actor_id, *values = struct.unpack_from("<I6f", bodies[1], 2)
    line = "  Id: %d Location: (%g, %g, %g) Rotation (%g, %g, %g)\n" % (actor_id, *values)
    text = file_info(carla_dir / SR2020, show_all=True)
    assert line in text and " Brake 0 " in text
    platform = next(body for pid, body in packets(data) if pid == 14)
    assert " Current platform time: %g\n" % struct.unpack("<d", platform) in text
    assert "   gear_switch_time = 0.5\n   clutch_strength = " in text
    torque = text.split("   torque_curve =")[1].split("\n")[0]
    xs = [float(point.split(",")[0].strip(" (")) for point in torque.split(")")[:-1]]
    assert xs == sorted(xs) and xs  # curves print sorted by rpm
    assert text.count(" Positions: ") == last_frame(data)[0]  # every section, every frame


def test_truncated_copy_repeats_the_last_section(carla_dir: Path, tmp_path: Path) -> None:
    # Cut a real file after the last frame's AnimVehicle packet, as a crashed 0.9.10
    # server leaves it (spec §9): CARLA prints that section twice.
    data = (carla_dir / SR2020).read_bytes()
    pos = read_header(data)[4]
    cut = None
    while pos + 5 <= len(data):
        pid, size = struct.unpack_from("<BI", data, pos)
        pos += 5 + size
        if pid == 8:
            cut = pos
    assert cut is not None
    path = tmp_path / "cut.log"
    path.write_bytes(data[:cut])
    text = file_info(path, show_all=True)
    section = text.rsplit(" Vehicle animations: ", 2)
    assert section[1] == section[2].split("\nFrames:")[0]
    assert file_info(path).endswith("\nFrames: %d\nDuration: %g seconds\n" % last_frame(data))


# ---------------------------------------------------------------- collisions


@pytest.mark.parametrize("name", ALL)
def test_collision_columns_byte_for_byte(carla_dir: Path, name: str) -> None:
    data = (carla_dir / name).read_bytes()
    text = collisions(carla_dir / name, "a", "a")
    assert text.startswith(head_text(data) + COLUMNS)
    assert COLUMNS.endswith("Actor 2" + " " * 28 + "\n")


def test_tkortz_collision_row(carla_dir: Path) -> None:
    text = collisions(carla_dir / TKORTZ, "v", "a")
    data = (carla_dir / TKORTZ).read_bytes()
    when = 0.0
    for pid, body in packets(data):
        if pid == 0:
            when = struct.unpack("<Qdd", body)[2]
        if pid == 5 and struct.unpack_from("<H", body)[0]:
            break
    row = (
        "%8.0f" % when + "   v v " + " " + "%6d" % 2763 + " " + "%-35s" % "vehicle.tesla.model3"
        + " " + "%6d" % 2768 + " " + "%-35s" % "vehicle.mini.cooperst" + "\n"
    )  # fmt: skip
    frame_id, elapsed = last_frame((carla_dir / TKORTZ).read_bytes())
    # After a row the stream stays fixed: Duration has no decimals.
    assert text.endswith(row + "\nFrames: %d\nDuration: %.0f seconds\n" % (frame_id, elapsed))
    assert "vehicle.tesla.model3" not in collisions(carla_dir / TKORTZ, "w", "a")


# ---------------------------------------------------------------- blocked


def f32(x: float) -> float:
    return float(np.float32(x))


def blocked_rows(data: bytes, min_time: float, min_distance: float) -> list[tuple[str, float]]:
    """Spec §7.6 re-implemented plainly; rows as text with their duration."""
    actors: dict[int, list[object]] = {}
    rows: list[tuple[str, float]] = []
    last_add = 0
    duration = elapsed = 0.0

    def text(t: float, actor_id: int, name: object, d: float) -> str:
        return "%8.0f %6d %-35s %10.0f\n" % (t, actor_id, name, d)

    for pid, body in packets(data):
        if pid == 0:
            _id, duration, elapsed = struct.unpack("<Qdd", body)
        elif pid == 2:
            for actor_id, _type, _loc, blueprint, _attrs in event_adds(body):
                actors[actor_id] = [blueprint, 0.0, 0.0, 0.0, 0.0, 0.0]
                last_add = actor_id
        elif pid == 3:
            for _ in range(struct.unpack_from("<H", body)[0]):
                actors.pop(last_add, None)
        elif pid == 6:
            for i in range(struct.unpack_from("<H", body)[0]):
                actor_id, x, y, z = struct.unpack_from("<I3f", body, 2 + 28 * i)
                state = actors.setdefault(actor_id, ["", 0.0, 0.0, 0.0, 0.0, 0.0])
                lx, ly, lz = (float(v) for v in state[1:4])  # type: ignore[arg-type]
                dx, dy, dz = f32(x - lx), f32(y - ly), f32(z - lz)
                dist = f32(np.sqrt(np.float32(f32(f32(dx * dx) + f32(dy * dy)) + f32(dz * dz))))
                if dist < min_distance:
                    if state[5] == 0:
                        state[4] = elapsed
                    state[5] = float(state[5]) + duration  # type: ignore[arg-type]
                else:
                    if float(state[5]) >= min_time:  # type: ignore[arg-type]
                        rows.append((text(state[4], actor_id, state[0], state[5]), state[5]))  # type: ignore[arg-type]
                    state[5] = 0.0
                    state[1:4] = [x, y, z]
    for actor_id, state in actors.items():
        if float(state[5]) >= min_time:  # type: ignore[arg-type]
            rows.append((text(state[4], actor_id, state[0], state[5]), state[5]))  # type: ignore[arg-type]
    return rows


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize(("min_time", "min_distance"), [(60.0, 100.0), (1.0, 100.0), (2.0, 5.0)])
def test_blocked_rows_recomputed(
    carla_dir: Path, name: str, min_time: float, min_distance: float
) -> None:
    data = (carla_dir / name).read_bytes()
    text = actors_blocked(carla_dir / name, min_time, min_distance)
    head = head_text(data) + "    Time     Id Actor" + " " * 33 + "Duration\n"
    assert text.startswith(head)
    frame_id, elapsed = last_frame(data)
    trailer = "\nFrames: %d\nDuration: %g seconds\n" % (frame_id, elapsed)
    assert text.endswith(trailer)
    printed = text[len(head) : -len(trailer)].splitlines(keepends=True)
    expected = blocked_rows(data, min_time, min_distance)
    assert sorted(printed) == sorted(row for row, _ in expected)
    # Longest first; equal durations keep their order of discovery (scan rows first).
    durations = {row: d for row, d in expected}
    assert [durations[row] for row in printed] == sorted(durations[row] for row in printed)[::-1]


def test_blocked_defaults_find_nothing_in_short_files(carla_dir: Path) -> None:
    # Every real file here is shorter than 60 s: the default query prints no row.
    for name in ALL:
        text = actors_blocked(carla_dir / name)
        assert text.split("Duration\n", 1)[1].startswith("\nFrames: ")


# ---------------------------------------------------------------- snapshots (in addition)

SNAPSHOTS = {
    TKORTZ: ("01be800a3260d2a5", "2a3bfd5fd9e1ef6f", "7488684653c62965", "62460398553b2d18"),
    SR2020: ("de6e05b86e444b06", "3a35049f47c0bd4e", "c63e6ba9ba4a2358", "7f17b05bb438c55d"),
    SR2021: ("25c809b5d823688b", "90bbc8bd975cdf23", "c89fc4f23ad768dd", "94b40ff802f3c72b"),
    SCENIC: ("b60bade58e60fc1a", "f42db25ef75befa2", "a9186d4910cd92d1", "3edfaded2eb91ee7"),
    SUPP878: ("c31eb705af996a7c", "b3c4606fdf014bb6", "2947ba280f945d1a", "d0d3f500a901ddaa"),
}


@pytest.mark.parametrize("name", ALL)
def test_snapshot_digests(carla_dir: Path, name: str) -> None:
    path = carla_dir / name
    texts = (
        file_info(path),
        file_info(path, show_all=True),
        collisions(path),
        actors_blocked(path, 1.0, 100.0),
    )
    digests = tuple(hashlib.sha256(text.encode()).hexdigest()[:16] for text in texts)
    assert digests == SNAPSHOTS[name]
