"""Benchmark writing other formats as ROS bags (`nanorec export X --format ros2|ros1`), in MB/s
of source (issue 32 item 8's aim: CARLA -> ROS 2 and pbstream -> ROS 2 >= 30 MB/s).

Inputs, made once in bench/out/: a synthetic CARLA recording of `--mb` MB (family 0.9.16,
the busy town of bench_export.py) and a pbstream of about the same size (a real
Cartographer file's records repeated, as bench_convert.py makes it; a generated one
without ../shared/realdata). Each is converted to an archive once; then, alternating A B C...
for `--rounds` rounds, this process's CPU seconds (user+system: on a shared machine the
wall clock also counts the others' work) of:

- `convert`: the source's own `nanorec convert` (the anchor: what reading it costs);
- `ros2` / `ros1`: `nanorec export SOURCE --format ros2|ros1` as the CLI runs it: the source
  converted to a temporary archive, its standard messages made and encoded, the bag written
  (sqlite3 for ROS 2, an uncompressed ROS1 bag);
- `rosbags Writer`: `rosbags.rosbag2.Writer` (sqlite3) storing the same CDR payloads (read
  back from the bag we wrote), the other anchor: what writing the bag alone costs there.

Medians of the rounds; MB/s = source MB / CPU s. With `--before`, the same export through
the plain path (a `World` and a dict per transform, the plain CDR encoder: what nanorec did
before), on the first `--before-frames` frames' share of the source. Writes
bench/RESULTS.md's `bridge` section.

    python bench/bench_bridge.py [--mb 100] [--rounds 3] [--before]
"""

from __future__ import annotations

import argparse
import datetime
import platform
import resource
import shutil
import sqlite3
import statistics
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from results import write_section

from nanorec.contract import ConvertRequest

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
START, END = "<!-- bridge:start -->", "<!-- bridge:end -->"
SCENE = {"vehicles": 120, "walkers": 60, "traffic_lights": 40}


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def timed(action: Callable[[], Any]) -> float:
    used = cpu()
    action()
    return cpu() - used


def carla_input(mb: int) -> Path:
    from nanorec.converters.carla.generate import generate_to

    path = OUT / f"bridge-carla-0.9.16-{mb}MB.log"
    if not path.exists():
        OUT.mkdir(exist_ok=True)
        generate_to(path, "0.9.16", target_bytes=mb * 1_000_000, **SCENE)
    return path


def pbstream_input(mb: int) -> Path:
    from bench_convert import _pbstream_input

    path = OUT / f"bridge-pbstream-{mb}MB.pbstream"
    if not path.exists():
        OUT.mkdir(exist_ok=True)
        _pbstream_input(path, mb * 1_000_000)
    return path


def remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


def export(source: Path, out: Path, to: str, recording: Any = None) -> None:
    from nanorec import registry
    from nanorec.converters.ros.bridge import to_ros1, to_ros2

    remove(out)
    run = to_ros2.export if to == "ros2" else to_ros1.export
    if recording is not None:
        run(recording, out)
        return
    with registry.open(source) as opened:
        run(opened, out)


def bag_messages(folder: Path) -> tuple[list[tuple[str, str, str]], list[tuple[str, int, bytes]]]:
    """The (name, type, definition) of each topic and the (topic, time, payload) messages of
    the sqlite3 bag we wrote."""
    (db,) = folder.glob("*.db3")
    con = sqlite3.connect(db)
    try:
        topics = list(con.execute("select name, type, '' from topics order by id"))
        messages = list(
            con.execute(
                "select t.name, m.timestamp, m.data from messages m "
                "join topics t on t.id = m.topic_id order by m.id"
            )
        )
    finally:
        con.close()
    return topics, messages


def rosbags_write(out: Path, topics: list[Any], messages: list[Any]) -> None:
    from rosbags.rosbag2 import Writer
    from rosbags.typesys import Stores, get_typestore

    remove(out)
    store = get_typestore(Stores.ROS2_HUMBLE)
    with Writer(out, version=8) as writer:
        connections = {
            name: writer.add_connection(name, type_name, typestore=store)
            for name, type_name, _ in topics
        }
        for topic, time_ns, data in messages:
            writer.write(connections[topic], time_ns, data)


class Plain:
    """A recording seen through the plain path: a `World` and dicts per frame, the plain
    CDR encoder (nanorec before its generated one)."""

    def __init__(self, recording: Any, frames: int) -> None:
        self._recording, self._frames = recording, frames

    def __getattr__(self, name: str) -> Any:
        return getattr(self._recording, name)

    def standard_messages(self, selection: Any) -> Iterator[Any]:
        from nanorec.converters.carla.standard import KIND_TOPICS, frame_messages

        rec = self._recording
        stamps = rec.reader.index.timestamp_us
        for number in range(self._frames):
            yield from frame_messages(rec.frame(number), int(stamps[number]) * 1000,
                                      KIND_TOPICS["frame"])  # fmt: skip


