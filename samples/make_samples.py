"""Make (or check) the committed synthetic recordings and their JSON summary twins.

Each CARLA sample is one `nanorec.converters.carla.generate.generate(...)` call, listed in
`SAMPLES`, each ROS bag one `nanorec.converters.ros.ros1.generate.generate(...)` call, listed in
`BAGS`; the `.json` twin records that call, so the bytes can always be rebuilt and compared
(`tests/converters/carla/test_generate.py`, `tests/converters/rosbag/test_samples.py`). Run
from the repository root:

    python samples/make_samples.py          # (re)write every sample and twin
    python samples/make_samples.py --check  # exit 1 if a committed file differs
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from pathlib import Path
from typing import Any

from nanorec.converters.carla.generate import generate_to, summary

HERE = Path(__file__).resolve().parent

# file name -> keyword arguments of `generate_to` (and of `generate`)
SAMPLES: dict[str, dict[str, Any]] = {
    "carla-0.9.10-0.9.13-additional-town03.log": {
        "family": "0.9.10-0.9.13",
        "additional_data": True,
        "map_name": "Town03",
    },
    "carla-0.9.15-town03.log": {"family": "0.9.15", "map_name": "Town03"},
    "carla-0.9.16-town03.log": {"family": "0.9.16", "map_name": "Town03", "seed": 1},
    "carla-ue4-dev-2026-town03.log": {"family": "ue4-dev-2026", "map_name": "Town03", "seed": 2},
    "carla-ue5-0.10-town10hd.log": {
        "family": "ue5-0.10",
        "map_name": "Town10HD_Opt",
        "seed": 3,
        "frames": 250,
    },
    "carla-0.9.15-crash-town05.log": {
        "family": "0.9.15",
        "map_name": "Town05",
        "seed": 4,
        "frames": 200,
        "crash": True,
    },
}


# file name -> keyword arguments of the bag generator
BAGS: dict[str, dict[str, Any]] = {
    "rosbag-robot.bag": {"seconds": 6.0, "chunk_threshold": 262144},
    "rosbag-robot-bz2.bag": {"seconds": 3.0, "compression": "bz2", "chunk_threshold": 131072},
    "rosbag-robot-lz4.bag": {"seconds": 3.0, "compression": "lz4", "chunk_threshold": 131072},
    "rosbag-crashed.bag.active": {
        "seconds": 3.0,
        "crash": True,
        "cut": 11,
        "chunk_threshold": 131072,
    },
}


def build_bag(name: str) -> tuple[bytes, dict[str, Any]]:
    """The bytes of bag sample `name` and its JSON summary."""
    import hashlib
    import tempfile

    from nanorec import registry
    from nanorec.converters.ros.ros1.generate import generate

    with tempfile.TemporaryDirectory() as folder:
        path = generate(Path(folder) / name, **BAGS[name])
        data = path.read_bytes()
        with registry.open(path) as recording:
            topics: dict[str, int] = {}
            for number in range(len(recording)):
                kind = recording.kind_of(number)
                topics[kind] = topics.get(kind, 0) + 1
    return data, {
        "generate": BAGS[name],
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "messages": sum(topics.values()),
        "topics": dict(sorted(topics.items())),
    }


def build(name: str) -> tuple[bytes, dict[str, Any]]:
    """The bytes of sample `name` and its JSON summary."""
    if name in BAGS:
        return build_bag(name)
    options = dict(SAMPLES[name])
    family = options.pop("family")
    buffer = io.BytesIO()
    report = generate_to(
        buffer,
        family,
        vehicles=options.pop("vehicles", 8),
        walkers=options.pop("walkers", 4),
        traffic_lights=options.pop("traffic_lights", 4),
        **options,
    )
    data = buffer.getvalue()
    return data, summary(data, report)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args(argv)
    failed = False
    for name in [*SAMPLES, *BAGS]:
        data, info = build(name)
        text = json.dumps(info, indent=2) + "\n"
        log, twin = HERE / name, HERE / f"{name}.json"
        if args.check:
            same = log.exists() and log.read_bytes() == data and twin.read_text() == text
            print(f"{'ok  ' if same else 'DIFF'} {name}")
            failed |= not same
        else:
            log.write_bytes(data)
            twin.write_text(text)
            print(f"wrote {name} ({len(data)} bytes)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
