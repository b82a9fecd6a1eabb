"""The synthetic recording generator, checked by a walker written here from the spec alone.

The walker below shares no code with the writer or the codec: record sizes come from the
spec's summary table (§5.27) and variable records are measured field by field, so a
layout mistake made on both sides of `records.py` would still show up here.
"""

from __future__ import annotations

import hashlib
import io
import json
import struct
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from nanorec.converters.carla.generate import generate, generate_to, main
from nanorec.converters.carla.ids import ADDITIONAL_DATA, FAMILIES, Engine, Family, Kind, family
from nanorec.errors import OutputExistsError, UnsupportedError

SAMPLES = Path(__file__).resolve().parents[3] / "samples"

# spec §5.27: fixed record sizes (UE4, UE5) and single-value packet sizes
FIXED = {
    Kind.EVENT_DEL: (4, 4),
    Kind.EVENT_PARENT: (8, 8),
    Kind.COLLISION: (14, 14),
    Kind.POSITION: (28, 52),
    Kind.STATE: (10, 10),
    Kind.ANIM_VEHICLE: (21, 21),
    Kind.ANIM_WALKER: (8, 8),
    Kind.VEHICLE_LIGHT: (8, 8),
    Kind.SCENE_LIGHT: (26, 26),
    Kind.KINEMATICS: (28, 52),
    Kind.BOUNDING_BOX: (28, 52),
    Kind.TRAFFIC_LIGHT_TIME: (16, 16),
    Kind.TRIGGER_VOLUME: (28, 52),
    Kind.ANIM_BIKER: (12, 12),
    Kind.VEHICLE_DOOR: (6, 6),
    Kind.WEATHER: (56, 56),
}
SINGLE = {Kind.FRAME_START: 24, Kind.PLATFORM_TIME: 8, Kind.VISUAL_TIME: 8, Kind.FRAME_END: 0}


