"""NanoVer compatibility in both directions, against the stand-in of NanoVer's reader."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import pytest

from nanorec import ArchiveReader, ArchiveWriter, verify

from .helpers import rebuild_zip, sample_messages, write_archive
from .nanover_reference import (
    MessageEvent,
    MessageZipReader,
    NanoverRecordingReader,
    record_messages,
)


def _strip(message: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in message.items() if key != "nanorec.t"}


def _expected_state(messages: list[dict[str, Any]]) -> dict[str, Any]:
    state: dict[str, Any] = {}
    for message in messages:
        if "state" in message:
            state.update(message["state"].get("updates", {}))
            for key in message["state"].get("removals", []):
                state.pop(key, None)
    return state


# -- ours -> NanoVer ------------------------------------------------------------------------


def test_nanover_reads_our_archive(tmp_path: Path) -> None:
    messages = sample_messages(60)
    messages.append({"state": {"updates": {"x": 1}, "removals": ["avatar.1"]}})
    messages.append(
        {"frame": {"frame.index": 0, "particle.positions": b"\0" * 12}, "state": {"updates": {}}}
    )
    path = tmp_path / "ours.nanover.zip"
    stamps = [17 * i + 3 for i in range(len(messages))]
    with ArchiveWriter(path, source_format="test", source={"name": "x"}) as writer:
        for i, message in enumerate(messages):
            writer.write(message, timestamp_us=stamps[i], flags=i % 4, metadata={"seq": i})
        writer.add_member("notes.json", b"{}")

    with NanoverRecordingReader.from_path(path) as reader:
        assert isinstance(reader, NanoverRecordingReader)
        assert len(reader) == len(messages)
        events = list(reader.iter_message_events())
        assert [event.timestamp for event in events] == stamps
        assert [_strip(event.message) for event in events] == messages
        assert all(event.message["nanorec.t"] == event.timestamp for event in events)
        *_, (_, final_state) = reader.iter_states_full()
        assert final_state == _expected_state(messages)
        frames = list(reader.iter_frames_full())
        assert len(frames) == sum("frame" in m for m in messages)
        _, first_full = frames[0]
        assert first_full.frame_dict["frame.index"] == 0
        positions = next(f for _, f in frames if "particle.positions" in f.frame_dict)
        assert positions.frame_dict["particle.positions"].shape == (2, 3)
        state_entry = reader[2]
        assert reader.get_message_type_from_entry(state_entry, "frame") is None
        assert reader.get_message_type_from_entry(state_entry, "state") == messages[2]["state"]
        assert state_entry.metadata["seq"] == 2


def test_nanover_reads_our_recovered_and_zip64_archives(tmp_path: Path) -> None:
    path = tmp_path / "z.nanover.zip"
    writer = ArchiveWriter(path)
    writer._force_zip64 = True
    with writer:
        for i, message in enumerate(sample_messages(10)):
            writer.write(message, timestamp_us=i)
    with MessageZipReader.from_path(path) as reader:
        assert [_strip(reader.get_message_from_entry(e)) for e in reader] == sample_messages(10)


def test_reference_reader_is_as_strict_as_nanover(tmp_path: Path) -> None:
    """The stand-in rejects what the spec says NanoVer rejects (so passing it means something)."""
    good = write_archive(tmp_path / "good.zip", sample_messages(3))
    entries = msgpack.unpackb(zipfile.ZipFile(good).read("index.msgpack"))
    entries[0]["extra"] = 1
    extra_key = rebuild_zip(
        good, tmp_path / "extra.zip", replace={"index.msgpack": msgpack.packb(entries)}
    )
    with pytest.raises(TypeError):
        MessageZipReader.from_path(extra_key)
    missing = rebuild_zip(good, tmp_path / "missing.zip", replace={"index.msgpack": None})
    with pytest.raises(KeyError):
        MessageZipReader.from_path(missing)
    int_keys = tmp_path / "int_keys.zip"
    record_messages(int_keys, [MessageEvent(timestamp=0, message={"frame": {1: 2}})])
    with MessageZipReader.from_path(int_keys) as reader, pytest.raises(ValueError):
        reader.get_message_from_entry(reader[0])


# -- NanoVer -> ours ------------------------------------------------------------------------


def _nanover_events() -> list[MessageEvent]:
    positions = np.arange(12, dtype=np.float32).reshape(4, 3)
    events = [
        MessageEvent(timestamp=3872, message={"frame": {"frame.index": 0}}),
        MessageEvent(timestamp=19053, message={"state": {"updates": {}, "removals": []}}),
        MessageEvent(
            timestamp=34575,
            message={
                "frame": {
                    "frame.index": 0,
                    "particle.positions": positions.tobytes(),  # raw-byte array
                    "bond.pairs": np.array([[0, 1], [1, 2]], np.uint32).tobytes(),
                    "bond.orders": [1.0, 2.0],  # list-encoded array (old converter files)
                    "residue.ids": ["1", "2"],
                    "particle.count": 4,
                }
            },
        ),
        MessageEvent(
            timestamp=81858,
            message={"state": {"updates": {"avatar.a": {"pos": [0.0, 1.5]}}, "removals": []}},
        ),
        MessageEvent(
            timestamp=99000,
            message={"frame": {"frame.index": 2, "particle.positions": positions.tobytes()}},
        ),
        MessageEvent(timestamp=99500, message={"state": {"updates": {}, "removals": ["avatar.a"]}}),
    ]
    return events


@pytest.mark.parametrize(
    ("compression", "extra"),
    [
        (zipfile.ZIP_STORED, None),
        (zipfile.ZIP_STORED, {"metadata.json": b'{"a": 1}'}),
        (zipfile.ZIP_DEFLATED, None),
    ],
)
def test_we_read_nanover_archives(
    tmp_path: Path, compression: int, extra: dict[str, bytes] | None
) -> None:
    events = _nanover_events()
    path = tmp_path / "theirs.nanover.zip"
    record_messages(path, events, compression=compression, extra_members=extra)
    with ArchiveReader(path) as reader:
        if compression == zipfile.ZIP_STORED:
            assert reader._messages_start == 66  # spec 1.1: the data starts at byte 66
        assert reader.description is None
        assert reader.index_source == "index.msgpack"
        assert len(reader) == len(events)
        assert reader[:] == [event.message for event in events]
        assert reader.index.timestamp_us.tolist() == [event.timestamp for event in events]
        assert [reader.index.types(i) for i in range(len(events))] == [
            tuple(event.message) for event in events
        ]
        assert reader.metadata(2) == {"types": ["frame"], "frame.index": 0, "timestamp": 34575}
        assert not reader.index.crc_known.any()
        assert reader.read(4, verify=True) == events[4].message  # nothing to check: no error
        assert [t for t, _ in reader.iter_messages(types="state")] == [19053, 81858, 99500]
        assert reader.index_at_time(81857) == 2
        assert reader.index_at_time(0) is None
        if extra:
            assert reader.member("metadata.json") == b'{"a": 1}'
        # the same aggregate NanoVer computes
        with NanoverRecordingReader.from_path(path) as theirs:
            *_, (_, their_state) = theirs.iter_states_full()
        assert _expected_state(reader[:]) == their_state == {}
    report = verify(path)
    assert report.ok, report.problems
    assert not report.has_description


def test_we_read_nanover_variants(tmp_path: Path) -> None:
    """Reversed member order, float/None timestamps, missing types (all accepted by NanoVer)."""
    events = _nanover_events()
    base = tmp_path / "base.zip"
    record_messages(base, events)
    with zipfile.ZipFile(base) as archive:
        entries = msgpack.unpackb(archive.read("index.msgpack"))
    entries[1]["metadata"]["timestamp"] = 19053.6  # float µs (NanoVer tutorial)
    del entries[3]["metadata"]["types"]
    entries[4]["metadata"]["timestamp"] = None
    variant = rebuild_zip(
        base,
        tmp_path / "variant.zip",
        replace={"index.msgpack": msgpack.packb(entries)},
        order=["index.msgpack", "messages.msgpack"],
    )
    with ArchiveReader(variant) as reader:
        assert reader[:] == [event.message for event in events]
        assert reader.index.timestamp_us.tolist() == [3872, 19054, 34575, 81858, 81858, 99500]
        assert reader.unknown_timestamps == 1
        assert reader.index.types(3) == ("state",)  # worked out from the message
    with NanoverRecordingReader.from_path(variant) as theirs:
        assert len(list(theirs.iter_state_updates())) == 3


def test_unsorted_nanover_timestamps(tmp_path: Path) -> None:
    path = tmp_path / "unsorted.zip"
    stamps = [50, 10, 30, 30, 20]
    record_messages(
        path, [MessageEvent(timestamp=t, message={"state": {"i": i}}) for i, t in enumerate(stamps)]
    )
    with ArchiveReader(path) as reader:
        assert not reader.index.is_sorted
        assert reader.index_at_time(30) == 3  # greatest time <= 30, latest among ties
        assert reader.index_at_time(5) is None
        assert reader.index_at_time(100) == 0
        assert [t for t, _ in reader.iter_messages(20, 40)] == [30, 30, 20]


def test_our_archive_deflated_by_another_tool(tmp_path: Path) -> None:
    """Every member deflated (e.g. re-zipped): the slow path still gives the same answers."""
    ours = write_archive(tmp_path / "ours.zip", sample_messages(20), flags=list(range(20)))
    deflated = rebuild_zip(ours, tmp_path / "deflated.zip", compression=zipfile.ZIP_DEFLATED)
    with ArchiveReader(deflated) as reader:
        assert reader.index_source == "nanorec.msgpack"
        assert reader[::-1] == sample_messages(20)[::-1]
        assert reader.metadata(7)["f"] == 7
        assert reader.read(3, verify=True) == sample_messages(20)[3]
    assert verify(deflated).ok
