"""RecordingWriter: exact bytes built by hand, frame timing, family order, refusals, crashes."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import numpy as np
import pytest

from nanorec.converters.carla.frame_writer import BACK_PATCHED, DEFAULT_DATE
from nanorec.converters.carla.geometry import (
    carla_delta,
    elapsed_times,
    normalize_rotation,
    quaternion_from_rotation,
    rotation_from_quaternion,
    wrap_degrees,
)
from nanorec.converters.carla.ids import (
    ADDITIONAL_DATA,
    FAMILIES,
    ActorType,
    Engine,
    Family,
    Kind,
    family,
)
from nanorec.converters.carla.records import (
    ActorAdd,
    Attribute,
    VehicleWheels,
    WalkerBones,
    fixed_dtype,
)
from nanorec.converters.carla.rows import default_physics_control
from nanorec.converters.carla.writer import RecordingWriter
from nanorec.errors import FormatError, OutputExistsError, UnsupportedError

HEADER_TOWN01 = bytes.fromhex(
    "0100"  # version 1
    "0e00" + b"CARLA_RECORDER".hex() + "00f1536500000000"  # magic, date 1_700_000_000
    "0600" + b"Town01".hex()
)
# Spec §3.2 "Empty frame, CARLA 0.9.16": frame 1, duration -1 (last frame), elapsed 0,
# visual time 0 (the writer's default is the frame's elapsed time).
EMPTY_FRAME_0916 = bytes.fromhex(
    "00 18000000 0100000000000000 000000000000f0bf 0000000000000000"  # FrameStart
    "14 08000000 0000000000000000"  # VisualTime (20)
    "02 02000000 0000"  # EventAdd
    "03 02000000 0000"  # EventDel
    "04 02000000 0000"  # EventParent
    "05 02000000 0000"  # Collision
    "17 02000000 0000"  # VehicleDoor (23)
    "06 02000000 0000"  # Position
    "07 02000000 0000"  # State
    "08 02000000 0000"  # AnimVehicle
    "09 02000000 0000"  # AnimWalker
    "0a 02000000 0000"  # VehicleLight
    "15 02000000 0000"  # AnimVehicleWheels (21)
    "16 02000000 0000"  # AnimBiker (22)
    "01 00000000"  # FrameEnd
)


def write(fam: str | Family, frames: int = 1, **options: object) -> bytes:
    buffer = io.BytesIO()
    with RecordingWriter(buffer, fam, map_name="Town01", **options) as rec:  # type: ignore[arg-type]
        for _ in range(frames):
            with rec.frame(delta=0.05):
                pass
    return buffer.getvalue()


def packets(data: bytes) -> list[tuple[int, bytes]]:
    """(id, body) of every complete packet after the header; the test's own tiny walk."""
    (map_len,) = struct.unpack_from("<H", data, 26)
    pos, out = 28 + map_len, []
    while pos + 5 <= len(data):
        pid, size = struct.unpack_from("<BI", data, pos)
        if pos + 5 + size > len(data):
            break
        out.append((pid, data[pos + 5 : pos + 5 + size]))
        pos += 5 + size
    return out


def frame_starts(data: bytes) -> list[tuple[int, float, float]]:
    return [struct.unpack("<Qdd", body) for pid, body in packets(data) if pid == 0]


# --------------------------------------------------------------------------- exact bytes


def test_header_and_empty_0916_frame_match_the_spec_bytes() -> None:
    assert write("0.9.16") == HEADER_TOWN01 + EMPTY_FRAME_0916


def test_header_layout() -> None:
    data = write("0.9.4-0.9.9", frames=0, date=-5)
    assert data == bytes.fromhex("01000e00") + b"CARLA_RECORDER" + struct.pack("<q", -5) + (
        b"\x06\x00Town01"
    )


