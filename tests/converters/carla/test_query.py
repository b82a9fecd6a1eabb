"""CARLA's query quirks on tiny recordings built byte by byte in the test.

Each recording is assembled here with `struct` (not with the codec), and each expected
line is written out by hand from spec §7, so these tests pin the behaviour CARLA users
see: the EventDel erase slip, the sticky `fixed` trailer, `(hero)` spacing, letters h/a,
id 0xFFFFFFFF, the blocked query's -1, the end-of-file re-run, label forms per release.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nanorec.cli import _register, app
from nanorec.converters.carla.query import (
    NOT_A_RECORDER,
    actors_blocked,
    actors_blocked_json,
    collisions,
    collisions_json,
    file_info,
    file_info_json,
    iter_file_info,
)
from tests.conftest import make_runner

DATE = 1599118659  # 09/03/20 07:37:39 UTC
HEAD = "Version: 1\nMap: Town01\nDate: 09/03/20 07:37:39\n\n"
COLLISION_COLUMNS = "    Time  Types     Id Actor 1" + " " * 33 + "Id Actor 2" + " " * 28 + "\n"
BLOCKED_COLUMNS = "    Time     Id Actor" + " " * 33 + "Duration\n"


# ---------------------------------------------------------------- byte builders


def fstring(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<H", len(raw)) + raw


def header(map_name: str = "Town01", date: int = DATE) -> bytes:
    return (
        struct.pack("<H", 1)
        + fstring("CARLA_RECORDER")
        + struct.pack("<q", date)
        + fstring(map_name)
    )


def packet(pid: int, body: bytes) -> bytes:
    return struct.pack("<BI", pid, len(body)) + body


def frame_start(frame_id: int, duration: float, elapsed: float) -> bytes:
    return packet(0, struct.pack("<Qdd", frame_id, duration, elapsed))


def frame_end() -> bytes:
    return packet(1, b"")


def counted(pid: int, records: list[bytes]) -> bytes:
    return packet(pid, struct.pack("<H", len(records)) + b"".join(records))


def add(actor_id: int, actor_type: int, blueprint: str, attrs: tuple[tuple[str, str], ...] = (),
        location: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> bytes:  # fmt: skip
    body = struct.pack("<IB3f3fI", actor_id, actor_type, *location, 0, 0, 0, 7) + fstring(blueprint)
    body += struct.pack("<H", len(attrs))
    for key, value in attrs:
        body += struct.pack("<B", 3) + fstring(key) + fstring(value)
    return body


def collision(cid: int, id1: int, id2: int, hero1: int = 0, hero2: int = 0) -> bytes:
    return struct.pack("<IIIBB", cid, id1, id2, hero1, hero2)


def position(actor_id: int, x: float, y: float, z: float, yaw: float = 0.0) -> bytes:
    return struct.pack("<I3f3f", actor_id, x, y, z, 0.0, 0.0, yaw)


def ue4_frame(
    frame_id: int,
    duration: float,
    elapsed: float,
    *,
    adds: list[bytes] | None = None,
    dels: list[int] | None = None,
    hits: list[bytes] | None = None,
    positions: list[bytes] | None = None,
    anims: list[bytes] | None = None,
    lights: list[bytes] | None = None,
    end: bool = True,
) -> bytes:
    """A 0.9.10-0.9.13 frame: 0 2 3 4 5 6 7 8 9 10 1."""
    return b"".join(
        [
            frame_start(frame_id, duration, elapsed),
            counted(2, adds or []),
            counted(3, [struct.pack("<I", i) for i in dels or []]),
            counted(4, []),
            counted(5, hits or []),
            counted(6, positions or []),
            counted(7, []),
            counted(8, anims or []),
            counted(9, []),
            counted(10, lights or []),
            frame_end() if end else b"",
        ]
    )


def write(tmp_path: Path, data: bytes, name: str = "rec.log") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def row(time: str, l1: str, l2: str, id1: int, name1: str, id2: int, name2: str) -> str:
    """A collision row, spelled out from spec §7.5's parts."""
    return (
        f"{time:>8}" + "   " + l1 + " " + l2 + " " + " " + f"{id1:>6}" + " " + f"{name1:<35}"
        + " " + f"{id2:>6}" + " " + f"{name2:<35}" + "\n"
    )  # fmt: skip


