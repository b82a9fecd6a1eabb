"""Benchmark MCAP export against the `mcap` package's Writer writing the same messages.

For each input, in one run:
- `export`: `nanorec.outputs.mcap.export_mcap(recording, out)`, everything (building the Foxglove
  messages from the archive, encoding, writing);
- `build`: only `recording.mcap_messages()` (or the generic JSON records) into a list;
- `anchor`: `mcap.writer.Writer` alone writing that pre-built list (schemas and channels
  registered once per topic, `add_message` for each), the floor of any MCAP exporter;
- `ours`: `export_mcap` over the same pre-built list (our writer layer: channel lookup,
  checks, atomic output), to compare with `anchor`.
Inputs: a busy synthetic CARLA town (our generator), the largest real CARLA file, the real
NanoVer recording (generic JSON), a synthetic ROS bag through the rosbag converter (ros1
payloads as they are), a real Cartographer pbstream (Foxglove poses, line strips, grid),
and ROS1-like pre-encoded payloads.
Optionally (`--protobuf`, needs the `bench` extra) our protobuf encoding of a frame's
SceneUpdate against Foxglove JSON and against `foxglove-schemas-protobuf`. Best of 3 each;
writes bench/RESULTS.md's mcap section.

    python bench/bench_mcap.py [--quick] [--protobuf]
"""

from __future__ import annotations

import argparse
import datetime
import platform
import random
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from nanorec.outputs.mcap import McapRecord, export_mcap, generic_records
from nanorec.selection import Selection

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "RESULTS.md"
REAL = HERE.parent.parent / "shared" / "realdata"
BEGIN, END = "<!-- begin mcap -->", "<!-- end mcap -->"


class Prebuilt:
    """A recording whose MCAP records are already built (for `ours` vs `anchor`)."""

    format = "prebuilt"

    def __init__(self, records: list[McapRecord]) -> None:
        self.records = records

    def mcap_messages(self, selection: Selection | None) -> Iterator[McapRecord]:
        return iter(self.records)


def anchor_write(records: list[McapRecord], out: Path) -> int:
    """The mcap package's Writer alone: one schema and channel per topic, then messages."""
    from mcap.writer import Writer

    channels: dict[str, int] = {}
    with out.open("wb") as stream:
        writer = Writer(stream)
        writer.start()
        for r in records:
            channel = channels.get(r.topic)
            if channel is None:
                schema = writer.register_schema(r.schema_name, r.schema_encoding, r.schema_data)
                channel = writer.register_channel(
                    r.topic, r.message_encoding, schema, dict(r.channel_metadata)
                )
                channels[r.topic] = channel
            writer.add_message(channel, r.log_time_ns, r.data, r.publish_time_ns, r.sequence)
        writer.finish()
    return out.stat().st_size


def best(action: Callable[[], Any], repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


def measure(name: str, recording: Any, input_bytes: int, folder: Path) -> dict[str, Any]:
    out = folder / "out.mcap"
    producer = getattr(recording, "mcap_messages", None)

    def build() -> list[McapRecord]:
        selection = Selection()
        return list(producer(selection) if producer else generic_records(recording, selection))

    export = best(lambda: export_mcap(recording, out, overwrite=True))
    size = out.stat().st_size
    records = build()
    building = best(build)
    anchor = best(lambda: anchor_write(records, out))
    anchor_size = out.stat().st_size
    ours = best(lambda: export_mcap(Prebuilt(records), out, overwrite=True))
    out.unlink()
    return {
        "name": name,
        "input": input_bytes,
        "messages": len(records),
        "payload": sum(len(r.data) for r in records),
        "size": size,
        "anchor_size": anchor_size,
        "export": export,
        "build": building,
        "anchor": anchor,
        "ours": ours,
    }


def ros_like(count: int) -> list[McapRecord]:
    rng = random.Random(0)
    metadata = {"callerid": "/talker", "latching": "0"}
    schemas = [f"float64[{n}] data\n".encode() for n in range(4)]
    return [
        McapRecord(
            f"/topic{i % 4}",
            f"pkg/Msg{i % 4}",
            "ros1msg",
            schemas[i % 4],
            "ros1",
            1_700_000_000_000_000_000 + i * 1_000_000,
            1_700_000_000_000_000_000 + i * 1_000_000,
            rng.randbytes(rng.randrange(16, 512)),
            metadata,
            i,
        )
        for i in range(count)
    ]


def _protobuf_ready(value: Any) -> Any:
    """Our JSON dict in protobuf's field names (Time/Duration are seconds/nanos there; empty
    repeated fields left out)."""
    if isinstance(value, dict):
        if set(value) == {"sec", "nsec"}:
            return {"seconds": value["sec"], "nanos": value["nsec"]}
        return {k: _protobuf_ready(v) for k, v in value.items() if v != []}
    if isinstance(value, list):
        return [_protobuf_ready(item) for item in value]
    return value


def protobuf_comparison(recording: Any) -> str:
    """The SceneUpdates of 100 frames three ways: ours (protobuf laid by hand, what the
    export writes), Foxglove JSON built as dicts (the reference path) and the `protobuf`
    package (`foxglove-schemas-protobuf`: construct + serialize of the same messages);
    bytes raw and zstd-compressed."""
    import json

    import zstandard
    from foxglove_schemas_protobuf.SceneUpdate_pb2 import SceneUpdate

    from nanorec.converters.carla.mcap import frame_records

    sys.path.insert(0, str(HERE.parent))  # the JSON reference lives in tests/
    from tests.converters.carla.reference import mcap_dicts

    worlds = [recording.frame(i) for i in range(min(len(recording), 100))]
    stamps = recording.reader.index.timestamp_us
    topics = {"/carla/scene"}

    def encode(dicts: bool) -> list[bytes]:
        records = mcap_dicts.frame_records if dicts else frame_records
        return [r.data for w in worlds for r in records(w, int(stamps[w.index]) * 1000, topics)]

    ours_time, json_time = best(lambda: encode(False)), best(lambda: encode(True))
    ours, encoded = encode(False), encode(True)
    dicts = [_protobuf_ready(json.loads(data)) for data in encoded]
    proto_time = best(lambda: [SceneUpdate(**d).SerializeToString() for d in dicts])
    protos = [SceneUpdate(**d).SerializeToString() for d in dicts]

    def sizes(items: list[bytes]) -> str:
        raw = b"".join(items)
        return f"{len(raw) / 1e6:.2f} MB ({len(zstandard.compress(raw)) / 1e3:.0f} kB zstd)"

    return (
        f"SceneUpdates of {len(worlds)} frames (reference path, a World per frame): ours, "
        f"protobuf by hand, {ours_time * 1e3:.0f} ms, {sizes(ours)}; Foxglove JSON as dicts "
        f"{json_time * 1e3:.0f} ms, {sizes(encoded)}; the protobuf package's construct + "
        f"serialize of the same messages {proto_time * 1e3:.0f} ms, {sizes(protos)}"
    )


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| input | in MB | msgs | payload MB | MCAP MB | export s | export MB/s | build s | "
        "ours write s | mcap Writer s | ours/Writer |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['name']} | {r['input'] / 1e6:.2f} | {r['messages']} | "
            f"{r['payload'] / 1e6:.1f} | {r['size'] / 1e6:.2f} | {r['export']:.3f} | "
            f"{r['payload'] / 1e6 / r['export']:.1f} | {r['build']:.3f} | {r['ours']:.3f} | "
            f"{r['anchor']:.3f} | {r['ours'] / r['anchor']:.2f} |"
        )
    return "\n".join(lines)


