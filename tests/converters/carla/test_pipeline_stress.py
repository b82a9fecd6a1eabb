"""Stress tests of the whole CARLA pipeline: convert, export, seek, clip, CLI.

Every release family (with and without additional data, whole and crashed) and a ladder
of hand-built edge cases go through the same checks:

- convert -> export gives back the exact bytes (and `identical` says so);
- `rec.frame(n)` equals a plain sequential replay (`replay_reference.py`) at every frame;
- a clip of random frame ranges has the original's world state frame by frame;
- the CLI (`roundtrip`, `info`, `collisions`, `blocked`) agrees on a file and its archive.

Hand-built files use `carla_bytes` (struct only, straight from the spec), so what is
checked is the spec's reading and not the codec's own. The default run takes a few
seconds; `NANOREC_STRESS=1` runs the exhaustive version (more frames, every crash mode
with the CLI, every byte offset of the last frames of every family).
"""

from __future__ import annotations

import math
import os
import random
import struct
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

from converters.carla.clip import export_clip
from converters.carla.convert import ConvertReport, convert, export
from converters.carla.ids import FAMILIES, Family, Kind
from converters.carla.recording import CarlaRecording
from converters.carla.world import World
from tests.converters.carla import carla_bytes as cb
from tests.converters.carla.replay_reference import Snapshot, replay
from tests.converters.carla.test_convert import _state_key

STRESS = os.environ.get("NANOREC_STRESS") == "1"

Vec = tuple[float, float, float]


# ----------------------------------------------------------------------------- checks


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def _same_tuple(a: Iterable[float], b: Iterable[float]) -> bool:
    return all(_same(x, y) for x, y in zip(a, b, strict=True))


def assert_world_is_replay(world: World, snap: Snapshot) -> None:
    """`assert_world_matches` of test_convert, with NaN equal to NaN (damaged files)."""
    assert world.frame_id == snap.frame_id
    assert _same(world.elapsed, snap.elapsed)
    assert sorted(world.actors) == sorted(snap.actors)
    for actor_id, expected in snap.actors.items():
        actor = world.actors[actor_id]
        assert actor.type_id == expected["type_id"], actor_id
        assert dict(actor.attributes) == expected["attributes"], actor_id
        assert actor.parent_id == expected["parent_id"], actor_id
        assert _same_tuple(actor.location, expected["location"]), actor_id
        assert _same_tuple(actor.rotation, expected["rotation"]), actor_id
    lights = {
        i: (int(t.state), t.is_frozen, t.elapsed_time)
        for i, t in world.traffic_lights.items()
        if t.state is not None
    }
    assert lights == snap.traffic_lights


def _vector(family: str) -> str:
    return "f" if FAMILIES[family].vector_size == 12 else "d"


def check_pipeline(
    data: bytes,
    work: Path,
    *,
    clips: int = 3,
    seed: int = 0,
    family: str | None = None,
) -> ConvertReport:
    """Convert `data`, export it back, compare every frame with the replay, cut clips."""
    source = work / "source.log"
    source.write_bytes(data)
    archive = work / "source.nanover.zip"
    report = convert(source, archive, family=family, overwrite=True)
    back = work / "back.log"
    assert export(archive, back, overwrite=True).identical is True
    assert back.read_bytes() == data
    snapshots = list(replay(data, vector=_vector(report.family)))
    with CarlaRecording.open(archive) as rec:
        assert len(rec) == report.frames
        # Every complete frame is a message; an unterminated last one stays raw bytes.
        assert len(rec) == len(snapshots)
        for index, snap in enumerate(snapshots):
            assert_world_is_replay(rec.frame(index), snap)
        picks = random.Random(seed)
        for _ in range(clips if len(rec) else 0):
            start = picks.randrange(len(rec))
            stop = picks.randrange(start + 1, len(rec) + 1)
            assert_clip_keeps_world(rec, work / "clip.log", start, stop)
    return report


def assert_clip_keeps_world(rec: CarlaRecording, path: Path, start: int, stop: int) -> None:
    export_clip(rec, path, start=start, stop=stop, overwrite=True)
    with CarlaRecording.open(path) as clip:
        assert len(clip) == stop - start
        for k in range(stop - start):
            assert _state_key(clip.frame(k)) == _state_key(rec.frame(start + k)), (start, k)


# --------------------------------------------------------------------- hand-built files