def test_records_serialize_like_the_shared_record_layouts() -> None:
    buffer = io.BytesIO()
    attrs: list[Attribute | tuple[int, str, str]] = [
        (3, "role_name", "hero"),
        (3, "", "dropped"),
        Attribute(1, "number_of_wheels", "4"),
    ]
    with RecordingWriter(buffer, "0.9.16", map_name="M", additional_data=True) as rec:
        rec.begin_frame(elapsed=0.0)
        rec.spawn(
            7,
            ActorType.VEHICLE,
            "vehicle.tesla.model3",
            location=(1, 2, 3),
            uid=24,
            attributes=attrs,
        )
        rec.vehicle_wheels([7], [[0, 1, 2, 3]], [[10, 10, 0, 0]], [[1, 2, 3, 4]])
        rec.walker_bones([9], ["crl_root", "é"], np.ones((1, 2, 3)), np.zeros((1, 2, 3)))
        rec.positions([7, 9], [(1, 2, 3), (4, 5, 6)], [(0, 90, 0), (0, -90, 0)])  # yaw
        rec.end_frame()
    bodies = dict(packets(buffer.getvalue()))
    expected_add = ActorAdd(
        7,
        1,
        np.array([1.0, 2, 3]),
        np.zeros(3),
        24,
        "vehicle.tesla.model3",
        (Attribute(3, "role_name", "hero"), Attribute(1, "number_of_wheels", "4")),
    )
    assert bodies[2] == b"\x01\x00" + expected_add.serialize(Engine.UE4)
    wheels = np.zeros(
        4, dtype=[("location", "u1"), ("steering_angle", "<f4"), ("tire_rotation", "<f4")]
    )
    wheels["location"] = [0, 1, 2, 3]
    wheels["steering_angle"] = [10, 10, 0, 0]
    wheels["tire_rotation"] = [1, 2, 3, 4]
    assert bodies[21] == b"\x01\x00" + VehicleWheels(7, wheels).serialize(Engine.UE4)
    bones = WalkerBones(9, ("crl_root", "é"), np.ones((2, 3)), np.zeros((2, 3)))
    assert bodies[19] == b"\x01\x00" + bones.serialize(Engine.UE4)
    position = np.zeros(2, dtype=fixed_dtype(Kind.POSITION, Engine.UE4))
    position["id"] = [7, 9]
    position["location"] = [(1, 2, 3), (4, 5, 6)]
    position["rotation"] = [(0, 0, 90), (0, 0, -90)]
    assert bodies[6] == b"\x02\x00" + position.tobytes()


def test_ue5_vectors_are_float64() -> None:
    buffer = io.BytesIO()
    with RecordingWriter(buffer, "ue5-0.10", map_name="M") as rec, rec.frame(elapsed=0.0):
        rec.positions([3], [(0.1, 0.2, 0.3)], [(0, 45, 0)])  # pitch, yaw, roll
    body = dict(packets(buffer.getvalue()))[6]
    assert len(body) == 2 + 52
    assert struct.unpack_from("<I6d", body, 2) == (3, 0.1, 0.2, 0.3, 0.0, 0.0, 45.0)


# --------------------------------------------------------------------------- frame timing


def test_durations_are_back_patched_and_the_last_frame_keeps_minus_one() -> None:
    starts = frame_starts(write("0.9.15", frames=5))
    step = carla_delta(0.05)
    assert step == 0.05000000074505806
    assert [s[0] for s in starts] == [1, 2, 3, 4, 5]
    assert [s[1] for s in starts] == [step, step, step, step, -1.0]
    assert [s[2] for s in starts] == list(elapsed_times([0.05] * 5))
    assert starts[1][2] == step and starts[4][2] == step + step + step + step


def test_elapsed_as_given_gives_durations_as_differences() -> None:
    buffer = io.BytesIO()
    with RecordingWriter(buffer, "0.9.15", map_name="M") as rec:
        for elapsed in (2.0, 2.5, 4.25):
            rec.begin_frame(elapsed=elapsed)
            rec.end_frame()
    assert frame_starts(buffer.getvalue()) == [(1, 0.5, 2.0), (2, 1.75, 2.5), (3, -1.0, 4.25)]


