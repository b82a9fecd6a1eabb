"""A CARLA archive read in place over HTTP (issue 36): `frame(n)` by URL in requests and bytes.

Reuses (or makes, in bench/out/, as bench_view.py does) the synthetic CARLA recording of
`--size` MB converted to an archive (1700 MB make a ~1 GB archive), serves bench/out on
127.0.0.1 by the tests' Range server (which logs each request and the bytes it sent) and
measures, mean (max):

- cold: `--cold` fresh opens (`nanorec.open(url)`, a `CarlaRecording`), each then `frame(n)`
  for a random n (the world built: every actor's pose, the event tables' state);
- warm: `--reads` random frames on one recording;
- side by side, the `mcap` Python reader over the same server (64 KiB read-ahead ranges, the
  `RangeFile` of bench_remote.py) reading every message of the same frames (their log time)
  from the archive's MCAP export, each from a fresh open (`--mcap-reads`; `--no-mcap` skips
  the export, ~1 min of CPU).

Writes the `remote carla` section of bench/RESULTS.md.

    python bench/bench_remote_carla.py                 # ~1 GB archive
    python bench/bench_remote_carla.py --size 20       # quick
"""

from __future__ import annotations

import argparse
import io
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.bench_remote import RangeFile, Sample, _cell  # noqa: E402
from bench.bench_view import FAMILY, SCENE, ensure_archive  # noqa: E402  (one archive for both)
from bench.results import write_section  # noqa: E402
from nanorec import registry  # noqa: E402
from nanorec.converters.carla.recording import CarlaRecording  # noqa: E402
from tests.remote.servers import RangeServer  # noqa: E402

OUT = REPO / "bench" / "out"
KEYS = (
    "open",
    "frame(n) cold, beyond the open",
    "open + frame(n) cold",
    "frame(n) warm",
)


def measure(
    server: RangeServer, url: str, numbers: list[int], cold: int
) -> dict[str, list[Sample]]:
    out: dict[str, list[Sample]] = {key: [] for key in KEYS}
    for number in numbers[:cold]:
        server.reset()
        with registry.open(url) as recording:
            assert isinstance(recording, CarlaRecording)
            opened = (server.requests, server.sent)
            out["open"].append(opened)
            recording.decode(number).actors  # noqa: B018 - the world, actors included
            now = (server.requests, server.sent)
            out["open + frame(n) cold"].append(now)
            out["frame(n) cold, beyond the open"].append((now[0] - opened[0], now[1] - opened[1]))
    with registry.open(url) as recording:
        assert isinstance(recording, CarlaRecording)
        recording.decode(numbers[0])
        for number in numbers[1:]:
            before = (server.requests, server.sent)
            recording.decode(number).actors  # noqa: B018
            out["frame(n) warm"].append((server.requests - before[0], server.sent - before[1]))
    return out


def mcap_side(
    server: RangeServer, name: str, times_ns: list[int], reads: int
) -> dict[str, list[Sample]]:
    """Every message of each frame's log time from the MCAP export, a fresh open each."""
    from mcap.reader import make_reader

    out: dict[str, list[Sample]] = {key: [] for key in KEYS}
    for t_ns in times_ns[:reads]:
        server.reset()
        with io.BufferedReader(RangeFile(server.url(name)), 64 << 10) as handle:
            reader = make_reader(handle)
            assert reader.get_summary() is not None
            opened = (server.requests, server.sent)
            out["open"].append(opened)
            found = list(reader.iter_messages(starting_at=t_ns, ending_before=t_ns + 1))
            assert found, t_ns
            now = (server.requests, server.sent)
            out["open + frame(n) cold"].append(now)
            out["frame(n) cold, beyond the open"].append((now[0] - opened[0], now[1] - opened[1]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1700, help="source MB (1700: ~1 GB archive)")
    parser.add_argument("--reads", type=int, default=100, help="random frames read warm")
    parser.add_argument("--cold", type=int, default=100, help="fresh opens, one frame each")
    parser.add_argument("--mcap-reads", type=int, default=20, help="fresh MCAP opens")
    parser.add_argument("--no-mcap", action="store_true", help="skip the MCAP side")
    args = parser.parse_args()
    archive = ensure_archive(args.size)
    size = archive.stat().st_size
    with registry.open(archive) as local:
        frames = len(local)
        times_ns = (local.reader.index.timestamp_us * 1000).tolist()  # MCAP's log times
        pages = local.reader.pages
        tail = [n for n in local.reader.member_names if n != "messages.msgpack"]
    rng = random.Random(36)
    numbers = [rng.randrange(frames) for _ in range(max(args.reads, args.cold) + 1)]
    rows: dict[str, dict[str, list[Sample]]] = {}
    with RangeServer(OUT).running() as server:
        rows["nanorec, HTTP"] = measure(server, server.url(archive.name), numbers, args.cold)
        print(rows["nanorec, HTTP"], flush=True)
        if not args.no_mcap:
            mcap = archive.with_suffix(".mcap")
            if not mcap.exists():
                from nanorec.outputs.mcap import export_mcap

                started = time.process_time()
                with registry.open(archive) as recording:
                    export_mcap(recording, mcap)
                print(f"MCAP export: {time.process_time() - started:.0f} CPU s", file=sys.stderr)
            stamps = [times_ns[n] for n in numbers]
            rows["mcap reader, HTTP ranges"] = mcap_side(server, mcap.name, stamps, args.mcap_reads)
    lines = ["| | " + " | ".join(rows) + " |", "|---|" + "---|" * len(rows)]
    for key in KEYS:
        lines.append(f"| {key} | " + " | ".join(_cell(row.get(key, [])) for row in rows.values()))
    text = "\n".join(line if line.endswith("|") else line + " |" for line in lines)
    print(text)
    start = "## Reading a CARLA archive in place over HTTP"
    end = "<!-- end remote carla -->"
    header = (
        f"{start} (`python bench/bench_remote_carla.py --size {args.size}`)\n\n"
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. The synthetic CARLA "
        f"recording of bench_view.py ({args.size} MB, family {FAMILY}, {SCENE}) as an archive "
        f"of {size / 1e6:,.0f} MB, {frames:,} frames in {pages.pages if pages else 0} index "
        f"pages (members besides the messages, in order: {', '.join(tail)}), served on "
        f"127.0.0.1 by the logging Range server; requests and bytes it sent, mean (max): cold, "
        f"{args.cold} fresh `nanorec.open(url)` each building `frame(n)` (actors included) "
        f"for a random n; warm, {args.reads} random frames on one recording; the `mcap` "
        f"reader (64 KiB read-ahead ranges), {args.mcap_reads} fresh opens each reading "
        f"every message logged at one of those frames' times from the archive's MCAP "
        f"export.\n\n"
    )
    write_section(start, end, header + text + f"\n{end}")


if __name__ == "__main__":
    main()