class Body:
    """A little cursor over one packet body."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        assert self.pos + n <= len(self.data), "record runs past its packet"
        self.pos += n
        return self.data[self.pos - n : self.pos]

    def u8(self) -> int:
        return self.take(1)[0]

    def u16(self) -> int:
        return int(struct.unpack("<H", self.take(2))[0])

    def u32(self) -> int:
        return int(struct.unpack("<I", self.take(4))[0])

    def text(self) -> str:
        return self.take(self.u16()).decode("utf-8")


@dataclass
class Walked:
    """What the test walker saw in one recording."""

    map_name: str
    date: int
    frames: list[tuple[int, float, float]] = field(default_factory=list)
    order: list[list[int]] = field(default_factory=list)
    counts: Counter[Kind] = field(default_factory=Counter)
    spawns: list[tuple[int, int, str, dict[str, tuple[int, str]]]] = field(default_factory=list)
    collisions: list[tuple[int, int, int]] = field(default_factory=list)
    records: Counter[Kind] = field(default_factory=Counter)
    wheel_sizes: set[int] = field(default_factory=set)
    truncated: bool = False


def walk(data: bytes, fam: Family) -> Walked:
    """Walk every packet; assert ids are known and every record ends at its packet size."""
    ue5 = fam.engine is Engine.UE5
    vec = 24 if ue5 else 12
    # `Info.Version = 1` up to 0.9.16 and UE5 0.10; `RECORDER_VERSION (2)` in the 2026 line.
    assert struct.unpack_from("<H", data, 0)[0] == (2 if fam.name.endswith("-2026") else 1)
    assert data[2:18] == b"\x0e\x00CARLA_RECORDER"
    (date,) = struct.unpack_from("<q", data, 18)
    (map_len,) = struct.unpack_from("<H", data, 26)
    out = Walked(data[28 : 28 + map_len].decode(), date)
    pos = 28 + map_len
    in_frame = False
    while pos < len(data):
        if pos + 5 > len(data):
            out.truncated = True
            break
        pid, size = struct.unpack_from("<BI", data, pos)
        if pos + 5 + size > len(data):
            out.truncated = True
            break
        kind = fam.kind_of(pid)
        assert kind is not None, f"packet id {pid} unknown to {fam.name}"
        body = data[pos + 5 : pos + 5 + size]
        pos += 5 + size
        out.counts[kind] += 1
        if kind is Kind.FRAME_START:
            assert not in_frame, "FrameStart inside a frame"
            in_frame = True
            out.frames.append(struct.unpack("<Qdd", body))
            out.order.append([])
        else:
            assert in_frame, f"{kind} outside a frame"
        out.order[-1].append(pid)
        if kind is Kind.FRAME_END:
            in_frame = False
        if kind in SINGLE:
            assert size == SINGLE[kind], kind
            continue
        cur = Body(body)
        count = cur.u16()
        out.records[kind] += count
        if kind is Kind.PHYSICS_CONTROL:
            out.wheel_sizes.add(_physics(body, ue5))
            continue
        if kind in FIXED:
            assert size == 2 + count * FIXED[kind][ue5], kind
            if kind is Kind.COLLISION:
                out.collisions += [
                    struct.unpack_from("<III", body, 2 + 14 * i) for i in range(count)
                ]
            continue
        for _ in range(count):
            if kind is Kind.EVENT_ADD:
                actor_id, actor_type = cur.u32(), cur.u8()
                cur.take(2 * vec + 4)
                blueprint = cur.text()
                attrs = {}
                for _ in range(cur.u16()):
                    attr_type = cur.u8()
                    name = cur.text()
                    attrs[name] = (attr_type, cur.text())
                out.spawns.append((actor_id, actor_type, blueprint, attrs))
            elif kind is Kind.WALKER_BONES:
                cur.u32()
                for _ in range(cur.u16()):
                    cur.text()
                    cur.take(2 * vec)
            elif kind is Kind.ANIM_VEHICLE_WHEELS:
                cur.u32()
                cur.take(9 * cur.u32())
            else:
                raise AssertionError(f"unexpected variable packet {kind}")
        assert cur.pos == len(body), f"{kind} records end before the packet does"
    return out


def _physics(body: bytes, ue5: bool) -> int:
    """Measure a PhysicsControl packet; returns the wheel element size that fits exactly.

    UE4 wheels are 48 or 36 bytes: try 48 then 36, as spec §10.5 says.
    """
    for wheel in (208,) if ue5 else (48, 36):
        cur = Body(body)
        try:
            for _ in range(cur.u16()):
                cur.take(111 if ue5 else 53)
                for element in (8, 4, 4, 8) if ue5 else (8, 12, 8):
                    cur.take(element * cur.u32())
                cur.take(wheel * cur.u32())
        except AssertionError:
            continue
        if cur.pos == len(body):
            return wheel
    raise AssertionError("no wheel size makes PhysicsControl end at its packet size")


def expected_order(fam: Family, additional: bool) -> list[int]:
    return [
        fam.id_of(item.kind) for item in fam.order if additional or item.kind not in ADDITIONAL_DATA
    ]


def is_subsequence(seq: list[int], full: list[int]) -> bool:
    it = iter(full)
    return all(pid in it for pid in seq)


CASES = [
    pytest.param(name, extra, None, id=f"{name}{'-additional' if extra else ''}")
    for name, fam in FAMILIES.items()
    for extra in (False, True)
    if not extra or any(item.kind in ADDITIONAL_DATA for item in fam.order)
] + [pytest.param("0.9.10-0.9.13", True, 36, id="0.9.10-wheels36")]


@pytest.mark.parametrize(("name", "extra", "wheel"), CASES)
def test_every_generated_family_walks_cleanly(name: str, extra: bool, wheel: int | None) -> None:
    fam = family(name)
    data = generate(name, frames=40, additional_data=extra, physics_wheel_size=wheel, seed=7)
    seen = walk(data, fam)
    assert not seen.truncated
    assert seen.map_name == "Town03"
    full = expected_order(fam, extra)
    always = [pid for pid in full if fam.kind_of(pid) in {i.kind for i in fam.order if i.always}]
    for order in seen.order:
        assert is_subsequence(order, full) and is_subsequence(always, order), order
    ids = [frame[0] for frame in seen.frames]
    assert ids == list(range(1, 41))
    durations = [frame[1] for frame in seen.frames]
    elapsed = [frame[2] for frame in seen.frames]
    assert elapsed[0] == 0.0 and durations[-1] == -1.0
    assert all(d == 0.05000000074505806 for d in durations[:-1])
    assert all(b - a == d for a, b, d in zip(elapsed, elapsed[1:], durations, strict=False))

    # the scene: spectator, lights, vehicles with attributes, sensors, walkers
    spectator = seen.spawns[0]
    assert spectator[:3] == (1, 0, "spectator")
    by_blueprint = {bp: (actor_type, attrs) for _, actor_type, bp, attrs in seen.spawns}
    assert by_blueprint["traffic.traffic_light"][0] == 3
    vehicle_types = {t for _, t, bp, _ in seen.spawns if bp.startswith("vehicle.")}
    assert vehicle_types == {1}
    hero = [a for _, _, bp, a in seen.spawns if a.get("role_name") == (3, "hero")]
    assert len(hero) == 1 and hero[0]["color"][0] == 4 and hero[0]["sticky_control"] == (0, "true")
    old_registry = name == "0.9.4-0.9.9" or wheel == 36
    sensor_types = {t for _, t, bp, _ in seen.spawns if bp.startswith("sensor.")}
    assert sensor_types == ({0} if old_registry else {5})
    assert any(bp.startswith("walker.pedestrian.") for _, _, bp, _ in seen.spawns)
    assert seen.records[Kind.EVENT_DEL] >= 2 and seen.records[Kind.EVENT_PARENT] >= 3
    environment = {c[2] for c in seen.collisions} - {s[0] for s in seen.spawns}
    assert environment == ({0} if old_registry else {0xFFFFFFFF})
    if Kind.ANIM_BIKER in fam.kinds and fam.engine is Engine.UE4:
        bike = by_blueprint["vehicle.yamaha.yzf"][1]
        assert bike["number_of_wheels"] == (1, "2")
        assert seen.records[Kind.ANIM_BIKER] > 0 and seen.records[Kind.ANIM_VEHICLE_WHEELS] > 0
    elif Kind.ANIM_VEHICLE_WHEELS in fam.kinds:  # UE5 writes the packets, always empty
        assert seen.records[Kind.ANIM_VEHICLE_WHEELS] == seen.records[Kind.ANIM_BIKER] == 0
    for kind in (Kind.VEHICLE_DOOR, Kind.WEATHER, Kind.SCENE_LIGHT, Kind.VEHICLE_LIGHT):
        if kind in fam.kinds:
            assert seen.records[kind] > 0, kind
    if extra:
        for kind in ADDITIONAL_DATA & set(fam.kinds):
            assert (seen.counts if kind in SINGLE else seen.records)[kind] > 0, kind
        expected_wheels = {208} if fam.engine is Engine.UE5 else {wheel or 48}
        assert seen.wheel_sizes == expected_wheels


def test_same_seed_same_bytes_other_seed_other_bytes() -> None:
    a = generate("0.9.16", frames=30, seed=3, additional_data=True)
    assert a == generate("0.9.16", frames=30, seed=3, additional_data=True)
    assert a != generate("0.9.16", frames=30, seed=4, additional_data=True)
    assert a[18:26] == struct.pack("<q", 1_700_000_000)
    assert generate("0.9.16", frames=30, seed=3, date=5)[18:26] == struct.pack("<q", 5)


@pytest.mark.parametrize("mode", [True, "mid-packet"])
def test_crash_cuts_the_final_frame(mode: bool | str) -> None:
    fam = family("0.9.15")
    whole = generate(fam, frames=20)
    data = generate(fam, frames=20, crash=mode)
    seen = walk(data, fam)
    assert seen.truncated is (mode == "mid-packet")
    assert [f[0] for f in seen.frames] == list(range(1, 21))
    assert seen.frames[-1][1] == -1.0 and seen.frames[-2][1] > 0
    assert seen.counts[Kind.FRAME_END] == 19
    # the last frame ends after AnimVehicleWheels (21), its last back-patched packet
    assert seen.order[-1][-1] == fam.id_of(Kind.ANIM_VEHICLE_WHEELS)
    assert whole.startswith(data) and len(data) < len(whole)


def test_target_bytes_streams_at_least_that_much(tmp_path: Path) -> None:
    out = tmp_path / "big.log"
    report = generate_to(out, "0.9.16", target_bytes=300_000, vehicles=20, walkers=10)
    assert out.stat().st_size == report.size >= 300_000
    seen = walk(out.read_bytes(), family("0.9.16"))
    assert not seen.truncated and len(seen.frames) == report.frames
    with pytest.raises(OutputExistsError):
        generate_to(out, "0.9.16", frames=2)
    crashed = generate_to(io.BytesIO(), "0.9.16", target_bytes=200_000, vehicles=20, crash=True)
    assert crashed.size >= 150_000


def test_generate_to_matches_generate() -> None:
    buffer = io.BytesIO()
    generate_to(buffer, "ue5-0.10", frames=25, vehicles=8, walkers=4, traffic_lights=4)
    assert buffer.getvalue() == generate("ue5-0.10", frames=25)


def test_bad_options_are_refused() -> None:
    with pytest.raises(ValueError):
        generate("0.9.16", frames=0)
    with pytest.raises(ValueError):
        generate("0.9.16", physics_wheel_size=36)
    with pytest.raises(ValueError):
        generate("0.9.16", crash="sometimes")
    with pytest.raises(UnsupportedError):
        generate("0.9.4-0.9.9", additional_data=True)
    with pytest.raises(KeyError):
        generate("0.9.99")


def test_command_line_entry_point(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "x.log"
    assert main(["0.9.14", str(out), "--frames", "12", "--additional-data", "--seed", "2"]) == 0
    assert out.read_bytes() == generate("0.9.14", frames=12, additional_data=True, seed=2)
    assert "12 frames" in capsys.readouterr().err


# --------------------------------------------------------------------------- samples


def sample_twins() -> list[Path]:
    return sorted(SAMPLES.glob("*.log.json"))


def test_samples_cover_the_representative_families() -> None:
    families = {json.loads(p.read_text())["family"] for p in sample_twins()}
    assert {"0.9.10-0.9.13", "0.9.15", "0.9.16", "ue5-0.10"} <= families
    infos = [json.loads(p.read_text()) for p in sample_twins()]
    assert any(i["generator"]["crash"] for i in infos)
    assert any(i["generator"]["additional_data"] and i["family"] == "0.9.10-0.9.13" for i in infos)


@pytest.mark.parametrize("twin", sample_twins(), ids=lambda p: p.name[: -len(".log.json")])
def test_sample_regenerates_byte_for_byte(twin: Path) -> None:
    info: dict[str, Any] = json.loads(twin.read_text())
    log = twin.with_suffix("")
    committed = log.read_bytes()
    assert len(committed) == info["size"]
    assert hashlib.sha256(committed).hexdigest() == info["sha256"]
    call = dict(info["generator"])
    assert call.pop("function") == "nanorec.converters.carla.generate.generate"
    data = generate(**call)
    assert hashlib.sha256(data).hexdigest() == info["sha256"]
    seen = walk(committed, family(info["family"]))
    assert len(seen.frames) == info["frames"] and seen.frames[-1][2] == info["duration"]
    assert {k.value: n for k, n in seen.counts.items()} == info["packets"]


@pytest.mark.parametrize("log", sorted(SAMPLES.glob("*.log")), ids=lambda p: p.stem)
def test_sample_roundtrips_through_the_codec(log: Path) -> None:
    roundtrip = pytest.importorskip("nanorec.converters.carla.roundtrip").roundtrip
    info = json.loads(Path(f"{log}.json").read_text())
    report = roundtrip(log)
    assert report.identical
    assert report.family == info["family"]
    assert not report.raw_by_id and not report.misfit_by_id