def plain_encoding() -> Any:
    """A context in which the bridge encodes with the plain `Encoder`."""
    import contextlib

    from nanorec.converters.ros.bridge import standard as bridge_standard
    from nanorec.converters.ros.ros2.cdr_encode import Encoder

    @contextlib.contextmanager
    def swapped() -> Iterator[None]:
        original = bridge_standard.StandardEncoder.encode
        cache: dict[int, Any] = {}

        def cached(self: Any, type_name: str, value: Any) -> bytes:
            encoder = cache.get(id(self))
            if encoder is None:
                encoder = cache[id(self)] = Encoder(self.definitions)
            return encoder.encode(type_name, value)  # type: ignore[no-any-return]

        bridge_standard.StandardEncoder.encode = cached  # type: ignore[method-assign]
        try:
            yield
        finally:
            bridge_standard.StandardEncoder.encode = original  # type: ignore[method-assign]

    return swapped()


def measure(
    name: str, source: Path, work: Path, rounds: int, before_frames: int
) -> list[dict[str, Any]]:
    from nanorec import registry

    converter = registry.for_native(source)
    archive = work / "in.nanover.zip"
    converter.convert(source, archive, ConvertRequest(overwrite=True))
    size = source.stat().st_size
    out2, out1, theirs = work / "out", work / "out.bag", work / "rosbags"
    export(archive, out2, "ros2")
    topics, messages = bag_messages(out2)
    actions: dict[str, Callable[[], Any]] = {
        "convert": lambda: converter.convert(source, archive, ConvertRequest(overwrite=True)),
        "ros2": lambda: export(source, out2, "ros2"),
        "ros1": lambda: export(source, out1, "ros1"),
        "rosbags Writer": lambda: rosbags_write(theirs, topics, messages),
    }
    samples: dict[str, list[float]] = {label: [] for label in actions}
    for _ in range(rounds):
        for label, action in actions.items():
            samples[label].append(timed(action))
            print(name, label, f"{samples[label][-1]:.2f} s", flush=True)
    rows = [
        {"input": name, "row": label, "mb": size / 1e6, "s": statistics.median(got)}
        for label, got in samples.items()
    ]
    if before_frames and name.startswith("CARLA"):
        with registry.open(archive) as rec:
            frames = min(before_frames, len(rec))
            share = size * frames / len(rec)
            for label, to in (("ros2, plain path (before)", "ros2"),
                              ("ros1, plain path (before)", "ros1")):  # fmt: skip
                out = out2 if to == "ros2" else out1
                with plain_encoding():
                    seconds = timed(lambda: export(archive, out, to, Plain(rec, frames)))  # noqa: B023
                rows.append({"input": name, "row": label, "mb": share / 1e6, "s": seconds})
                print(rows[-1], flush=True)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| input | run | source MB | CPU s (median) | MB/s of source | x convert |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        anchor = next(a for a in rows if a["input"] == r["input"] and a["row"] == "convert")
        ratio = (r["mb"] / r["s"]) / (anchor["mb"] / anchor["s"])
        lines.append(
            f"| {r['input']} | {r['row']} | {r['mb']:.1f} | {r['s']:.2f} | "
            f"**{r['mb'] / r['s']:.1f}** | {ratio:.2f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=100, help="size of each source, MB")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", action="store_true", help="also the plain path (CARLA)")
    parser.add_argument("--before-frames", type=int, default=300)
    args = parser.parse_args()
    import rosbags.rosbag2  # noqa: F401  (imports outside the timings)

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-bridge-", dir=HERE) as tmp:
        work = Path(tmp)
        for name, source in (
            (f"CARLA {args.mb} MB (synthetic)", carla_input(args.mb)),
            (f"pbstream {args.mb} MB (records repeated)", pbstream_input(args.mb)),
        ):
            rows += measure(
                name, source, work, args.rounds, args.before_frames if args.before else 0
            )
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = f"python bench/bench_bridge.py --mb {args.mb} --rounds {args.rounds}"
    command += " --before" if args.before else ""
    text = (
        f"{START}\n## Other formats as ROS bags, MB/s of source (`{command}`)\n\n"
        f"{stamp}, Python {platform.python_version()}, {platform.machine()}; CPU seconds "
        f"(user+system of this process), median of {args.rounds} rounds run alternately. "
        "`convert`: the source's own conversion to an archive (the anchor); `ros2`/`ros1`: "
        "`nanorec export SOURCE` (a temporary archive made, then a sqlite3 bag / an "
        "uncompressed ROS1 bag written); plain path (before): the first frames exported from "
        "the archive through a `World` and dicts per frame and the plain CDR encoder, as "
        "before issue 32 item 8, MB/s of those frames' share of the source; "
        "`rosbags Writer`: rosbags' rosbag2 Writer storing the same CDR payloads (writing "
        "alone). x convert > 1: faster than converting the source. Aim (issue 32): ros2 "
        ">= 30 MB/s of source.\n\n"
        f"{table(rows)}\n{END}"
    )
    print(text)
    write_section(START, END, text)


if __name__ == "__main__":
    main()
