"""Archive messages with wrong values but valid checksums (another writer's mistake, or a
crafted file): every verb answers with one line and an exit status, never a traceback.

Each trial replaces one entry of one frame map with a value of another type (an int where
bytes belong, a list, a map, bytes of the wrong length...), rewrites the archive with fresh
checksums, and runs the verbs on it. NANOREC_STRESS=1 runs ten times as many trials.
"""

from __future__ import annotations

import os
import random
import struct
from pathlib import Path
from typing import Any

import msgpack
import pytest

from nanorec.archive.reader import ArchiveReader
from nanorec.archive.writer import ArchiveWriter
from nanorec.cli import _register, app
from nanorec.converters.carla.convert import convert
from tests.conftest import SAMPLES, make_runner

TRIALS = 150 if os.environ.get("NANOREC_STRESS") else 10
ODD = [1e300, -1e300, float("nan"), float("inf"), -5.0, 0.0]
VALUES: list[Any] = [300, -1, 2**40, "x", b"", b"\xff" * 7, [], {}, None, 1.5, [1, 2], {"a": 1}]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("damaged")
    archive = work / "base.nanover.zip"
    convert(SAMPLES / "carla-0.9.10-0.9.13-additional-town03.log", archive)
    with ArchiveReader(archive) as reader:
        skip = {"messages.msgpack", "index.msgpack"}  # and the writer's own nanorec.* members
        return {
            "members": {
                n: reader.member(n)
                for n in reader.member_names
                if n not in skip and not n.startswith("nanorec")
            },
            "messages": [reader.read(i) for i in range(len(reader))],
            "stamps": reader.index.timestamp_us.tolist(),
            "flags": reader.index.flags.tolist(),
            "source": (reader.description or {})["source"],
        }


@pytest.mark.slow
@pytest.mark.parametrize("trial", range(TRIALS))
def test_a_wrong_value_is_one_line(trial: int, base: dict[str, Any], tmp_path: Path) -> None:
    rng = random.Random(trial)
    messages = base["messages"]
    number = rng.randrange(len(messages))
    damaged = msgpack.unpackb(msgpack.packb(messages[number]))
    key = rng.choice(sorted(damaged["frame"]))
    change = rng.randrange(4)
    if change == 0:
        del damaged["frame"][key]  # a packet's records gone (FrameStart included)
    elif change == 1 and "start" in damaged["frame"]:
        key = "start"  # a FrameStart with an absurd elapsed time or duration
        frame_id = struct.unpack_from("<Q", damaged["frame"]["start"])[0]
        damaged["frame"]["start"] = struct.pack("<Qdd", frame_id, rng.choice(ODD), rng.choice(ODD))
    else:
        damaged["frame"][key] = rng.choice(VALUES)
    archive = tmp_path / "damaged.nanover.zip"
    with ArchiveWriter(archive, source_format="carla", source=base["source"]) as writer:
        for n, message in enumerate(messages):
            chosen = damaged if n == number else message
            writer.write(chosen, timestamp_us=base["stamps"][n], flags=base["flags"][n])
        for name, data in base["members"].items():
            writer.add_member(name, data)
    _register()
    runner = make_runner()
    low, high = max(0, number - 2), number + 3
    for args in (
        ["info", archive],
        ["info", archive, "--json"],
        ["collisions", archive],
        ["export", archive, "-o", tmp_path / "same.log"],
        ["export", archive, "-o", tmp_path / "clip.log", "--frames", f"{low}:{high}"],
        ["cat", archive, "-t", "pos"],
        ["cat", archive],
        ["play", archive, "--immediate"],
    ):
        result = runner.invoke(app, [str(a) for a in args])
        assert isinstance(result.exception, SystemExit | None), (key, args, result.exception)
        assert result.exit_code in (0, 1, 2), (key, args)