# ---------------------------------------------------------------- collisions


def test_eventdel_erases_the_last_added_actor(tmp_path: Path) -> None:
    data = header() + b"".join(
        [
            ue4_frame(1, 0.5, 0.0, adds=[add(10, 1, "vehicle.a"), add(11, 2, "walker.b")]),
            ue4_frame(2, 0.5, 0.5, dels=[10]),  # CARLA erases 11, the last added
            ue4_frame(3, -1.0, 1.0, hits=[collision(0, 10, 11)]),
        ]
    )
    path = write(tmp_path, data)
    text = collisions(path, "a", "a")
    # 10 is still known; 11 lost its entry: type 0 ('o') and no name.
    expected_row = row("1", "v", "o", 10, "vehicle.a", 11, "")
    assert text == HEAD + COLLISION_COLUMNS + expected_row + "\nFrames: 3\nDuration: 1 seconds\n"
    # The filter sees the same letters: the walker no longer matches 'w'.
    assert expected_row not in collisions(path, "v", "w")


def test_sticky_fixed_only_after_a_row(tmp_path: Path) -> None:
    frames = [
        ue4_frame(1, 0.75, 0.0, adds=[add(1, 1, "vehicle.x"), add(2, 1, "vehicle.y")]),
        ue4_frame(2, -1.0, 1.75, hits=[collision(0, 1, 2)]),
    ]
    path = write(tmp_path, header() + b"".join(frames))
    with_row = collisions(path, "v", "v")
    assert with_row.endswith("\nFrames: 2\nDuration: 2 seconds\n")  # %.0f of 1.75
    assert row("2", "v", "v", 1, "vehicle.x", 2, "vehicle.y") in with_row
    without = collisions(path, "w", "w")
    assert without == HEAD + COLLISION_COLUMNS + "\nFrames: 2\nDuration: 1.75 seconds\n"


def test_collision_lasting_several_frames_prints_once(tmp_path: Path) -> None:
    frames = [ue4_frame(1, 1.0, 0.0, adds=[add(1, 1, "v.a"), add(2, 1, "v.b")])]
    frames += [ue4_frame(i, 1.0, i - 1.0, hits=[collision(i, 1, 2)]) for i in (2, 3, 4)]
    frames += [ue4_frame(5, 1.0, 4.0), ue4_frame(6, -1.0, 5.0, hits=[collision(9, 1, 2)])]
    text = collisions(write(tmp_path, header() + b"".join(frames)))
    assert text.count(" v.a ") == 2  # frames 2 and 6 (a new start after a gap)
    assert row("1", "v", "v", 1, "v.a", 2, "v.b") in text
    assert row("5", "v", "v", 1, "v.a", 2, "v.b") in text


def test_letters_h_and_a_for_types_4_and_5_and_invalid_id(tmp_path: Path) -> None:
    frames = [
        ue4_frame(
            1, 1.0, 0.0, adds=[add(3, 4, "traffic.stop"), add(4, 5, "sensor.other.collision")]
        ),
        ue4_frame(2, 1.0, 1.0, hits=[collision(0, 3, 4), collision(1, 4, 0xFFFFFFFF)]),
        ue4_frame(3, -1.0, 2.0),
    ]
    path = write(tmp_path, header() + b"".join(frames))
    text = collisions(path, "a", "a", family="0.9.10-0.9.13")
    assert row("1", "h", "a", 3, "traffic.stop", 4, "sensor.other.collision") in text
    assert row("1", "a", "o", 4, "sensor.other.collision", 4294967295, "") in text
    # 'h' matches a type-4 actor through its letter, without any hero flag.
    assert "traffic.stop" in collisions(path, "h", "a")
    assert "traffic.stop" not in collisions(path, "v", "a")