def write_results(section: str) -> None:
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    block = f"{BEGIN}\n{section}\n{END}"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + block + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    RESULTS.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smaller synthetic town")
    parser.add_argument("--protobuf", action="store_true", help="JSON vs protobuf encoding")
    args = parser.parse_args()
    from nanorec import ArchiveReader
    from nanorec.converters.carla.generate import generate
    from nanorec.converters.carla.recording import CarlaRecording
    from nanorec.recording import ArchiveRecording

    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-mcap-") as tmp:
        folder = Path(tmp)
        frames = 200 if args.quick else 600
        town = folder / "town.log"
        town.write_bytes(
            generate("0.9.15", frames=frames, vehicles=120, walkers=60, traffic_lights=40)
        )
        inputs: list[tuple[str, Path]] = [(f"CARLA synthetic, 220 actors x {frames} frames", town)]
        real = REAL / "carla" / "scenario_runner_DistanceToLaneCenter.log"
        if real.is_file():
            inputs.append(("CARLA real, scenario_runner (0.9.13), 178 actors", real))
        for name, path in inputs:
            with CarlaRecording.open(path) as recording:
                rows.append(measure(name, recording, path.stat().st_size, folder))
                if args.protobuf:
                    notes.append(f"{name}: {protobuf_comparison(recording)}")
            print(rows[-1])
        nanover = REAL / "nanover" / "nanotube-example-recording.nanover.zip"
        if nanover.is_file():
            with ArchiveRecording(ArchiveReader(nanover)) as recording:
                rows.append(
                    measure(
                        "NanoVer real (generic JSON)", recording, nanover.stat().st_size, folder
                    )
                )
            print(rows[-1])
        from nanorec import registry
        from nanorec.converters.ros.ros1.generate import generate as generate_bag

        bag = generate_bag(folder / "robot.bag", seconds=10 if args.quick else 60, image=320)
        with registry.open(bag) as recording:
            rows.append(
                measure(
                    "ROS bag, synthetic robot (ros1 payloads)",
                    recording,
                    bag.stat().st_size,
                    folder,
                )
            )
        print(rows[-1])
        pbstream = REAL / "pbstream" / "nerovalerius_arti_navigation_map.pbstream"
        if pbstream.is_file():
            with registry.open(pbstream) as recording:
                rows.append(
                    measure(
                        "pbstream real, arti_navigation (poses, grid)",
                        recording,
                        pbstream.stat().st_size,
                        folder,
                    )
                )
            print(rows[-1])
        records = ros_like(20_000 if args.quick else 100_000)
        size = sum(len(r.data) for r in records)
        rows.append(measure("ROS1-like payloads (pre-encoded)", Prebuilt(records), size, folder))
        print(rows[-1])
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    section = (
        f"## MCAP export (`python bench/bench_mcap.py{' --quick' if args.quick else ''}"
        f"{' --protobuf' if args.protobuf else ''}`)\n\n"
        f"{stamp}, Python {platform.python_version()}, {platform.machine()}; best of 3; "
        "zstd chunks of 1 MiB (the Writer's defaults). `payload` is the messages' encoded "
        "bytes before compression, `export MB/s` payload per second of the whole export; "
        "`build` makes the records (CARLA: worlds from the archive, Foxglove dicts, JSON); "
        "`ours write` is `export_mcap` over pre-built records and `mcap Writer` the mcap "
        "package writing the same records directly.\n\n" + table(rows)
    )
    if notes:
        section += "\n\n" + "\n".join(f"- {note}" for note in notes)
    print(section)
    write_results(section)


if __name__ == "__main__":
    main()