def test_back_patching_crosses_flushes_to_a_non_seekable_stream() -> None:
    class Pipe:
        def __init__(self) -> None:
            self.chunks: list[bytes] = []

        def write(self, data: bytes) -> int:
            self.chunks.append(bytes(data))
            return len(data)

        def flush(self) -> None:
            pass

    pipe = Pipe()
    with RecordingWriter(pipe, "0.9.15", map_name="Town01", flush_bytes=1) as rec:  # type: ignore[arg-type]
        for _ in range(4):
            with rec.frame(delta=0.05):
                rec.positions(range(50), np.zeros((50, 3)), np.zeros((50, 3)))
    assert len(pipe.chunks) > 2  # really streamed, frame by frame
    data = b"".join(pipe.chunks)
    assert [s[1] for s in frame_starts(data)] == [carla_delta(0.05)] * 3 + [-1.0]


def test_elapsed_times_sums_float32_deltas_in_double() -> None:
    elapsed = elapsed_times([0.1, 0.05, 0.05, 0.05])
    step = float(np.float32(0.05))
    assert list(elapsed) == [0.0, step, step + step, step + step + step]


# --------------------------------------------------------------------------- family order


def _everything(rec: RecordingWriter) -> None:
    """Add one record of every kind the writer accepts."""
    fam, extra = rec.family, rec.additional_data
    writable = {item.kind for item in fam.order} - {Kind.FRAME_START, Kind.FRAME_END}
    if not extra:
        writable -= ADDITIONAL_DATA
    calls = {
        Kind.EVENT_ADD: lambda: rec.spawn(5, 1, "vehicle.audi.tt"),
        Kind.EVENT_DEL: lambda: rec.destroy(4),
        Kind.EVENT_PARENT: lambda: rec.parent(6, 5),
        Kind.COLLISION: lambda: rec.collision(0, 5, 0xFFFFFFFF, actor1_hero=True),
        Kind.POSITION: lambda: rec.positions([5], [(1, 2, 3)], [(0, 0, 0)]),
        Kind.STATE: lambda: rec.traffic_light_states([2], [0], [1.5]),
        Kind.ANIM_VEHICLE: lambda: rec.vehicle_animations([5], throttle=0.5, gear=1),
        Kind.ANIM_WALKER: lambda: rec.walker_speeds([8], [140.0]),
        Kind.VEHICLE_LIGHT: lambda: rec.vehicle_lights([5], [0x8]),
        Kind.SCENE_LIGHT: lambda: rec.scene_lights(
            [1], intensities=[1.0], colors=[(1, 1, 1, 1)], on=[True]
        ),
        Kind.KINEMATICS: lambda: rec.kinematics([5], [(1, 0, 0)], [(0, 0, 3)]),
        Kind.BOUNDING_BOX: lambda: rec.bounding_boxes([5], [(0, 0, 75)], [(240, 95, 75)]),
        Kind.TRIGGER_VOLUME: lambda: rec.trigger_volumes([2], [(0, 0, 0)], [(1, 1, 1)]),
        Kind.PLATFORM_TIME: lambda: rec.platform_time(0.5),
        Kind.PHYSICS_CONTROL: lambda: rec.physics_control(default_physics_control(fam, 5)),
        Kind.TRAFFIC_LIGHT_TIME: lambda: rec.traffic_light_times([2], [6.0], [2.0], [8.0]),
        Kind.WALKER_BONES: lambda: rec.walker_bones(
            [8], ["crl_root"], [[[0, 0, 0]]], [[[0, 0, 0]]]
        ),
        Kind.VISUAL_TIME: lambda: rec.visual_time(12.5),
        Kind.ANIM_VEHICLE_WHEELS: lambda: rec.vehicle_wheels([5], [[0, 1]], [[0, 0]], [[0, 0]]),
        Kind.ANIM_BIKER: lambda: rec.bikers([5], [300.0], [0.4]),
        Kind.VEHICLE_DOOR: lambda: rec.vehicle_doors([5], [6], [True]),
        Kind.WEATHER: lambda: rec.weather({"cloudiness": 30.0}),
    }
    for kind in sorted(writable, key=lambda k: -list(Kind).index(k)):  # reverse on purpose
        calls[kind]()


