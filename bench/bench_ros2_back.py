"""Benchmark ROS 2 export back and `cat` of small messages, before and after (issue #33).

For a bag of odometry-only small messages of each storage (our generator, sized by `--mb`):
- export back byte for byte, MB/s of bag by CPU time, A B A B: "before" = the joins fed one
  message at a time (`tests/converters/ros2/reference_join.py`, the code as it was) with each
  message's data decoded alone; "after" = `pieces.file_pieces` (runs of messages, the index
  read a page at a time as export reads it); and the peak RSS (the child's own VmHWM) of a
  real export (`converter.export`, the archive opened as the export verb opens it) in a
  child process;
- cat as NDJSON, µs of CPU a message: before (`dumps(decoded_line(rec)(n))`), after
  (`lines.ndjson_lines`), our plain decode alone, and `rosbags` (`deserialize_cdr` alone, and
  then a walk turning the result into plain JSON-able values, and that then as a JSON line).
Run from the repository root (it imports the reference from tests/); writes bench/RESULTS.md's
ros2back section:

    python bench/bench_ros2_back.py --mb 25
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import io
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from results import write_section

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
START, END = "<!-- ros2back:start -->", "<!-- ros2back:end -->"


def len_of(archive: Path) -> int:
    from nanorec.archive.reader import ArchiveReader

    with ArchiveReader(archive, paged_index=True) as reader:
        return len(reader)


def cpu(action: Any) -> float:
    start = time.process_time()
    action()
    return time.process_time() - start


def export_before(archive: Path) -> str:
    from nanorec.archive.reader import ArchiveReader
    from nanorec.converters.ros.ros2.datas import data_of
    from nanorec.converters.ros.ros2.members import skeleton_member
    from nanorec.converters.ros.ros2.meta import Ros2Meta
    from tests.converters.ros2.reference_join import old_join_db3, old_join_mcap

    sha = hashlib.sha256()
    with ArchiveReader(archive) as reader:
        meta = Ros2Meta(reader)
        numbers = meta.numbers_of_file(0).tolist()
        old = old_join_db3 if meta.files[0]["storage"] == "sqlite3" else old_join_mcap
        datas = (data_of(reader, n) for n in numbers)
        for piece in old(reader.member(skeleton_member(0)), datas):
            sha.update(piece)
    return sha.hexdigest()


def export_after(archive: Path) -> str:
    from nanorec.archive.reader import ArchiveReader
    from nanorec.converters.ros.ros2.meta import Ros2Meta
    from nanorec.converters.ros.ros2.pieces import file_pieces

    sha = hashlib.sha256()
    with ArchiveReader(archive, paged_index=True) as reader:
        for piece in file_pieces(reader, Ros2Meta(reader), 0):
            sha.update(piece)
    return sha.hexdigest()


def child_export(archive: Path, out: Path) -> tuple[float, float]:
    """A real export in a child process: (CPU s, peak RSS MB)."""
    code = (
        "import sys, time, resource\n"
        "from pathlib import Path\n"
        "from nanorec import registry\n"
        "from nanorec.archive.reader import ArchiveReader\n"
        "from nanorec.contract import ExportRequest\n"
        "t = time.process_time()\n"
        "with ArchiveReader(Path(sys.argv[1]), paged_index=True) as r:\n"
        "    wanted = ExportRequest(overwrite=True)\n"
        "    assert registry.get('ros2').export(r, Path(sys.argv[2]), wanted).identical\n"
        "peak = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1]\n"
        "print(time.process_time() - t, peak)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(archive), str(out)],
        check=True,
        capture_output=True,
        text=True,
    )
    seconds, rss = done.stdout.split()
    return float(seconds), float(rss) / 1024


def plain(value: Any) -> Any:
    """rosbags' message as plain JSON-able values."""
    fields = getattr(value, "__dataclass_fields__", None)
    if fields is not None:
        return {k: plain(getattr(value, k)) for k in fields if k != "__msgtype__"}
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


