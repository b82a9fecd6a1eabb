"""Write CARLA recorder files byte for byte the way a CARLA server of a given release does.

CARLA's own writer is the simulator: it fixes the header, the per-frame packet order of
its release (spec §3.2), which packets are written even when empty, the −1.0 duration
left in the last frame and the back-patched durations of all the others (spec §3.3).
`RecordingWriter` reproduces all of that for any `Family`, so that recordings built from
other trajectory data (or by our synthetic generator) replay in CARLA and exercise every
reader path of nanorec exactly like real files.

It never seeks: the last frame is kept in memory until the next frame's time is known,
then its duration is patched in the buffer and the buffer is written out. So it streams
to pipes and sockets as well as to files with bounded memory (one frame plus a flush
threshold), and produces the same bytes as CARLA's seek-and-patch writer.

Units are the file's: cm for locations and extents, degrees for rotations given as
(roll, pitch, yaw), seconds for times, m/s for kinematic linear velocity.
"""

from __future__ import annotations

import math
import os
import secrets
import struct
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt

from nanorec.errors import FormatError, OutputExistsError, UnsupportedError, UsageError

from .ids import (
    ADDITIONAL_DATA,
    HEADER_VERSION,
    MAGIC,
    SHAPES,
    Engine,
    Family,
    Kind,
    Shape,
)
from .ids import (
    family as family_named,
)
from .records import (
    CURVE_DTYPE,
    GEAR_DTYPE,
    I64,
    PACKET_HEADER,
    PHYSICS_UE4_DTYPE,
    PHYSICS_UE5_DTYPE,
    PHYSICS_WHEEL_DTYPES,
    U16,
    UE5_WHEEL_SIZE_GUESS,
    WHEEL_ANIM_DTYPE,
    ActorAdd,
    Attribute,
    PhysicsControl,
    VarRecord,
    fixed_dtype,
    pack_string,
)

__all__ = [
    "BACK_PATCHED",
    "DEFAULT_DATE",
    "ENVIRONMENT_ID",
    "RecordingWriter",
    "WriterStats",
    "bones_dtype",
    "carla_delta",
    "default_physics_control",
    "elapsed_times",
    "normalize_rotation",
    "quaternion_from_rotation",
    "rotation_from_quaternion",
    "wheels_dtype",
    "wrap_degrees",
]

# A fixed file date (2023-11-14 22:13:20 UTC) so that written files are reproducible;
# CARLA itself stores `time(0)` at `start_recorder`.
DEFAULT_DATE = 1_700_000_000

# Collision partner id of a hit against something that is not an actor, since ~0.9.13
# (older builds wrote 0; spec §5.5).
ENVIRONMENT_ID = 0xFFFFFFFF

# Packets whose size CARLA writes as 0 and then seeks back to patch (read from the
# recorder sources of 0.9.10-0.9.16). Every seek flushes CARLA's file buffer, so a
# crashed server leaves a file that ends just after one of these (spec §9).
BACK_PATCHED: frozenset[Kind] = frozenset(
    {
        Kind.EVENT_ADD,
        Kind.EVENT_DEL,
        Kind.EVENT_PARENT,
        Kind.ANIM_VEHICLE,
        Kind.PHYSICS_CONTROL,
        Kind.WALKER_BONES,
        Kind.ANIM_VEHICLE_WHEELS,
    }
)

_MAX_COUNT = 0xFFFF  # every packet count is a u16
_F64 = struct.Struct("<d")
_FRAME_START = struct.Struct("<BIQdd")
_SINGLE = struct.Struct("<BId")
_DURATION_OFFSET = 5 + 8  # packet header + u64 frame id
_WEATHER_FIELDS: tuple[str, ...] = fixed_dtype(Kind.WEATHER, Engine.UE4).names or ()


# --------------------------------------------------------------------------- time helpers


def carla_delta(seconds: float) -> float:
    """A tick delta as CARLA stores it: rounded to float32, widened back to double.

    `carla_delta(0.05)` is `0.05000000074505806`, the value real files carry (spec §3.3).
    """
    return float(np.float32(seconds))