def test_hero_filter_uses_the_flag(tmp_path: Path) -> None:
    frames = [
        ue4_frame(1, 1.0, 0.0, adds=[add(1, 1, "vehicle.hero"), add(2, 2, "walker.w")]),
        ue4_frame(2, -1.0, 1.0, hits=[collision(0, 1, 2, hero1=1)]),
    ]
    path = write(tmp_path, header() + b"".join(frames))
    assert row("1", "v", "w", 1, "vehicle.hero", 2, "walker.w") in collisions(path, "h", "w")
    assert "vehicle.hero" not in collisions(path, "w", "h")
    document = collisions_json(path, "h", "w")
    assert document["rows"][0]["actor1"] == {"id": 1, "blueprint": "vehicle.hero", "hero": True}
    assert document["duration"] == 1.0 and document["frames"] == 2


def test_end_of_file_rerun_repeats_a_last_collision_packet(tmp_path: Path) -> None:
    # A crashed recording ending right after a Collision packet: CARLA's loop handles the
    # packet a second time with the stale record, and prints the row again.
    frames = [
        ue4_frame(1, 1.0, 0.0, adds=[add(1, 1, "v.a"), add(2, 1, "v.b")]),
        frame_start(2, -1.0, 1.0) + counted(2, []) + counted(3, []) + counted(4, [])
        + counted(5, [collision(0, 1, 2)]),
    ]  # fmt: skip
    path = write(tmp_path, header() + b"".join(frames))
    text = collisions(path)
    assert text.count(row("1", "v", "v", 1, "v.a", 2, "v.b")) == 2
    assert len(collisions_json(path)["rows"]) == 1  # the document keeps the facts


# ---------------------------------------------------------------- file info


def test_info_hero_spacing_and_events(tmp_path: Path) -> None:
    frames = [
        ue4_frame(
            1, 0.5, 0.0,
            adds=[add(10, 1, "vehicle.a", (("role_name", "hero"), ("object_type", "")),
                      location=(1.5, -2.25, 0.1))],
        ),
        ue4_frame(2, 0.5, 0.5, hits=[collision(5, 10, 11, hero1=1), collision(6, 11, 10, hero2=1)]),
        ue4_frame(3, -1.0, 1.0, dels=[10]),
    ]  # fmt: skip
    text = file_info(write(tmp_path, header() + b"".join(frames)))
    assert text == (
        HEAD
        + "Frame 1 at 0 seconds\n"
        + " Create 10: vehicle.a (1) at (1.5, -2.25, 0.1)\n"
        + "  role_name = hero\n"
        + "  object_type = \n"
        + "Frame 2 at 0.5 seconds\n"
        + " Collision id 5 between 10 (hero)  with 11\n"
        + " Collision id 6 between 11 with 10 (hero) \n"
        + "Frame 3 at 1 seconds\n"
        + " Destroy 10\n"
        + "\nFrames: 3\nDuration: 1 seconds\n"
    )


def test_show_all_labels_by_family_and_override(tmp_path: Path) -> None:
    anim = struct.pack("<I3fBi", 7, 0.25, 1.0, 0.5, 0, 3)
    lights = [struct.pack("<II", 7, 0), struct.pack("<II", 7, 0x100 | 0x80 | 0x1)]
    frames = [
        ue4_frame(1, 0.5, 0.0, positions=[position(7, 1.0, 2.0, 3.0, 90.0)], anims=[anim],
                  lights=lights),
        ue4_frame(2, -1.0, 0.5),
    ]  # fmt: skip
    path = write(tmp_path, header() + b"".join(frames))
    old = file_info(path, show_all=True)
    assert "  Id: 7 Location: (1, 2, 3) Rotation (0, 0, 90)\n" in old
    assert "  Id: 7 Steering: 0.25 Throttle: 1 Brake 0.5 Handbrake: 0 Gear: 3\n" in old
    assert "  Id: 7 None\n  Id: 7 Position Interior Fog\n" in old  # Interior before Fog
    # Every section header, even empty, and the frame line of an empty frame.
    assert "Frame 2 at 0.5 seconds\n Positions: 0\n State traffic lights: 0\n" in old
    assert " Walker animations: 0\n Vehicle light animations: 0\n\nFrames: 2\n" in old
    new = file_info(path, show_all=True, labels="new")
    assert "  Id: 7 Location: (1, 2, 3) Rotation: (0, 0, 90)\n" in new
    assert " Brake: 0.5 " in new
    assert file_info(path, show_all=True, family="0.9.15") == file_info(
        path, show_all=True, family="0.9.10-0.9.13", labels="new"
    )


