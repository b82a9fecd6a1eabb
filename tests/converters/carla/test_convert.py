"""CARLA <-> archive: byte-exact export, seeking against a sequential replay, clips, NanoVer."""

from __future__ import annotations

import hashlib
import random
import zlib
from pathlib import Path

import msgpack
import pytest

from nanorec import verify
from nanorec.archive.reader import ArchiveReader
from nanorec.archive.writer import ArchiveWriter
from nanorec.converters.carla.clip import export_clip
from nanorec.converters.carla.convert import META_MEMBER, convert, export, read_meta
from nanorec.converters.carla.recording import CarlaRecording
from nanorec.converters.carla.world import World
from nanorec.errors import BadMagicError, FormatError, NanorecError, OutputExistsError
from tests.conftest import carla_realdata
from tests.container.nanover_reference import NanoverRecordingReader
from tests.converters.carla.replay_reference import Snapshot, replay

REAL = carla_realdata()
SAMPLES = sorted((Path(__file__).resolve().parents[3] / "samples").glob("*.log"))


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _vector(rec: CarlaRecording) -> str:
    return "f" if rec.family.vector_size == 12 else "d"


def assert_world_matches(world: World, snap: Snapshot) -> None:
    """The seeked world equals the sequentially replayed one (actors, parents, poses, lights)."""
    assert world.frame_id == snap.frame_id
    assert world.elapsed == snap.elapsed
    assert set(world.actors) == set(snap.actors)
    for actor_id, expected in snap.actors.items():
        actor = world.actors[actor_id]
        assert actor.type_id == expected["type_id"]
        assert dict(actor.attributes) == expected["attributes"]
        assert actor.parent_id == expected["parent_id"], actor_id
        assert tuple(actor.location) == pytest.approx(expected["location"], abs=0, rel=0)
        assert tuple(actor.rotation) == expected["rotation"]
    lights = {
        i: (int(t.state), t.is_frozen, t.elapsed_time)
        for i, t in world.traffic_lights.items()
        if t.state is not None
    }
    assert lights == snap.traffic_lights


def _state_key(world: World) -> tuple[object, ...]:
    actors = {
        i: (a.type_id, dict(a.attributes), a.parent_id, tuple(a.location), tuple(a.rotation))
        for i, a in world.actors.items()
    }
    lights = {
        i: (t.state, t.is_frozen, t.elapsed_time, t.green_time, t.yellow_time, t.red_time)
        for i, t in world.traffic_lights.items()
    }
    return actors, lights, dict(world.scene_lights), world.weather


@pytest.mark.parametrize("source", REAL + SAMPLES, ids=[p.name for p in REAL + SAMPLES])
def test_file_round_trips_and_seeks(source: Path, tmp_path: Path) -> None:
    archive = tmp_path / "a.nanover.zip"
    report = convert(source, archive)
    assert report.details["raw_packets"] == {}
    assert report.archive_size <= 1.2 * report.source_size
    assert verify(archive).ok
    back = tmp_path / "back.log"
    exported = export(archive, back)
    assert exported.identical is True
    assert _sha(back) == _sha(source)

    with CarlaRecording.open(archive) as rec:
        snapshots = list(replay(source.read_bytes(), vector=_vector(rec)))
        assert len(rec) == len(snapshots)
        picks = random.Random(source.name).sample(range(len(rec)), min(25, len(rec)))
        for index in [0, len(rec) - 1, *picks]:
            assert_world_matches(rec.frame(index), snapshots[index])


@pytest.mark.parametrize("source", REAL + SAMPLES, ids=[p.name for p in REAL + SAMPLES])
def test_clip_keeps_the_world(source: Path, tmp_path: Path) -> None:
    with CarlaRecording.open(source) as rec:
        start = len(rec) // 3
        stop = min(len(rec), start + 30)
        clip_path = tmp_path / "clip.log"
        report = export_clip(rec, clip_path, start=start, stop=stop)
        assert report.messages == stop - start
        with CarlaRecording.open(clip_path) as clip:
            assert len(clip) == stop - start
            first = clip.frame(0)
            assert first.frame_id == 1 and first.elapsed == 0.0
            assert clip.frame(-1).duration == -1.0
            for k in range(len(clip)):
                assert _state_key(clip.frame(k)) == _state_key(rec.frame(start + k))
        # A clip is an ordinary recording: a plain replay agrees with our reading of it.
        snaps = list(replay(clip_path.read_bytes(), vector=_vector(rec)))
        with CarlaRecording.open(clip_path) as clip:
            for k in (0, len(clip) - 1):
                assert_world_matches(clip.frame(k), snaps[k])