def _pose(actor_id: int, x: float) -> tuple[int, Vec, Vec]:
    return actor_id, (x, 2.0, 3.0), (0.0, 1.0, x)


def _vehicle(
    actor_id: int, blueprint: str | bytes = "vehicle.audi.tt", attributes: Sequence[Any] = ()
) -> tuple[Any, ...]:
    attrs = list(attributes) or [(3, "role_name", "autopilot")]
    return (actor_id, 1, (1.0, 2.0, 3.0), (0.0, 0.0, 45.0), 5, blueprint, attrs)


def hand_frame(
    family: Family,
    frame_id: int,
    elapsed: float,
    *,
    adds: Sequence[tuple[Any, ...]] = (),
    dels: Sequence[int] = (),
    parents: Sequence[tuple[int, int]] = (),
    poses: Sequence[tuple[int, Vec, Vec]] = (),
    states: Sequence[tuple[int, int, float, int]] = (),
    duration: float = 0.05,
) -> list[tuple[int, bytes]]:
    """One frame of `family` in its write order: (packet id, body) pairs."""
    e = family.engine
    bodies: dict[Kind, bytes] = {
        Kind.FRAME_START: cb.frame_start(frame_id, duration, elapsed),
        Kind.FRAME_END: b"",
        Kind.EVENT_ADD: cb.counted([cb.actor_add(e, *add) for add in adds]),
        Kind.EVENT_DEL: cb.counted([cb.event_del(i) for i in dels]),
        Kind.EVENT_PARENT: cb.counted([cb.event_parent(c, p) for c, p in parents]),
        Kind.POSITION: cb.counted([cb.position(e, *pose) for pose in poses]),
        Kind.STATE: cb.counted([cb.state(*s) for s in states]),
        Kind.VISUAL_TIME: cb.single("<d", 100.0 + frame_id),
        Kind.PLATFORM_TIME: cb.single("<d", 0.5 * frame_id),
    }
    packets = []
    for item in family.order:
        if item.kind in bodies:
            packets.append((family.id_of(item.kind), bodies[item.kind]))
        elif item.always:
            packets.append((family.id_of(item.kind), cb.counted([])))
    return packets


def hand_file(frames: Iterable[Sequence[tuple[int, bytes]]], prelude: bytes = b"") -> bytes:
    return (
        cb.header()
        + prelude
        + b"".join(b"".join(cb.packet(pid, body) for pid, body in f) for f in frames)
    )


def _insert_after(frame: list[tuple[int, bytes]], pid: int, extra: tuple[int, bytes]) -> None:
    """Insert `extra` just after the first packet of id `pid` in `frame`."""
    at = next(i for i, (p, _) in enumerate(frame) if p == pid)
    frame.insert(at + 1, extra)


EDGE_FAMILIES = ["0.9.4-0.9.9", "0.9.16", "ue5-0.10"]


@pytest.mark.parametrize("name", EDGE_FAMILIES)
def test_duplicated_packets_export_exactly(name: str, tmp_path: Path) -> None:
    """A second packet of a kind in one frame (after an empty first one, or two empty
    ones, or a second FrameEnd) is carried raw, and export gives the file back."""
    family = FAMILIES[name]
    e = family.engine
    frames = [
        hand_frame(family, k + 1, 0.05 * k, adds=[_vehicle(10)] if k == 0 else (), poses=[])
        for k in range(5)
    ]
    _insert_after(frames[1], 2, (2, cb.counted([cb.actor_add(e, *_vehicle(11))])))
    _insert_after(frames[2], 3, (3, cb.counted([])))  # two empty EventDel
    frames[3].append((1, b""))  # two FrameEnds
    _insert_after(frames[4], 6, (6, cb.counted([cb.position(e, *_pose(10, 9.0))])))
    data = hand_file(frames)
    report = convert(_write(tmp_path / "dup.log", data), tmp_path / "dup.zip")
    assert report.raw_packets == {2: 1, 3: 1, 1: 1, 6: 1}
    back = tmp_path / "back.log"
    assert export(tmp_path / "dup.zip", back).identical is True
    assert back.read_bytes() == data