def test_windows_rounding_and_timezone(tmp_path: Path) -> None:
    frames = [ue4_frame(1, -1.0, 0.0, adds=[add(1, 1, "v", location=(-9144.125, 0.0, 0.0))])]
    path = write(tmp_path, header() + b"".join(frames))
    assert " at (-9144.12, 0, 0)\n" in file_info(path)
    assert " at (-9144.13, 0, 0)\n" in file_info(path, windows=True)
    assert "Date: 09/03/20 09:37:39\n" in file_info(path, tz="Europe/Berlin")


def test_form_2026_frame_end_newline_and_vehicle_door(tmp_path: Path) -> None:
    def frame(frame_id: int, duration: float, elapsed: float, doors: list[bytes]) -> bytes:
        return b"".join(
            [
                frame_start(frame_id, duration, elapsed),
                packet(20, struct.pack("<d", 100.0)),
                counted(2, []), counted(3, []), counted(4, []), counted(5, []),
                counted(23, doors),
                counted(6, []), counted(7, []), counted(8, []), counted(9, []), counted(10, []),
                counted(21, []), counted(22, []),
                frame_end(),
            ]
        )  # fmt: skip

    doors = [struct.pack("<IBB", 5, 0, 1), struct.pack("<IBB", 5, 9, 1)]
    data = header() + frame(1, 0.5, 0.0, doors) + frame(2, -1.0, 0.5, [])
    path = write(tmp_path, data)
    text = file_info(path, show_all=True, family="0.9.16")
    # An unknown door value leaves the line open; the next section follows directly.
    assert (
        " Vehicle door animations: 2\n  Id: 5\n  Doors opened:  Front Left \n"
        "  Id: 5\n  Doors opened:  Positions: 0\n"
    ) in text
    assert file_info(path, family="0.9.16") == HEAD + "\nFrames: 2\nDuration: 0.5 seconds\n"
    # 2026 ue4-dev: a newline per FrameEnd, and once more for the re-run of the last one.
    assert (
        file_info(path, family="ue4-dev-2026")
        == HEAD + "\n\n\n\nFrames: 2\nDuration: 0.5 seconds\n"
    )


def test_old_forms_print_unknown_ids_and_parent_twice(tmp_path: Path) -> None:
    frames = frame_start(1, -1.0, 0.0) + counted(4, [struct.pack("<II", 8, 9)]) + packet(8, b"\0\0")
    data = header() + frames + frame_end()
    path = write(tmp_path, data)
    text = file_info(path, form="0.9.5")
    offset = len(header()) + 29 + 5 + 10 + 5  # body of the id-8 packet
    assert " Parenting 8 with 8 (parent)\n" in text
    assert f"Unknown packet id: \x08 at offset {offset}\n" in text
    assert " Parenting 8 with 9 (parent)\n" in file_info(path, form="0.9.6")


def test_file_cut_in_its_first_frame_keeps_the_0_9_6_form(tmp_path: Path) -> None:
    # A server that died in frame 1 leaves no AnimVehicle/AnimWalker yet: that proves
    # nothing about 0.9.4/0.9.5 (spec §3.2: 0.9.6+ writes them in *every* frame, so only a
    # complete frame without them does), and the hidden set is 0.9.6+.
    frame = frame_start(1, -1.0, 0.0) + counted(2, [add(9, 0, "sensor.x"), add(6, 1, "v.a")])
    frame += counted(3, []) + counted(4, [struct.pack("<II", 9, 6)]) + counted(5, [])
    frame += counted(6, [position(6, 1.0, 2.0, 3.0)])
    path = write(tmp_path, header() + frame)
    assert " Parenting 9 with 6 (parent)\n" in file_info(path)
    assert "  Id: 6 Location: (1, 2, 3) Rotation (0, 0, 0)\n" in file_info(path, show_all=True)
    # A complete frame without animation packets is 0.9.4/0.9.5 (the 0.9.5 form).
    path = write(tmp_path, header() + frame + frame_end())
    assert " Parenting 9 with 9 (parent)\n" in file_info(path)