@pytest.mark.realdata
@pytest.mark.parametrize("source", REAL[:2], ids=[p.name for p in REAL[:2]])
def test_nanover_reader_sees_live_actors(source: Path, tmp_path: Path) -> None:
    archive = tmp_path / "a.nanover.zip"
    convert(source, archive)
    with CarlaRecording.open(archive) as rec, NanoverRecordingReader.from_path(archive) as nv:
        states = list(nv.iter_states_full())
        assert states, "every archive starts with the actors of frame 1"
        frames = list(nv.iter_frame_updates())
        assert len(frames) == len(rec)
        for entry, state in states:
            index = rec.reader.index_at_time(entry.metadata["timestamp"])
            assert index is not None
            live = {int(key[6:]): value for key, value in state.items() if key[:6] == "actor."}
            world = rec.frame(index)
            assert live == {i: a.type_id for i, a in world.actors.items()}
            parents = {int(key[7:]): v for key, v in state.items() if key[:7] == "parent."}
            assert parents == {i: a.parent_id for i, a in world.actors.items() if a.parent_id}


def test_truncated_recording_keeps_every_byte(tmp_path: Path) -> None:
    source = _sample_or_skip()
    data = source.read_bytes()
    for cut in sorted({len(data) - 1, len(data) // 2, len(data) // 3 + 7, 200}):
        partial = tmp_path / f"cut{cut}.log"
        partial.write_bytes(data[:cut])
        archive = tmp_path / f"cut{cut}.zip"
        report = convert(partial, archive)
        assert report.cut is not None
        back = tmp_path / f"back{cut}.log"
        assert export(archive, back).identical is True
        assert back.read_bytes() == data[:cut]
        snaps = list(replay(data[:cut]))
        # Every complete frame converts (an incomplete last frame stays raw).
        assert report.messages in (len(snaps), len(snaps) - 1)


def test_bad_input_and_overwrite(tmp_path: Path) -> None:
    junk = tmp_path / "junk.log"
    junk.write_bytes(b"not a recording at all")
    with pytest.raises(BadMagicError):
        convert(junk, tmp_path / "junk.zip")
    assert not (tmp_path / "junk.zip").exists()
    source = _sample_or_skip()
    out = tmp_path / "out.zip"
    out.write_bytes(b"precious")
    with pytest.raises(OutputExistsError):
        convert(source, out)
    assert out.read_bytes() == b"precious"
    convert(source, out, overwrite=True)
    with pytest.raises(OutputExistsError):
        export(out, out)


def test_damaged_archive_member_is_a_nanorec_error(tmp_path: Path) -> None:
    source = _sample_or_skip()
    archive = tmp_path / "a.zip"
    convert(source, archive)
    data = bytearray(archive.read_bytes())
    at = data.find(b"carla-world")  # corrupt the world tables' payload, not the zip
    assert at > 0
    data[at + 60 : at + 90] = b"\xff" * 30
    archive.write_bytes(bytes(data))
    with pytest.raises(NanorecError):
        CarlaRecording.open(archive).frame(0)


def test_unknown_family_in_the_meta_member_is_a_plain_format_error(tmp_path: Path) -> None:
    archive = tmp_path / "a.zip"
    with ArchiveWriter(archive, source_format="carla") as writer:
        meta = {"header": {"bytes": b""}, "family": "bogus"}
        writer.add_member(META_MEMBER, zlib.compress(msgpack.packb(meta)))
    with ArchiveReader(archive) as reader, pytest.raises(FormatError) as caught:
        read_meta(reader)
    assert str(caught.value) == f"damaged {META_MEMBER} member: unknown release family 'bogus'"


def test_archive_messages_are_plain_msgpack(tmp_path: Path) -> None:
    source = _sample_or_skip()
    archive = tmp_path / "a.zip"
    convert(source, archive)
    with CarlaRecording.open(archive) as rec:
        first = msgpack.unpackb(rec.reader.raw(0))
        assert first["frame"]["frame.index"] == 0
        # the first use of a packet sequence is the sequence itself, later ones its number
        assert first["frame"]["order"] == rec.orders[0] and rec.orders[0][0] == 0  # FrameStart
        assert first["carla"]["header"] == source.read_bytes()[: rec.header.size]
        assert "state" in first  # frame 1 spawns the world
        assert isinstance(rec.reader[1]["frame"]["order"], int | bytes)


def _sample_or_skip() -> Path:
    samples = sorted(Path(__file__).resolve().parents[3].joinpath("samples").glob("*.log"))
    if samples:
        return samples[0]
    if REAL:
        return REAL[0]
    pytest.skip("no sample recording")