CASES = [
    (name, extra)
    for name, fam in FAMILIES.items()
    for extra in (False, True)
    if not extra or any(item.kind in ADDITIONAL_DATA for item in fam.order)
]


@pytest.mark.parametrize(("name", "extra"), CASES)
def test_packets_follow_the_family_order(name: str, extra: bool) -> None:
    fam = family(name)
    expected_full = [
        fam.id_of(item.kind) for item in fam.order if extra or item.kind not in ADDITIONAL_DATA
    ]
    expected_empty = [
        fam.id_of(item.kind)
        for item in fam.order
        if item.always and (extra or item.kind not in ADDITIONAL_DATA)
    ]
    buffer = io.BytesIO()
    with RecordingWriter(buffer, fam, map_name="M", additional_data=extra) as rec:
        with rec.frame(elapsed=0.0):
            _everything(rec)
        with rec.frame(delta=0.05):
            pass
    ids = [pid for pid, _ in packets(buffer.getvalue())]
    assert ids == expected_full + expected_empty


@pytest.mark.parametrize(
    ("name", "call"),
    [
        ("0.9.4-0.9.9", lambda rec: rec.vehicle_lights([1], [0])),
        ("0.9.4-0.9.9", lambda rec: rec.visual_time(1.0)),
        ("0.9.14", lambda rec: rec.bikers([1], [0.0], [0.0])),
        ("0.9.15", lambda rec: rec.vehicle_doors([1], [0], [True])),
        ("0.9.16", lambda rec: rec.weather({})),
        ("ue5-0.10", lambda rec: rec.weather({})),
        ("0.9.16", lambda rec: rec.kinematics([1], [(0, 0, 0)], [(0, 0, 0)])),
        ("0.9.16", lambda rec: rec.platform_time(1.0)),
        ("0.9.16", lambda rec: rec.add_raw(Kind.FRAME_COUNTER, b"", 0)),
    ],
)
def test_kinds_a_family_does_not_write_are_refused(name: str, call: object) -> None:
    with (
        RecordingWriter(io.BytesIO(), name, map_name="M") as rec,
        rec.frame(elapsed=0.0),
        pytest.raises(UnsupportedError),
    ):
        call(rec)  # type: ignore[operator]


def test_additional_data_on_a_family_without_it_is_refused() -> None:
    with pytest.raises(UnsupportedError, match="additional data"):
        RecordingWriter(io.BytesIO(), "0.9.4-0.9.9", map_name="M", additional_data=True)


def test_misuse_is_reported() -> None:
    rec = RecordingWriter(io.BytesIO(), "0.9.16", map_name="M")
    with pytest.raises(RuntimeError, match="inside a frame"):
        rec.positions([1], [(0, 0, 0)], [(0, 0, 0)])
    rec.begin_frame(elapsed=0.0)
    with pytest.raises(RuntimeError, match="still open"):
        rec.begin_frame(elapsed=1.0)
    with pytest.raises(ValueError, match="u32"):
        rec.destroy(-1)
    with pytest.raises(ValueError, match="dtype"):
        rec.add_records(Kind.POSITION, np.zeros(1, dtype=fixed_dtype(Kind.POSITION, Engine.UE5)))
    rec.add_records(
        Kind.EVENT_DEL, np.zeros(0x10000, dtype=fixed_dtype(Kind.EVENT_DEL, Engine.UE4))
    )
    with pytest.raises(FormatError, match="at most 65535"):
        rec.end_frame()