def elapsed_times(deltas: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Elapsed seconds of each frame for per-tick deltas (seconds), summed as CARLA does.

    `deltas[i]` is the delta of the tick that wrote frame i+1. Frame 1 always has elapsed
    0 (its delta is ignored); each later frame adds its float32-rounded delta, in double,
    one frame after the other.
    """
    widened = np.asarray(deltas, dtype=np.float64).astype(np.float32).astype(np.float64)
    if widened.size:
        widened[0] = 0.0
    return np.add.accumulate(widened) if widened.size else widened


# ----------------------------------------------------------------------- rotation helpers


def wrap_degrees(angles: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Angles (degrees) mapped into (-180, 180], like Unreal's `FRotator::NormalizeAxis`."""
    values = np.asarray(angles, dtype=np.float64)
    wrapped = np.mod(values, 360.0)  # [0, 360)
    return np.where(wrapped > 180.0, wrapped - 360.0, wrapped)


def quaternion_from_rotation(rotations: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Unit quaternions (x, y, z, w) from rotations (..., 3) as (roll, pitch, yaw) degrees.

    Follows Unreal's `FRotator::Quaternion` (left-handed, Z up).
    """
    rot = np.asarray(rotations, dtype=np.float64)
    half = np.radians(rot) / 2.0
    sr, cr = np.sin(half[..., 0]), np.cos(half[..., 0])
    sp, cp = np.sin(half[..., 1]), np.cos(half[..., 1])
    sy, cy = np.sin(half[..., 2]), np.cos(half[..., 2])
    return np.stack(
        [
            cr * sp * sy - sr * cp * cy,
            -cr * sp * cy - sr * cp * sy,
            cr * cp * sy - sr * sp * cy,
            cr * cp * cy + sr * sp * sy,
        ],
        axis=-1,
    )


def rotation_from_quaternion(quaternions: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Rotations (..., 3) as CARLA records them from quaternions (..., 4) given as (x, y, z, w).

    Follows Unreal's `FQuat::Rotator`: pitch in [-90, 90] degrees, roll and yaw in
    (-180, 180]; at the gimbal-lock singularity pitch is ±90 and the roll absorbs the
    rest. Computed in double precision, so values can differ from the engine's float32
    arithmetic in the last bits. Raises ValueError for a zero quaternion.
    """
    q = np.asarray(quaternions, dtype=np.float64)
    norm = np.linalg.norm(q, axis=-1, keepdims=True)
    if np.any(norm == 0):
        raise UsageError("a zero quaternion has no rotation")
    x, y, z, w = np.moveaxis(q / norm, -1, 0)
    test = z * x - w * y
    yaw = np.degrees(np.arctan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z)))
    pitch = np.degrees(np.arcsin(np.clip(2.0 * test, -1.0, 1.0)))
    roll = np.degrees(np.arctan2(-2.0 * (w * x + y * z), 1.0 - 2.0 * (x * x + y * y)))
    threshold = 0.4999995
    twist = 2.0 * np.degrees(np.arctan2(x, w))
    pitch = np.where(test > threshold, 90.0, np.where(test < -threshold, -90.0, pitch))
    roll = np.where(test > threshold, yaw - twist, np.where(test < -threshold, -yaw - twist, roll))
    return np.stack([wrap_degrees(roll), pitch, wrap_degrees(yaw)], axis=-1)