def test_rerun_repeats_the_last_fixed_packet_in_show_all(tmp_path: Path) -> None:
    # The real 0.9.10/0.9.11 crash file ends right after an AnimVehicle packet (spec §9).
    anim = struct.pack("<I3fBi", 7, 0.5, 0.0, 0.0, 0, 1)
    data = header() + ue4_frame(1, 0.5, 0.0) + frame_start(2, -1.0, 0.5) + counted(8, [anim])
    path = write(tmp_path, data)
    line = "  Id: 7 Steering: 0.5 Throttle: 0 Brake 0 Handbrake: 0 Gear: 1\n"
    text = file_info(path, show_all=True)
    assert text.endswith(
        "Frame 2 at 0.5 seconds\n Vehicle animations: 1\n" + line
        + " Vehicle animations: 1\n" + line + "\nFrames: 2\nDuration: 0.5 seconds\n"
    )  # fmt: skip
    assert file_info(path) == HEAD + "\nFrames: 2\nDuration: 0.5 seconds\n"


def test_rerun_of_a_last_walker_bones_packet(tmp_path: Path) -> None:
    # 0.9.14+ with additional data: WalkerBones is back-patched, so a crashed server's
    # file ends right after it (spec §9); the end-of-file re-run handles it again with the
    # stale `Total` (§7.7): with no walkers that is its header and empty line once more.
    def frame(frame_id: int, duration: float, elapsed: float) -> bytes:
        return b"".join(
            [
                frame_start(frame_id, duration, elapsed), packet(20, struct.pack("<d", 1.0)),
                counted(2, []), counted(3, []), counted(4, []), counted(5, []),
                counted(6, []), counted(7, []), counted(8, []), counted(9, []), counted(10, []),
                counted(21, []), counted(22, []), counted(13, []),
                packet(14, struct.pack("<d", 0.25)), counted(19, []),
            ]
        )  # fmt: skip

    data = header() + frame(1, 0.5, 0.0) + frame_end() + frame(2, -1.0, 0.5)
    tail = " Current platform time: 0.25\n Walkers Bones: 0\n\n"
    end = "\nFrames: 2\nDuration: 0.5 seconds\n"
    text = file_info(write(tmp_path, data), show_all=True, family="0.9.15")
    assert text.endswith(tail + " Walkers Bones: 0\n\n" + end)
    # Cut inside the next header: its id byte (19 here) was read, the size was not.
    cut = data.rsplit(counted(19, []), 1)[0] + b"\x13\x02"
    text = file_info(write(tmp_path, cut), show_all=True, family="0.9.15")
    assert text.endswith(" Current platform time: 0.25\n Walkers Bones: 0\n\n" + end)


def test_cut_inside_a_packet_overlays_the_previous_record(tmp_path: Path) -> None:
    first = position(7, 1.0, 2.0, 3.0)
    second = position(8, 4.0, 5.0, 6.0)
    cut = counted(6, [first, second])[:-22]  # keeps the id and half of x of record 2
    data = header() + frame_start(1, -1.0, 0.0) + cut
    text = file_info(write(tmp_path, data), show_all=True, family="0.9.10-0.9.13")
    # Record 2: id 8 read, then 2 bytes of x over record 1's x; y, z, rotation stale.
    x = struct.unpack("<f", struct.pack("<f", 4.0)[:2] + struct.pack("<f", 1.0)[2:])[0]
    assert f"  Id: 8 Location: ({x:g}, 2, 3) Rotation (0, 0, 0)\n" in text
    assert text.endswith("\nFrames: 1\nDuration: 0 seconds\n")


def test_not_a_recorder_and_empty_files(tmp_path: Path) -> None:
    junk = write(tmp_path, b"\x01\x00\x0e\x00CARLA_RECORDEX" + b"\0" * 20, "junk.log")
    assert file_info(junk) == NOT_A_RECORDER
    assert collisions(junk) == NOT_A_RECORDER
    assert actors_blocked(junk) == NOT_A_RECORDER
    assert file_info(write(tmp_path, b"", "empty.log")) == NOT_A_RECORDER
    bare = write(tmp_path, header(), "bare.log")
    assert file_info(bare) == HEAD + "\nFrames: 0\nDuration: 0 seconds\n"
    # The zeroed query header reads as a FrameStart at end of file: show_all prints it.
    assert (
        file_info(bare, show_all=True)
        == HEAD + "Frame 0 at 0 seconds\n\nFrames: 0\nDuration: 0 seconds\n"
    )