def test_physics_control_layout_must_match_the_writer() -> None:
    fam = family("0.9.10-0.9.13")
    buffer = io.BytesIO()
    with (
        RecordingWriter(
            buffer, fam, map_name="M", additional_data=True, physics_wheel_size=36
        ) as rec,
        rec.frame(elapsed=0.0),
    ):
        rec.physics_control(default_physics_control(fam, 5, wheel_size=36))
        with pytest.raises(FormatError):
            rec.physics_control(default_physics_control(fam, 5))  # 48-byte wheels
    body = dict(packets(buffer.getvalue()))[15]
    assert len(body) == 2 + 53 + 4 + 3 * 8 + 4 + 4 * 12 + 4 + 4 * 8 + 4 + 4 * 36
    ue5 = default_physics_control(family("ue5-0.10"), 5)
    assert (
        len(ue5.serialize(Engine.UE5))
        == 111 + 4 + 3 * 8 + 4 + 5 * 4 + 4 + 4 + 4 + 4 * 8 + 4 + 4 * 208
    )


# --------------------------------------------------------------------------- files


def test_a_path_is_written_atomically_and_never_overwritten(tmp_path: Path) -> None:
    out = tmp_path / "rec.log"
    with RecordingWriter(out, "0.9.16", map_name="Town01") as rec, rec.frame(elapsed=0.0):
        pass
    assert out.read_bytes() == HEADER_TOWN01 + EMPTY_FRAME_0916
    with pytest.raises(OutputExistsError):
        RecordingWriter(out, "0.9.16", map_name="Town01")
    with RecordingWriter(out, "0.9.15", map_name="X", overwrite=True):
        pass
    assert out.read_bytes().endswith(b"\x01\x00X")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rec.log"]


def test_a_failure_leaves_no_file_behind(tmp_path: Path) -> None:
    out = tmp_path / "rec.log"
    with pytest.raises(KeyError), RecordingWriter(out, "0.9.16", map_name="M") as rec:
        rec.begin_frame(elapsed=0.0)
        raise KeyError("boom")
    assert list(tmp_path.iterdir()) == []


def test_file_appearing_meanwhile_is_not_clobbered(tmp_path: Path) -> None:
    out = tmp_path / "rec.log"
    rec = RecordingWriter(out, "0.9.16", map_name="M")
    out.write_bytes(b"precious")
    with pytest.raises(OutputExistsError):
        rec.close()
    assert out.read_bytes() == b"precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rec.log"]


def test_a_path_is_written_through_nanorecs_partial_file(tmp_path: Path) -> None:
    """As every nanorec output: `.<name>.partial` beside it while written, locked against a
    second writer; one left by a killed write is refused, or replaced with overwrite."""
    out = tmp_path / "rec.log"
    partial = tmp_path / ".rec.log.partial"
    rec = RecordingWriter(out, "0.9.16", map_name="Town01")
    assert sorted(p.name for p in tmp_path.iterdir()) == [partial.name]
    with pytest.raises(OutputExistsError, match="being written by another nanorec"):
        RecordingWriter(out, "0.9.16", map_name="Town01")
    rec.abort()
    assert list(tmp_path.iterdir()) == []
    partial.write_bytes(b"left by a killed write")
    with pytest.raises(OutputExistsError, match="interrupted write"):
        RecordingWriter(out, "0.9.16", map_name="Town01")
    with RecordingWriter(out, "0.9.16", map_name="Town01", overwrite=True) as rec:
        rec.begin_frame(elapsed=0.0)
    assert out.read_bytes() == HEADER_TOWN01 + EMPTY_FRAME_0916
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rec.log"]


# --------------------------------------------------------------------------- crashes


def _crash(fam: str, *, mid_packet: bool, crash: bool = True) -> tuple[bytes, int]:
    buffer = io.BytesIO()
    rec = RecordingWriter(buffer, fam, map_name="Town01")
    with rec.frame(elapsed=0.0):
        rec.spawn(1, 0, "spectator")
    rec.begin_frame(delta=0.05)
    rec.positions([1], [(0, 0, 0)], [(0, 0, 0)])
    if not crash:
        rec.close()
        return buffer.getvalue(), rec.stats.size
    size = rec.simulate_crash(mid_packet=mid_packet)
    assert rec.closed
    return buffer.getvalue(), size