def cat_rates(archive: Path, bag: Path, count: int) -> dict[str, float]:
    from rosbags.rosbag2 import Reader
    from rosbags.typesys import Stores, get_typestore

    from nanorec import registry
    from nanorec.converters.ros.common.topics import decoded_line
    from nanorec.converters.ros.ros2.lines import ndjson_lines
    from nanorec.outputs.tables import dumps

    rates: dict[str, float] = {}
    with registry.open(archive) as rec:
        numbers = np.arange(min(count, len(rec)))
        line = decoded_line(rec)
        line(0)
        for name, action in [
            ("before", lambda: [dumps(line(n)) for n in numbers.tolist()]),
            ("after", lambda: io.StringIO().writelines(ndjson_lines(rec, numbers, line))),
        ] * 2:
            rates.setdefault(name, 1e9)
            rates[name] = min(rates[name], cpu(action) / len(numbers) * 1e6)
        decoder = rec.decoder  # type: ignore[attr-defined]
        items = [(rec.type_of(rec.kind_of(n)), rec.raw(n)) for n in numbers.tolist()]  # type: ignore[attr-defined]
        rates["ours plain decode"] = (
            cpu(lambda: [decoder.plain_decode(t, d) for t, d in items]) / len(items) * 1e6
        )
    store = get_typestore(Stores.ROS2_HUMBLE)
    raws = []
    with Reader(bag) as reader:
        for connection, _, raw in reader.messages():
            raws.append((connection.msgtype, raw))
            if len(raws) >= count:
                break
    rosbags = {
        "rosbags deserialize": lambda: [store.deserialize_cdr(r, t) for t, r in raws],
        "rosbags deserialize + plain": lambda: [
            plain(store.deserialize_cdr(r, t)) for t, r in raws
        ],
        "rosbags deserialize + plain + JSON line": lambda: io.StringIO().writelines(
            json.dumps(plain(store.deserialize_cdr(r, t))) + "\n" for t, r in raws
        ),
    }
    for name, action in list(rosbags.items()) * 2:
        rates[name] = min(rates.get(name, 1e9), cpu(action) / len(raws) * 1e6)
    return rates


def main() -> None:
    from nanorec import registry
    from nanorec.converters.ros.ros2.generate import generate

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=25, help="size of each bag, MB of sqlite3")
    parser.add_argument("--cat", type=int, default=50_000, help="messages for the cat rates")
    args = parser.parse_args()
    lines: list[str] = []
    cats: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-ros2back-") as tmp:
        work = Path(tmp)
        for storage in ("sqlite3", "mcap"):
            bag = work / storage
            generate(bag, seconds=args.mb / 0.0025, storage=storage, image=0)  # as bench_ros2
            size = sum(p.stat().st_size for p in bag.iterdir())
            archive = work / f"{storage}.nanover.zip"
            registry.get("ros2").convert(bag, archive)
            times: dict[str, list[float]] = {"before": [], "after": []}
            hashes = set()
            for name in ["before", "after"] * 2:
                action = export_before if name == "before" else export_after
                start = time.process_time()
                hashes.add(action(archive))
                times[name].append(time.process_time() - start)
            seconds, rss = child_export(archive, work / f"{storage}-back")
            mb = size / 1e6
            lines.append(f"| {storage}, {mb:.0f} MB, {len_of(archive)} messages | "
                         + " | ".join(" / ".join(f"{mb / v:.1f}" for v in times[name])
                                      for name in ("before", "after"))
                         + f" | {mb / seconds:.1f} | {rss:.0f} | {len(hashes) == 1} |")  # fmt: skip
            print(lines[-1], flush=True)
            for name, rate in cat_rates(archive, bag, args.cat).items():
                cats.append(f"| {storage} | {name} | {rate:.1f} |")
                print(cats[-1], flush=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = "\n".join(
        [
            f"{START}\n## ROS 2 export back and cat of small messages "
            f"(`python bench/bench_ros2_back.py --mb {args.mb:g} --cat {args.cat}`)\n",
            f"{stamp}, Python {platform.python_version()}, {platform.machine()}, "
            f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.0f}. Odometry-only bags "
            "from our generator. Export: MB of bag a CPU second of this process, A B A B; "
            "before = the per-message joins (tests/converters/ros2/reference_join.py); after = "
            "`pieces.file_pieces` (what export writes); the child is a whole `converter.export` "
            "(its CPU and its own VmHWM). Cat: CPU µs a message (best of 2) over the first "
            f"{args.cat} messages.\n",
            "| bag | export MB/s before | export MB/s after | export MB/s (child) | "
            "peak RSS MB (child) | same bytes |",
            "|---|---|---|---|---|---|",
            *lines,
            "",
            "| bag | cat as NDJSON | µs a message |",
            "|---|---|---|",
            *cats,
            END,
        ]
    )
    write_section(START, END, text)


if __name__ == "__main__":
    main()