# ---------------------------------------------------------------- actors blocked


def test_blocked_counts_minus_one_for_the_last_frame(tmp_path: Path) -> None:
    adds = [add(1, 1, "vehicle.still"), add(2, 1, "vehicle.mover")]
    start = [position(1, 500.0, 0.0, 0.0), position(2, 0.0, 0.0, 0.0)]
    frames = [ue4_frame(1, 0.5, 0.0, adds=adds, positions=start)]
    for i in range(2, 8):  # frames 2..7 of 0.5 s; vehicle 2 moves 2 m per frame
        last = i == 7
        frames.append(
            ue4_frame(i, -1.0 if last else 0.5, 0.5 * (i - 1),
                      positions=[position(1, 500.0, 0.0, 0.0), position(2, 200.0 * i, 0.0, 0.0)])
        )  # fmt: skip
    path = write(tmp_path, header() + b"".join(frames))
    # Vehicle 1 moved away from the origin in frame 1 and stopped from frame 2 (0.5 s):
    # durations 0.5 x 5 (frames 2-6) and -1 (frame 7) = 1.5 s.
    text = actors_blocked(path, 1.0, 100.0)
    assert text == (
        HEAD + BLOCKED_COLUMNS
        + f"{'0':>8} {1:>6} {'vehicle.still':<35} {'2':>10}\n"
        + "\nFrames: 7\nDuration: 3 seconds\n"
    )  # fmt: skip
    document = actors_blocked_json(path, 1.0, 100.0)
    assert document["rows"] == [
        {"time": 0.5, "id": 1, "blueprint": "vehicle.still", "duration": 1.5, "until_end": True}
    ]
    assert actors_blocked(path, 1.6, 100.0).count("vehicle.still") == 0


def test_blocked_row_when_an_actor_moves_again_and_eventdel_slip(tmp_path: Path) -> None:
    frames = [ue4_frame(1, 1.0, 0.0, adds=[add(1, 1, "vehicle.a"), add(2, 1, "vehicle.b")],
                        positions=[position(1, 500.0, 0.0, 0.0)])]  # fmt: skip
    for i in range(2, 6):
        frames.append(ue4_frame(i, 1.0, i - 1.0, positions=[position(1, 500.0, 0.0, 0.0)]))
    frames.append(ue4_frame(6, 1.0, 5.0, positions=[position(1, 900.0, 0.0, 0.0)], dels=[1]))
    frames.append(ue4_frame(7, -1.0, 6.0, positions=[position(2, 0.5, 0.0, 0.0)]))
    path = write(tmp_path, header() + b"".join(frames))
    text = actors_blocked(path, 2.0, 10.0, hash_order="file")
    # Vehicle 1 stopped from frame 2 (1 s) for 4 frames, then moved in frame 6.
    assert f"{'1':>8} {1:>6} {'vehicle.a':<35} {'4':>10}\n" in text
    # EventDel 1 erased vehicle 2 (the last added); its first position near the origin
    # then counts as stopped, but only for the -1 of the last frame: no row.
    assert "vehicle.b" not in text


def test_blocked_event_packets_read_from_a_failed_stream(tmp_path: Path) -> None:
    # Vehicle 1 stops at x=500 from frame 2; the file is cut inside a header whose id byte
    # is read (spec §7.7: the size read fails, the packet is handled with a failed
    # stream and the stale `Total`, here the last Position count 1).
    adds = [add(2, 1, "vehicle.b"), add(1, 1, "vehicle.a")]
    frames = [ue4_frame(1, 1.0, 0.0, adds=adds, positions=[position(1, 500.0, 0.0, 0.0)])]
    frames += [
        ue4_frame(i, 1.0, i - 1.0, positions=[position(1, 500.0, 0.0, 0.0)]) for i in range(2, 6)
    ]
    base = header() + b"".join(frames) + frame_start(6, -1.0, 5.0)
    row = f"{'1':>8} {1:>6} {'vehicle.a':<35} {'4':>10}\n"
    assert row in actors_blocked(write(tmp_path, base), 2.0, 10.0)
    # EventAdd read again: the member still holds actor 1 (the last added); its blueprint
    # string reads empty, and `Actors[1]` is reset: no row any more.
    assert "vehicle.a" not in actors_blocked(write(tmp_path, base + b"\x02\x10"), 2.0, 10.0)
    # EventDel read again: erases the last added actor (the erase slip), no row either.
    assert "vehicle.a" not in actors_blocked(write(tmp_path, base + b"\x03"), 2.0, 10.0)
    # At min_time 0 the reset entry itself prints, with the empty blueprint.
    text = actors_blocked(write(tmp_path, base + b"\x02"), 0.0, 10.0, hash_order="file")
    assert f"{'0':>8} {1:>6} {'':<35} {'0':>10}\n" in text