def test_crash_cuts_after_the_last_back_patched_packet_of_the_frame() -> None:
    data, size = _crash("0.9.16", mid_packet=False)
    assert size == len(data)
    full, _ = _crash("0.9.16", mid_packet=False, crash=False)
    ids = [pid for pid, _ in packets(data)]
    # frame 2 keeps everything up to AnimVehicleWheels (21), the last size patch;
    # AnimBiker (22) and FrameEnd are lost.
    assert ids[ids.index(0, 1) :] == [0, 20, 2, 3, 4, 5, 23, 6, 7, 8, 9, 10, 21]
    assert frame_starts(data) == [(1, carla_delta(0.05), 0.0), (2, -1.0, carla_delta(0.05))]
    assert full.startswith(data) and len(full) - len(data) == (5 + 2) + 5  # AnimBiker, FrameEnd


def test_crash_in_an_0910_frame_ends_after_anim_vehicle_like_the_real_file() -> None:
    data, _ = _crash("0.9.10-0.9.13", mid_packet=False)
    ids = [pid for pid, _ in packets(data)]
    assert ids[ids.index(0, 1) :] == [0, 2, 3, 4, 5, 6, 7, 8]


def test_crash_mid_packet_keeps_half_of_the_next_packet() -> None:
    whole, _ = _crash("0.9.16", mid_packet=False)
    cut, _ = _crash("0.9.16", mid_packet=True)
    assert cut.startswith(whole)
    assert len(cut) - len(whole) == (5 + 2) // 2  # half of the empty AnimBiker packet
    assert packets(cut) == packets(whole)


def test_back_patched_kinds_are_event_and_variable_packets() -> None:
    assert Kind.ANIM_VEHICLE in BACK_PATCHED and Kind.POSITION not in BACK_PATCHED


# --------------------------------------------------------------------------- rotations


def test_wrap_degrees_maps_into_the_half_open_range() -> None:
    assert list(wrap_degrees([-180.0, 180.0, 540.0, -190.0, 0.0])) == [180, 180, 180, 170, 0]


def test_normalize_rotation_gives_carlas_ranges() -> None:
    got = normalize_rotation([[0.0, 100.0, 0.0], [10.0, 20.0, 30.0], [0.0, 0.0, 270.0]])
    np.testing.assert_allclose(got, [[180, 80, 180], [10, 20, 30], [0, 0, -90]], atol=1e-9)
    rng = np.random.default_rng(1)
    many = rng.uniform(-720, 720, size=(1000, 3))
    out = normalize_rotation(many)
    assert np.all((out[:, 1] >= -90) & (out[:, 1] <= 90))
    assert np.all((out[:, [0, 2]] > -180) & (out[:, [0, 2]] <= 180))
    # same orientation: the quaternions agree up to sign (Unreal snaps pitch to ±90 within
    # 5e-7 of the singularity, hence the looser tolerance)
    q1, q2 = quaternion_from_rotation(many), quaternion_from_rotation(out)
    np.testing.assert_allclose(np.abs(np.sum(q1 * q2, axis=-1)), 1.0, atol=1e-6)


def test_rotation_from_quaternion_handles_gimbal_lock() -> None:
    q = quaternion_from_rotation([0.0, 90.0, 30.0])
    roll, pitch, yaw = rotation_from_quaternion(q)
    assert pitch == 90.0
    np.testing.assert_allclose(quaternion_from_rotation([roll, pitch, yaw]) @ q, 1.0, atol=1e-6)
    with pytest.raises(ValueError):
        rotation_from_quaternion([0, 0, 0, 0])


def test_default_date_is_fixed() -> None:
    assert DEFAULT_DATE == 1_700_000_000