def normalize_rotation(rotations: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Arbitrary (roll, pitch, yaw) degrees (..., 3) → the equivalent rotation CARLA records.

    CARLA records the Euler angles of the actor's quaternion, so a pitch of 100° comes back
    as 80° with roll and yaw turned by 180°. Use this on rotations from your own data to
    get the values a CARLA server would have written.
    """
    return rotation_from_quaternion(quaternion_from_rotation(rotations))


# --------------------------------------------------------------------- physics control


def default_physics_control(
    family: Family,
    actor_id: int,
    *,
    wheels: int = 4,
    wheel_size: int | None = None,
    mass: float = 1845.0,
    max_rpm: float = 15000.0,
    seed: int = 0,
) -> PhysicsControl:
    """A plausible PhysicsControl record (mass in kg, rpm, wheel radius and position in cm).

    UE4 families get the 53-byte head and `wheel_size`-byte wheels (36 or 48; default the
    family's). UE5 families get the 111-byte head and opaque 208-byte wheel elements filled
    with deterministic bytes derived from `seed` and `actor_id`, because the real elements
    are raw memory (spec §5.15). Raises UnsupportedError for a family without physics
    control and ValueError for a bad wheel size.
    """
    if Kind.PHYSICS_CONTROL not in family.kinds:
        raise UnsupportedError(f"CARLA family {family.name!r} has no physics_control packet")
    torque = np.array([(0.0, 400.0), (1890.0, 500.0), (5730.0, 400.0)], dtype=CURVE_DTYPE)
    steering = np.array([(0.0, 1.0), (20.0, 0.9), (60.0, 0.8), (120.0, 0.7)], dtype=CURVE_DTYPE)
    if wheels == 2:  # a bike: front and back on the centre line
        positions = [(140.0, 0.0, 30.0), (-140.0, 0.0, 30.0)]
    else:  # front axle first, left then right, as CARLA lists four-wheelers
        axles = [140.0 - 280.0 * (i // 2) / max(1, (wheels - 1) // 2) for i in range(wheels)]
        positions = [(x, -80.0 if i % 2 == 0 else 80.0, 30.0) for i, x in enumerate(axles)]
    if family.engine is Engine.UE4:
        size = wheel_size or family.physics_wheel_size or 48
        if size not in PHYSICS_WHEEL_DTYPES:
            raise UsageError(f"UE4 physics wheel records are 36 or 48 bytes, not {size}")
        head = np.zeros(1, dtype=PHYSICS_UE4_DTYPE)[0]
        for name, value in (
            ("id", actor_id),
            ("max_rpm", max_rpm),
            ("moi", 1.0),
            ("damping_rate_full_throttle", 0.15),
            ("damping_rate_zero_throttle_clutch_engaged", 2.0),
            ("damping_rate_zero_throttle_clutch_disengaged", 0.35),
            ("use_gear_autobox", 1),
            ("clutch_strength", 10.0),
            ("final_ratio", 4.0),
            ("mass", mass),
            ("drag_coefficient", 0.3),
            ("center_of_mass", (0.0, 0.0, -0.3)),
        ):
            head[name] = value
        gears = np.array(
            [(2.85, 0.15, 0.65), (1.75, 0.25, 0.75), (1.3, 0.35, 0.8), (1.0, 0.45, 0.85)],
            dtype=GEAR_DTYPE,
        )
        wheel_rows = np.zeros(wheels, dtype=PHYSICS_WHEEL_DTYPES[size])
        wheel_rows["tire_friction"] = 3.5
        wheel_rows["damping_rate"] = 0.25
        wheel_rows["max_steer_angle"] = [70.0 if p[0] > 0 else 0.0 for p in positions]
        wheel_rows["radius"] = 37.0
        wheel_rows["max_brake_torque"] = 1500.0
        wheel_rows["max_handbrake_torque"] = [0.0 if p[0] > 0 else 3000.0 for p in positions]
        if size == 48:
            wheel_rows["lat_stiff_max_load"] = 3.0
            wheel_rows["lat_stiff_value"] = 20.0
            wheel_rows["long_stiff_value"] = 3000.0
        wheel_rows["position"] = positions
        arrays: tuple[tuple[str, npt.NDArray[Any]], ...] = (
            ("torque_curve", torque),
            ("forward_gears", gears),
            ("steering_curve", steering),
            ("wheels", wheel_rows),
        )
        return PhysicsControl(head, arrays)
    if wheel_size is not None and wheel_size <= 0:
        raise UsageError(f"UE5 wheel elements need a positive size, not {wheel_size}")
    size = wheel_size or UE5_WHEEL_SIZE_GUESS
    head = np.zeros(1, dtype=PHYSICS_UE5_DTYPE)[0]
    for name, value in (
        ("id", actor_id),
        ("max_torque", 300.0),
        ("max_rpm", max_rpm),
        ("idle_rpm", 900.0),
        ("brake_effect", 1.0),
        ("rev_up_moi", 1.0),
        ("rev_down_rate", 600.0),
        ("differential_type", 0),
        ("front_rear_split", 0.5),
        ("use_automatic_gears", 1),
        ("gear_change_time", 0.5),
        ("final_ratio", 4.0),
        ("change_up_rpm", 4500.0),
        ("change_down_rpm", 2000.0),
        ("transmission_efficiency", 0.9),
        ("mass", mass),
        ("drag_coefficient", 0.3),
        ("center_of_mass", (0.0, 0.0, -0.3)),
        ("chassis_width", 180.0),
        ("chassis_height", 140.0),
        ("downforce_coefficient", 0.3),
        ("drag_area", 0.0),
        ("inertia_tensor_scale", (1.0, 1.0, 1.0)),
        ("sleep_threshold", 10.0),
        ("sleep_slope_limit", 0.866),
        ("use_sweep_wheel_collision", 0),
    ):
        head[name] = value
    # numpy keeps raw bit-generator streams stable across versions (not Generator methods)
    bits = np.random.PCG64([seed, actor_id])
    words = np.asarray(bits.random_raw((wheels * size + 7) // 8), dtype="<u8")
    raw = np.frombuffer(words.tobytes()[: wheels * size], dtype=np.uint8).reshape(wheels, size)
    arrays = (
        ("torque_curve", torque),
        ("forward_gear_ratios", np.array([4.25, 2.52, 1.66, 1.22, 1.0], dtype="<f4")),
        ("reverse_gear_ratios", np.array([4.04], dtype="<f4")),
        ("steering_curve", steering),
        ("wheels", raw),
    )
    return PhysicsControl(head, arrays)


# ------------------------------------------------------------------------------ writer


def _create_temporary(path: Path) -> tuple[int, Path]:
    """A new file beside `path`, created with the umask's permissions (unlike mkstemp's 0600)."""
    while True:
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp
        except FileExistsError:
            continue


def wheels_dtype(wheels: int) -> np.dtype[np.void]:
    """Row dtype of one AnimVehicleWheels record for vehicles with `wheels` wheels."""
    return np.dtype([("id", "<u4"), ("count", "<u4"), ("wheels", WHEEL_ANIM_DTYPE, (wheels,))])


def bones_dtype(names: Sequence[str], engine: Engine) -> np.dtype[np.void]:
    """Row dtype of one WalkerBones record for a skeleton with bones `names`.

    Fields: `id`, `count`, then per bone i `n{i}` (name length), `s{i}` (UTF-8 name),
    `l{i}` (location) and `r{i}` (rotation) vectors of the engine's width.
    """
    vec = "<f4" if engine is Engine.UE4 else "<f8"
    fields: list[Any] = [("id", "<u4"), ("count", "<u2")]
    for i, name in enumerate(names):
        size = len(name.encode("utf-8", "surrogateescape"))
        fields += [
            (f"n{i}", "<u2"),
            (f"s{i}", f"S{size}" if size else "V0"),
            (f"l{i}", vec, (3,)),
            (f"r{i}", vec, (3,)),
        ]
    return np.dtype(fields)


@dataclass
class WriterStats:
    """What a writer has put in its file so far (complete packets only)."""

    frames: int = 0
    size: int = 0  # bytes, header included
    last_elapsed: float | None = None  # seconds; the `Duration` CARLA's file info prints
    packets: Counter[Kind] = field(default_factory=Counter)
    spawned: Counter[int] = field(default_factory=Counter)  # actor type byte -> count
    destroyed: Counter[int] = field(default_factory=Counter)  # actor type byte -> count


@dataclass
class _Packet:
    kind: Kind
    data: bytes


class RecordingWriter:
    """Writes one CARLA recorder file for a release `Family`, frame by frame.

    ```
    with RecordingWriter("out.log", "0.9.16", map_name="Town03") as rec:
        with rec.frame(elapsed=0.0):
            rec.spawn(1, ActorType.OTHER, "spectator")
            rec.positions([1], [(0, 0, 500)], [(0, 90, 0)])  # pitch, yaw, roll
    ```

    `target` is a path (written to a temporary file in the same directory and renamed on
    `close`; an existing file raises `OutputExistsError` unless `overwrite=True`) or a
    binary stream (seekable or not; never closed by the writer). `date` is Unix seconds.
    `physics_wheel_size` overrides the family's UE4 PhysicsControl wheel record size
    (36 for 0.9.10/0.9.11 files in the "0.9.10-0.9.13" family).

    Records added between `begin_frame` and `end_frame` are written in the family's
    per-frame order, whatever order they were added in; within a packet they keep the
    order they were added in. Adding a kind the family does not write raises
    `UnsupportedError`; so does an additional-data kind without `additional_data=True`.
    """

    def __init__(
        self,
        target: str | os.PathLike[str] | BinaryIO,
        family: Family | str,
        *,
        map_name: str,
        date: int = DEFAULT_DATE,
        additional_data: bool = False,
        overwrite: bool = False,
        physics_wheel_size: int | None = None,
        flush_bytes: int = 1 << 20,
    ) -> None:
        self.family = family_named(family) if isinstance(family, str) else family
        self.engine = self.family.engine
        self.additional_data = additional_data
        self.map_name = map_name
        self.date = date
        order_kinds = {item.kind for item in self.family.order}
        if additional_data and not (order_kinds & ADDITIONAL_DATA):
            raise UnsupportedError(
                f"CARLA family {self.family.name!r} cannot record additional data"
            )
        if self.engine is Engine.UE4 and Kind.PHYSICS_CONTROL in order_kinds:
            wheel = physics_wheel_size or self.family.physics_wheel_size or 48
            if wheel not in PHYSICS_WHEEL_DTYPES:
                raise UsageError(f"UE4 physics wheel records are 36 or 48 bytes, not {wheel}")
            self.physics_wheel_size: int | None = wheel
        else:
            self.physics_wheel_size = physics_wheel_size
        self._writable = frozenset(
            kind
            for kind in order_kinds - {Kind.FRAME_START, Kind.FRAME_END}
            if additional_data or kind not in ADDITIONAL_DATA
        )
        self._order = tuple(
            (item.kind, item.always, self.family.id_of(item.kind))
            for item in self.family.order
            if item.kind in self._writable or item.kind in (Kind.FRAME_START, Kind.FRAME_END)
        )
        self._dtypes = {
            kind: fixed_dtype(kind, self.engine)
            for kind in self._writable
            if SHAPES[kind] in (Shape.FIXED, Shape.SINGLE)
        }
        self._flush_bytes = flush_bytes
        self.stats = WriterStats()
        self._actor_types: dict[int, int] = {}

        self._path: Path | None = None
        self._tmp: Path | None = None
        self._overwrite = overwrite
        if isinstance(target, (str, os.PathLike)):
            self._path = Path(target)
            if self._path.exists() and not overwrite:
                raise OutputExistsError(f"{self._path} exists; pass overwrite=True to replace it")
            fd, self._tmp = _create_temporary(self._path)
            self._stream: BinaryIO = os.fdopen(fd, "wb")
        else:
            self._stream = target
        self._closed = False

        self._buf = bytearray()
        self._flushed = 0  # bytes already handed to the stream
        self._frame_id = 0
        self._open = False
        self._elapsed = 0.0
        self._prev_duration_at: int | None = None  # absolute offset of last frame's duration
        self._chunks: dict[Kind, list[bytes]] = {}
        self._counts: dict[Kind, int] = {}
        self._singles: dict[Kind, float] = {}
        self._pending_types: dict[int, int] = {}
        self._pending_deletes: list[int] = []

        header = (
            U16.pack(HEADER_VERSION)
            + pack_string(MAGIC.decode("ascii"))
            + I64.pack(date)
            + pack_string(map_name)
        )
        self._buf += header
        self.stats.size = len(header)

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> RecordingWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    @property
    def frame_id(self) -> int:
        """The id of the open (or last written) frame; 0 before the first frame."""
        return self._frame_id

    @property
    def elapsed(self) -> float:
        """Elapsed seconds of the open (or last written) frame."""
        return self._elapsed

    @property
    def in_frame(self) -> bool:
        """True between `begin_frame` and `end_frame`."""
        return self._open

    @property
    def closed(self) -> bool:
        return self._closed

    def begin_frame(self, *, elapsed: float | None = None, delta: float | None = None) -> int:
        """Open the next frame and return its id (1, 2, ...).

        `elapsed` (seconds since the recording started) is written as given. Or give the
        tick's `delta` (seconds) and the writer sums it as CARLA does: rounded to float32,
        widened to double, added to the previous elapsed (frame 1 is always at 0). The
        previous frame's duration becomes `delta` when given, else the elapsed difference.
        Raises RuntimeError if a frame is already open or the writer is closed, ValueError
        for a non-finite time.
        """
        self._check_usable()
        if self._open:
            raise RuntimeError(f"frame {self._frame_id} is still open; call end_frame first")
        first = self._frame_id == 0
        step = carla_delta(delta) if delta is not None else None
        if elapsed is None:
            new_elapsed = 0.0 if first else self._elapsed + (step if step is not None else 0.0)
        else:
            new_elapsed = float(elapsed)
        if not math.isfinite(new_elapsed) or (step is not None and not math.isfinite(step)):
            raise UsageError(f"frame times must be finite, got elapsed={elapsed} delta={delta}")
        if self._prev_duration_at is not None:
            duration = step if step is not None else new_elapsed - self._elapsed
            at = self._prev_duration_at - self._flushed
            _F64.pack_into(self._buf, at, duration)
            if len(self._buf) >= self._flush_bytes:
                self._flush()
        self._frame_id += 1
        self._elapsed = new_elapsed
        self._open = True
        return self._frame_id

    def end_frame(self) -> None:
        """Write the open frame's packets in the family's order and close the frame.

        Raises RuntimeError if no frame is open and FormatError if a packet has more
        than 65535 records.
        """
        packets = self._assemble()
        start = self.stats.size
        self._prev_duration_at = start + _DURATION_OFFSET
        for packet in packets:
            self._buf += packet.data
            self.stats.packets[packet.kind] += 1
        self.stats.size += sum(len(packet.data) for packet in packets)
        self._finish_frame()

    @contextmanager
    def frame(self, *, elapsed: float | None = None, delta: float | None = None) -> Iterator[int]:
        """`begin_frame` ... `end_frame` as a context manager yielding the frame id."""
        frame_id = self.begin_frame(elapsed=elapsed, delta=delta)
        yield frame_id
        self.end_frame()

    def simulate_crash(self, *, mid_packet: bool = False) -> int:
        """Cut the file inside the open frame the way a crashed CARLA server leaves it.

        CARLA's file buffer is flushed by every seek; the last ones in a frame are the
        size patches of back-patched packets (and, from frame 2 on, the duration patch
        made while writing FrameStart). The file therefore ends at the packet boundary
        just after the frame's last back-patched packet: no FrameEnd, and this frame's
        duration stays −1.0 (spec §9). With `mid_packet`, half of the next packet is
        kept too. Closes the writer (renaming a path target) and returns the file size.
        """
        packets = self._assemble()
        ends = np.cumsum([len(packet.data) for packet in packets]).tolist()
        last = max(
            i
            for i, packet in enumerate(packets)
            if packet.kind in BACK_PATCHED
            or (packet.kind is Kind.FRAME_START and self._frame_id > 1)
        )  # EventAdd is back-patched and written in every frame of every family
        complete = packets[: last + 1]
        cut = int(ends[last])
        if mid_packet:  # FrameEnd at least always follows the last back-patched packet
            cut += max(1, len(packets[last + 1].data) // 2)
        data = b"".join(packet.data for packet in packets)
        self._prev_duration_at = None
        self._buf += data[:cut]
        for packet in complete:
            self.stats.packets[packet.kind] += 1
        self.stats.size += cut
        self._finish_frame()
        self.close()
        return self.stats.size

    def close(self) -> None:
        """End an open frame, write everything out and, for a path, move the file in place.

        Raises OutputExistsError if the path appeared meanwhile and `overwrite` is False.
        """
        if self._closed:
            return
        if self._open:
            self.end_frame()
        self._flush()
        self._closed = True
        if self._path is None or self._tmp is None:
            self._stream.flush()
            return
        self._stream.close()
        if self._overwrite:
            os.replace(self._tmp, self._path)
            return
        try:
            os.link(self._tmp, self._path)  # atomic "create only if absent"
        except FileExistsError:
            self._tmp.unlink()
            raise OutputExistsError(
                f"{self._path} exists; pass overwrite=True to replace it "
                "(it appeared while writing)"
            ) from None
        except OSError:  # file systems without hard links
            if self._path.exists():
                self._tmp.unlink()
                raise OutputExistsError(
                    f"{self._path} exists; pass overwrite=True to replace it"
                ) from None
            os.replace(self._tmp, self._path)
            return
        self._tmp.unlink()

    def abort(self) -> None:
        """Stop without finishing: a path target is left untouched (temporary file removed)."""
        if self._closed:
            return
        self._closed = True
        self._buf.clear()
        if self._tmp is not None:
            self._stream.close()
            self._tmp.unlink(missing_ok=True)

    # --------------------------------------------------------------- event records

    def spawn(
        self,
        actor_id: int,
        actor_type: int,
        blueprint: str,
        *,
        location: npt.ArrayLike = (0.0, 0.0, 0.0),
        rotation: npt.ArrayLike = (0.0, 0.0, 0.0),
        uid: int = 0,
        attributes: Iterable[Attribute | tuple[int, str, str]] = (),
    ) -> None:
        """EventAdd: actor `actor_id` of type byte `actor_type` appears.

        `location` in cm, `rotation` (roll, pitch, yaw) in degrees, `uid` the blueprint's
        number, `attributes` as (type byte, id, value text). Attributes with an empty id
        are dropped, as CARLA does.
        """
        attrs = tuple(
            a if isinstance(a, Attribute) else Attribute(int(a[0]), str(a[1]), str(a[2]))
            for a in attributes
        )
        record = ActorAdd(
            int(actor_id),
            int(actor_type),
            np.asarray(location, dtype=np.float64),
            np.asarray(rotation, dtype=np.float64),
            int(uid),
            blueprint,
            tuple(a for a in attrs if a.id),
        )
        self.add_var(Kind.EVENT_ADD, record)

    def destroy(self, actor_ids: int | npt.ArrayLike) -> None:
        """EventDel: the actors `actor_ids` disappear."""
        ids = self._ids(actor_ids)
        self._fixed(Kind.EVENT_DEL, len(ids), id=ids)
        self._pending_deletes.extend(int(i) for i in ids)

    def parent(self, child_ids: int | npt.ArrayLike, parent_ids: int | npt.ArrayLike) -> None:
        """EventParent: attach `child_ids` to `parent_ids` (one parent per child)."""
        children = self._ids(child_ids)
        self._fixed(Kind.EVENT_PARENT, len(children), id=children, parent_id=parent_ids)

    def collision(
        self,
        collision_id: int,
        actor1_id: int,
        actor2_id: int,
        *,
        actor1_hero: bool = False,
        actor2_hero: bool = False,
    ) -> None:
        """Collision: `actor1_id` (owner of the collision sensor) hit `actor2_id`.

        Use `ENVIRONMENT_ID` (0.9.13+) or 0 (older) for a hit against a non-actor.
        """
        self._fixed(
            Kind.COLLISION,
            1,
            id=collision_id,
            actor1_id=actor1_id,
            actor2_id=actor2_id,
            is_actor1_hero=bool(actor1_hero),
            is_actor2_hero=bool(actor2_hero),
        )

    # ------------------------------------------------------------ snapshot records

    def positions(
        self, actor_ids: npt.ArrayLike, locations: npt.ArrayLike, rotations: npt.ArrayLike
    ) -> None:
        """Position: global `locations` (n, 3) x, y, z in cm and `rotations` in degrees as
        pitch, yaw, roll: an (n, 3) array in that order (`carla.Rotation`'s), or a
        structured array with fields `pitch`, `yaw`, `roll` (as `Trajectory.rotation`).
        The file stores (roll, pitch, yaw); the reordering happens here."""
        ids = self._ids(actor_ids)
        stored = _file_rotations(rotations, len(ids))
        self._fixed(Kind.POSITION, len(ids), id=ids, location=locations, rotation=stored)

    def traffic_light_states(
        self,
        actor_ids: npt.ArrayLike,
        states: npt.ArrayLike,
        elapsed_times: npt.ArrayLike,
        *,
        frozen: npt.ArrayLike = False,
    ) -> None:
        """State: traffic-light `states` (TrafficLightState) and seconds spent in them."""
        ids = self._ids(actor_ids)
        self._fixed(
            Kind.STATE, len(ids), id=ids, is_frozen=frozen, elapsed_time=elapsed_times, state=states
        )

    def vehicle_animations(
        self,
        actor_ids: npt.ArrayLike,
        *,
        steering: npt.ArrayLike = 0.0,
        throttle: npt.ArrayLike = 0.0,
        brake: npt.ArrayLike = 0.0,
        handbrake: npt.ArrayLike = False,
        gear: npt.ArrayLike = 0,
    ) -> None:
        """AnimVehicle: control inputs (steering [-1, 1], throttle and brake [0, 1], gear)."""
        ids = self._ids(actor_ids)
        self._fixed(
            Kind.ANIM_VEHICLE,
            len(ids),
            id=ids,
            steering=steering,
            throttle=throttle,
            brake=brake,
            handbrake=handbrake,
            gear=gear,
        )

    def walker_speeds(self, actor_ids: npt.ArrayLike, speeds: npt.ArrayLike) -> None:
        """AnimWalker: walker controller speeds (the engine's unit, cm/s; spec §1)."""
        ids = self._ids(actor_ids)
        self._fixed(Kind.ANIM_WALKER, len(ids), id=ids, speed=speeds)

    def vehicle_lights(self, actor_ids: npt.ArrayLike, states: npt.ArrayLike) -> None:
        """VehicleLight: light flag words (see `ids.VEHICLE_LIGHT_BITS`)."""
        ids = self._ids(actor_ids)
        self._fixed(Kind.VEHICLE_LIGHT, len(ids), id=ids, state=states)

    def scene_lights(
        self,
        light_ids: npt.ArrayLike,
        *,
        intensities: npt.ArrayLike,
        colors: npt.ArrayLike,
        on: npt.ArrayLike,
        types: npt.ArrayLike = 2,
    ) -> None:
        """SceneLight: changed scene lights (`colors` (n, 4) RGBA floats; type 2 = street)."""
        ids = np.atleast_1d(np.asarray(light_ids, dtype=np.int64))
        self._fixed(
            Kind.SCENE_LIGHT,
            len(ids),
            light_id=ids,
            intensity=intensities,
            color=colors,
            is_on=on,
            type=types,
        )

    def vehicle_doors(
        self, actor_ids: npt.ArrayLike, doors: npt.ArrayLike, is_open: npt.ArrayLike
    ) -> None:
        """VehicleDoor: door open/close calls (door FL 0, FR 1, RL 2, RR 3, Hood 4, Trunk 5,
        All 6)."""
        ids = self._ids(actor_ids)
        self._fixed(Kind.VEHICLE_DOOR, len(ids), id=ids, door=doors, is_open=is_open)

    def bikers(
        self,
        actor_ids: npt.ArrayLike,
        forward_speeds: npt.ArrayLike,
        engine_rotations: npt.ArrayLike,
    ) -> None:
        """AnimBiker: two-wheelers' forward speed (cm/s) and engine rpm ÷ max rpm."""
        ids = self._ids(actor_ids)
        self._fixed(
            Kind.ANIM_BIKER,
            len(ids),
            id=ids,
            forward_speed=forward_speeds,
            engine_rotation=engine_rotations,
        )

    def vehicle_wheels(
        self,
        actor_ids: npt.ArrayLike,
        locations: npt.ArrayLike,
        steering_angles: npt.ArrayLike,
        tire_rotations: npt.ArrayLike,
    ) -> None:
        """AnimVehicleWheels for vehicles with the same wheel count, all arrays (n, wheels).

        `locations` are wheel codes (FL 0, FR 1, BL 2, BR 3; bikes Front 0, Back 1),
        `steering_angles` and `tire_rotations` in degrees.
        """
        ids = self._ids(actor_ids)
        codes = np.asarray(locations, dtype=np.uint8)
        wheels = codes.shape[-1] if codes.ndim else 0
        rows = np.zeros(len(ids), dtype=wheels_dtype(wheels))
        rows["id"] = ids
        rows["count"] = wheels
        rows["wheels"]["location"] = np.broadcast_to(codes, (len(ids), wheels))
        rows["wheels"]["steering_angle"] = steering_angles
        rows["wheels"]["tire_rotation"] = tire_rotations
        self.add_raw(Kind.ANIM_VEHICLE_WHEELS, rows.tobytes(), len(ids))

    def weather(self, values: Mapping[str, float]) -> None:
        """Weather: one record; missing parameters are 0, unknown names raise ValueError."""
        unknown = set(values) - set(_WEATHER_FIELDS)
        if unknown:
            raise UsageError(f"unknown weather parameters {sorted(unknown)}")
        self._fixed(Kind.WEATHER, 1, **dict(values))

    def visual_time(self, seconds: float) -> None:
        """VisualTime of this frame (seconds of episode game time; default: elapsed)."""
        self._single(Kind.VISUAL_TIME, seconds)

    # ------------------------------------------------------------ additional data

    def kinematics(
        self,
        actor_ids: npt.ArrayLike,
        linear_velocities: npt.ArrayLike,
        angular_velocities: npt.ArrayLike,
    ) -> None:
        """Kinematics: linear velocity (n, 3) in m/s, angular velocity (n, 3) in deg/s."""
        ids = self._ids(actor_ids)
        self._fixed(
            Kind.KINEMATICS,
            len(ids),
            id=ids,
            linear_velocity=linear_velocities,
            angular_velocity=angular_velocities,
        )

    def bounding_boxes(
        self, actor_ids: npt.ArrayLike, origins: npt.ArrayLike, extents: npt.ArrayLike
    ) -> None:
        """BoundingBox: local `origins` and half-size `extents` (n, 3) in cm."""
        ids = self._ids(actor_ids)
        self._fixed(Kind.BOUNDING_BOX, len(ids), id=ids, origin=origins, extent=extents)

    def trigger_volumes(
        self, actor_ids: npt.ArrayLike, origins: npt.ArrayLike, extents: npt.ArrayLike
    ) -> None:
        """TriggerVolume: global `origins` and half-size `extents` (n, 3) in cm."""
        ids = self._ids(actor_ids)
        self._fixed(Kind.TRIGGER_VOLUME, len(ids), id=ids, origin=origins, extent=extents)

    def platform_time(self, seconds: float) -> None:
        """PlatformTime: wall-clock seconds since the recording started (default: elapsed)."""
        self._single(Kind.PLATFORM_TIME, seconds)

    def traffic_light_times(
        self,
        actor_ids: npt.ArrayLike,
        green: npt.ArrayLike,
        yellow: npt.ArrayLike,
        red: npt.ArrayLike,
    ) -> None:
        """TrafficLightTime: the green, yellow and red durations (seconds) of lights."""
        ids = self._ids(actor_ids)
        self._fixed(
            Kind.TRAFFIC_LIGHT_TIME,
            len(ids),
            id=ids,
            green_time=green,
            yellow_time=yellow,
            red_time=red,
        )

    def physics_control(self, record: PhysicsControl) -> None:
        """PhysicsControl: one vehicle's physics (see `default_physics_control`).

        Raises FormatError when the record's layout does not match the family (UE4 head
        and wheel size, or UE5 head).
        """
        if self.engine is Engine.UE4:
            wheels = record.array("wheels")
            if record.head.dtype != PHYSICS_UE4_DTYPE or wheels.dtype.itemsize != (
                self.physics_wheel_size
            ):
                raise FormatError(
                    f"physics control layout does not match {self.family.name!r} "
                    f"(wheel records of {self.physics_wheel_size} bytes)",
                    expected=self.physics_wheel_size,
                    actual=wheels.dtype.itemsize,
                )
        elif record.head.dtype != PHYSICS_UE5_DTYPE:
            raise FormatError(f"physics control is not in the UE5 layout of {self.family.name!r}")
        self.add_var(Kind.PHYSICS_CONTROL, record)

    def walker_bones(
        self,
        actor_ids: npt.ArrayLike,
        names: Sequence[str],
        locations: npt.ArrayLike,
        rotations: npt.ArrayLike,
    ) -> None:
        """WalkerBones for walkers sharing one skeleton: bone `names`, relative `locations`
        (walkers, bones, 3) in cm and `rotations` (walkers, bones, 3) in degrees."""
        ids = self._ids(actor_ids)
        dtype = bones_dtype(names, self.engine)
        rows = np.zeros(len(ids), dtype=dtype)
        rows["id"] = ids
        rows["count"] = len(names)
        locs = np.broadcast_to(np.asarray(locations), (len(ids), len(names), 3))
        rots = np.broadcast_to(np.asarray(rotations), (len(ids), len(names), 3))
        for i, name in enumerate(names):
            rows[f"n{i}"] = len(name.encode("utf-8", "surrogateescape"))
            if name:
                rows[f"s{i}"] = name.encode("utf-8", "surrogateescape")
            rows[f"l{i}"] = locs[:, i]
            rows[f"r{i}"] = rots[:, i]
        self.add_raw(Kind.WALKER_BONES, rows.tobytes(), len(ids))

    # ------------------------------------------------------------------ low level

    def add_records(self, kind: Kind, records: npt.NDArray[np.void]) -> None:
        """Add fixed-size records given as a structured array of `fixed_dtype(kind, engine)`.

        The fast path for bulk writers. Raises UnsupportedError for a kind the family does
        not write and ValueError for a wrong dtype.
        """
        self._check_kind(kind)
        dtype = self._dtypes.get(kind)
        if dtype is None or SHAPES[kind] is not Shape.FIXED:
            raise UsageError(f"{kind.value} is not a fixed-size record packet")
        if records.dtype != dtype:
            raise UsageError(f"{kind.value} records need dtype {dtype}, got {records.dtype}")
        self._add(kind, records.tobytes(), len(records))

    def add_var(self, kind: Kind, record: VarRecord) -> None:
        """Add one variable-length record (ActorAdd, PhysicsControl, WalkerBones, wheels)."""
        self._check_kind(kind)
        if SHAPES[kind] is not Shape.VAR:
            raise UsageError(f"{kind.value} is not a variable-length record packet")
        self._add(kind, record.serialize(self.engine), 1)
        if isinstance(record, ActorAdd):
            self._pending_types[record.id] = record.type

    def add_raw(self, kind: Kind, data: bytes, count: int) -> None:
        """Add `count` records already serialized to `data` (the caller owns the layout).

        The fastest path, for bulk writers that build rows with `wheels_dtype`,
        `bones_dtype` or `fixed_dtype`. Raises UnsupportedError for a kind the family does
        not write and ValueError for a single-value kind.
        """
        self._check_kind(kind)
        if SHAPES[kind] not in (Shape.FIXED, Shape.VAR):
            raise UsageError(f"{kind.value} holds one value, not records")
        self._add(kind, data, count)

    # --------------------------------------------------------------- internals

    def _check_usable(self) -> None:
        if self._closed:
            raise RuntimeError("the writer is closed")

    def _check_kind(self, kind: Kind) -> None:
        if kind in self._writable:
            return
        name = self.family.name
        if kind in ADDITIONAL_DATA and kind in {item.kind for item in self.family.order}:
            raise UnsupportedError(
                f"{kind.value} is additional data; open the writer with additional_data=True"
            )
        if kind in (Kind.FRAME_START, Kind.FRAME_END):
            raise UnsupportedError(f"{kind.value} is written by begin_frame/end_frame")
        raise UnsupportedError(f"CARLA family {name!r} does not write {kind.value} packets")

    def _ids(self, actor_ids: int | npt.ArrayLike) -> npt.NDArray[np.int64]:
        ids = np.atleast_1d(np.asarray(actor_ids, dtype=np.int64))
        if ids.ndim != 1:
            raise UsageError(f"actor ids must be one-dimensional, got shape {ids.shape}")
        if ids.size and (int(ids.min()) < 0 or int(ids.max()) > 0xFFFFFFFF):
            raise UsageError("actor ids must fit a u32 (0 .. 4294967295)")
        return ids

    def _fixed(self, kind: Kind, count: int, **fields: Any) -> None:
        self._check_kind(kind)
        rows = np.zeros(count, dtype=self._dtypes[kind])
        for name, value in fields.items():
            rows[name] = value
        self._add(kind, rows.tobytes(), count)

    def _single(self, kind: Kind, seconds: float) -> None:
        self._check_kind(kind)
        if not self._open:
            raise RuntimeError("records can only be added inside a frame (begin_frame)")
        self._singles[kind] = float(seconds)

    def _add(self, kind: Kind, data: bytes, count: int) -> None:
        if not self._open:
            raise RuntimeError("records can only be added inside a frame (begin_frame)")
        self._check_kind(kind)
        chunks = self._chunks.get(kind)
        if chunks is None:
            self._chunks[kind] = [data]
            self._counts[kind] = count
        else:
            chunks.append(data)
            self._counts[kind] += count

    def _assemble(self) -> list[_Packet]:
        self._check_usable()
        if not self._open:
            raise RuntimeError("no frame is open; call begin_frame first")
        packets: list[_Packet] = []
        for kind, always, pid in self._order:
            if kind is Kind.FRAME_START:
                data = _FRAME_START.pack(pid, 24, self._frame_id, -1.0, self._elapsed)
            elif kind is Kind.FRAME_END:
                data = PACKET_HEADER.pack(pid, 0)
            elif kind is Kind.VISUAL_TIME or kind is Kind.PLATFORM_TIME:
                data = _SINGLE.pack(pid, 8, self._singles.get(kind, self._elapsed))
            else:
                count = self._counts.get(kind, 0)
                if not count and not always:
                    continue
                if count > _MAX_COUNT:
                    raise FormatError(
                        f"frame {self._frame_id} has {count} {kind.value} records; "
                        f"a packet holds at most {_MAX_COUNT}",
                        expected=_MAX_COUNT,
                        actual=count,
                    )
                body = b"".join(self._chunks.get(kind, ()))
                data = PACKET_HEADER.pack(pid, 2 + len(body)) + U16.pack(count) + body
            packets.append(_Packet(kind, data))
        return packets

    def _finish_frame(self) -> None:
        self.stats.frames += 1
        self.stats.last_elapsed = self._elapsed
        for actor_type in self._pending_types.values():
            self.stats.spawned[actor_type] += 1
        self._actor_types.update(self._pending_types)
        for actor_id in self._pending_deletes:
            if actor_id in self._actor_types:
                self.stats.destroyed[self._actor_types.pop(actor_id)] += 1
        self._pending_types = {}
        self._pending_deletes = []
        self._chunks = {}
        self._counts = {}
        self._singles = {}
        self._open = False

    def _flush(self) -> None:
        if self._buf:
            self._stream.write(self._buf)
            self._flushed += len(self._buf)
            self._buf = bytearray()


def _file_rotations(rotations: npt.ArrayLike, count: int) -> npt.NDArray[np.float64]:
    """Pitch/yaw/roll rotations (named fields, or columns in that order) as the file's
    (roll, pitch, yaw) rows."""
    array = np.asarray(rotations)
    if array.dtype.names is not None:
        if not {"pitch", "yaw", "roll"} <= set(array.dtype.names):
            raise UsageError("rotations need fields pitch, yaw and roll")
        columns = [array["roll"], array["pitch"], array["yaw"]]
        return np.stack([np.asarray(c, dtype=np.float64) for c in columns], axis=-1).reshape(-1, 3)
    array = np.asarray(array, dtype=np.float64).reshape(count, 3)
    return array[:, [2, 0, 1]]