# ---------------------------------------------------------------- JSON and CLI


def test_info_json_document(tmp_path: Path) -> None:
    frames = [
        ue4_frame(1, 0.5, 0.0, adds=[add(1, 1, "vehicle.a", (("role_name", "hero"),))]),
        ue4_frame(2, -1.0, 0.5, dels=[1], hits=[collision(0, 1, 2)]),
    ]
    document = file_info_json(write(tmp_path, header() + b"".join(frames)))
    assert document["frames"] == 2 and document["duration"] == 0.5
    assert document["header"]["map"] == "Town01" and document["header"]["date"] == DATE
    actor = document["actors"][0]
    assert actor["blueprint"] == "vehicle.a" and actor["type"] == 1
    assert actor["attributes"] == [{"type": 3, "id": "role_name", "value": "hero"}]
    assert (actor["created_frame"], actor["destroyed_frame"], actor["destroyed_time"]) == (
        1,
        2,
        0.5,
    )
    assert document["packets"]["frame_start"] == 2 and document["collisions"] == 1
    assert document["truncated"] is None
    json.dumps(document, allow_nan=False)


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    _register()
    return make_runner()


def test_cli_text_json_and_errors(tmp_path: Path, runner: CliRunner) -> None:
    frames = [ue4_frame(1, -1.0, 0.0, adds=[add(1, 1, "vehicle.a")])]
    path = write(tmp_path, header() + b"".join(frames))
    result = runner.invoke(app, ["info", str(path)])
    assert result.exit_code == 0 and result.stdout == file_info(path)
    result = runner.invoke(app, ["collisions", str(path), "--type1", "v", "--type2", "a"])
    assert result.exit_code == 0 and result.stdout == collisions(path, "v", "a")
    result = runner.invoke(app, ["blocked", str(path), "--min-time", "1", "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout)["rows"] == []
    junk = write(tmp_path, b"not a recording", "junk.log")
    result = runner.invoke(app, ["info", str(junk)])  # no format takes it
    assert result.exit_code == 2 and "not a recording nanorec knows" in result.stderr
    result = runner.invoke(app, ["carla", "info", str(junk)])  # CARLA's own answer
    assert result.exit_code == 2 and result.stdout == NOT_A_RECORDER
    assert result.stderr.count("\n") == 1 and "not a CARLA recorder" in result.stderr
    for args in (
        ["info", str(tmp_path / "missing.log")],
        ["info", str(path), "--tz", "Nowhere/Land"],
        ["info", str(path), "--labels", "middle"],
        ["info", str(path), "--family", "0.9.99"],
        ["collisions", str(path), "--type1", "x"],
        ["blocked", str(path), "--hash-order", "java"],
        ["info", str(junk), "--json"],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, args
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("nanorec: "), args


@pytest.mark.parametrize("command", ["info", "collisions", "blocked"])
def test_cli_help_has_an_example(runner: CliRunner, command: str) -> None:
    result = runner.invoke(app, [command, "--help"])
    assert result.exit_code == 0 and f"Example: nanorec {command}" in result.stdout


def test_text_streams_in_chunks(tmp_path: Path) -> None:
    frames = [
        ue4_frame(i, 0.5, 0.5 * (i - 1), positions=[position(1, i, 0.0, 0.0)])
        for i in range(1, 3000)
    ]
    path = write(tmp_path, header() + b"".join(frames))
    chunks = list(iter_file_info(path, show_all=True))
    assert len(chunks) > 3 and max(map(len, chunks)) < 1 << 18