def test_non_utf8_strings_convert_and_seek(tmp_path: Path) -> None:
    """Blueprint and attribute strings that are not UTF-8 (or hold a NUL) survive convert,
    export, seeking and clips."""
    family = FAMILIES["0.9.16"]
    odd = _vehicle(
        10,
        b"vehicle.\xff\xfe\x00x",
        [(3, b"role\xc3", b"\xe9t\xe9"), (3, "ok", b"a\x00b"), (4, "color", "1,2,3")],
    )
    frames = [
        hand_frame(family, 1, 0.0, adds=[odd, _vehicle(11)], poses=[_pose(10, 1.0)]),
        hand_frame(family, 2, 0.05, parents=[(11, 10)], poses=[_pose(10, 2.0)]),
        hand_frame(family, 3, 0.1, poses=[_pose(10, 3.0)]),
    ]
    check_pipeline(hand_file(frames), tmp_path, clips=3)


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _u16(value: int) -> bytes:
    return struct.pack("<H", value)


NANOVER_CASES: dict[str, list[dict[str, Any]]] = {
    "parent event for an actor not alive yet": [
        dict(adds=[_vehicle(10)], parents=[(20, 10)]),
        dict(adds=[_vehicle(20)]),
        dict(),
    ],
    "re-added while attached": [
        dict(adds=[_vehicle(10), _vehicle(11)], parents=[(11, 10)]),
        dict(adds=[_vehicle(11, "vehicle.tesla.model3")]),
        dict(),
    ],
    "re-added and attached again": [
        dict(adds=[_vehicle(10), _vehicle(11)], parents=[(11, 10)]),
        dict(adds=[_vehicle(11, "vehicle.tesla.model3")], parents=[(11, 10)]),
        dict(),
    ],
    "parent destroyed, child re-spawned": [
        dict(adds=[_vehicle(10), _vehicle(11)], parents=[(11, 10)]),
        dict(dels=[10, 11]),
        dict(adds=[_vehicle(11)]),
        dict(),
    ],
    "spawned, attached and destroyed in one frame": [
        dict(adds=[_vehicle(10), _vehicle(11)], dels=[11], parents=[(11, 10)]),
        dict(adds=[_vehicle(11)]),
    ],
}


@pytest.mark.parametrize("case", NANOVER_CASES)
def test_nanover_state_follows_the_world(case: str, tmp_path: Path) -> None:
    """NanoVer's `iter_states_full` (actor.<id>, parent.<id>) equals `rec.frame(n)`."""
    from tests.container.nanover_reference import NanoverRecordingReader

    family = FAMILIES["0.9.16"]
    frames = [hand_frame(family, k + 1, 0.05 * k, **s) for k, s in enumerate(NANOVER_CASES[case])]
    source = _write(tmp_path / "a.log", hand_file(frames))
    archive = tmp_path / "a.zip"
    convert(source, archive)
    with CarlaRecording.open(archive) as rec, NanoverRecordingReader.from_path(archive) as nv:
        for entry, state in nv.iter_states_full():
            index = rec.reader.index_at_time(entry.metadata["timestamp"])
            assert index is not None
            world = rec.frame(index)
            live = {int(key[6:]): value for key, value in state.items() if key[:6] == "actor."}
            assert live == {i: a.type_id for i, a in world.actors.items()}, index
            parents = {int(key[7:]): v for key, v in state.items() if key[:7] == "parent."}
            expected = {i: a.parent_id for i, a in world.actors.items() if a.parent_id is not None}
            assert parents == expected, index


@pytest.mark.parametrize("name", EDGE_FAMILIES)
def test_last_frame_with_a_packet_after_frame_end(name: str, tmp_path: Path) -> None:
    """A user packet after the last FrameEnd does not make the last frame incomplete:
    it is a frame like the same shape in mid-file (the replay counts it), and a clip
    ending on such a frame keeps all its frames."""
    family = FAMILIES[name]
    frames = [
        hand_frame(family, k + 1, 0.05 * k, adds=[_vehicle(10)] if k == 0 else (), poses=[])
        for k in range(4)
    ]
    for frame in frames:
        frame.append((139, b"DReyeVR"))
    frames[2].append((100, b""))
    report = check_pipeline(hand_file(frames), tmp_path, clips=0)
    assert report.frames == 4 and report.truncation is None and report.tail_bytes == 0
    with CarlaRecording.open(tmp_path / "source.nanover.zip") as rec:
        for start, stop in [(0, 4), (1, 3), (3, 4)]:
            assert_clip_keeps_world(rec, tmp_path / "clip.log", start, stop)
