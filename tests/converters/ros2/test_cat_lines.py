"""`nanorec cat` of a ROS 2 archive reads and decodes runs of messages (`lines.py`) and
must print what it printed one message at a time (`dumps(decoded_line(rec)(n))`): on
generated bags of both storages, every real bag and the samples; and the plain decode must
be the decode made JSON's (NaN, non-UTF-8 strings, every kind of field), damaged payloads
falling back to the usual errors."""

from __future__ import annotations

import io
import random
import warnings
from pathlib import Path

import numpy as np
import pytest

from nanorec import registry
from nanorec.cli import _register, app
from nanorec.converters.ros.common.topics import decoded_line
from nanorec.converters.ros.ros2 import lines
from nanorec.converters.ros.ros2.cdr import Decoder
from nanorec.converters.ros.ros2.cdr_encode import Encoder
from nanorec.converters.ros.ros2.generate import generate
from nanorec.converters.ros.ros2.lines import ndjson_lines
from nanorec.outputs.tables import dumps, json_safe, write_ndjson
from tests.conftest import REALDATA, SAMPLES, make_runner
from tests.converters.ros2.test_cdr import DEFS, random_value

pytest.importorskip("zstandard")
pytest.importorskip("mcap")

REAL = sorted(p for p in (REALDATA / "ros2").glob("*") if p.is_dir()) if REALDATA.is_dir() else []
REAL = [p for p in REAL if any(f.suffix in (".db3", ".mcap", ".zstd") for f in p.iterdir())]


def _both(archive: Path) -> tuple[str, str]:
    """(one message at a time, in runs) NDJSON of every message of `archive`."""
    texts = []
    for runs in (False, True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with registry.open(archive) as rec:
                rec.on_undecodable = lambda error: None  # type: ignore[attr-defined]
                out = io.StringIO()
                line = decoded_line(rec)
                numbers = np.arange(len(rec))
                if runs:
                    for text in ndjson_lines(rec, numbers, line):  # type: ignore[arg-type]
                        out.write(text)
                else:
                    write_ndjson(map(line, numbers.tolist()), out)
                texts.append(out.getvalue())
    return texts[0], texts[1]


@pytest.mark.parametrize("bag", [SAMPLES / "ros2-robot", SAMPLES / "ros2-humble-robot", *REAL],
                         ids=lambda p: p.name)  # fmt: skip
def test_lines_as_one_at_a_time(bag: Path, tmp_path: Path) -> None:
    archive = tmp_path / "a.nanover.zip"
    registry.get("ros2").convert(bag, archive)
    before, now = _both(archive)
    assert now == before


@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
def test_generated_bag_lines_and_cli(
    storage: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lines, "_RUN", 300)
    bag = tmp_path / "bag"
    generate(bag, seconds=40, storage=storage, image=16)
    archive = tmp_path / "a.nanover.zip"
    registry.get("ros2").convert(bag, archive)
    before, now = _both(archive)
    assert now == before and before.count("\n") > 900  # more than one run
    _register()
    result = make_runner().invoke(app, ["cat", str(archive), "--messages", "3:1000"])
    assert result.exit_code == 0
    assert result.stdout == "".join(before.splitlines(keepends=True)[3:1000])


def test_plain_decode_is_the_decode_made_json() -> None:
    rng = random.Random(11)
    encoder, decoder = Encoder(DEFS), Decoder(DEFS)
    for big_endian in (False, True):
        for _ in range(100):
            value = random_value(rng)
            value["u"] = np.array([float("nan"), 1.5, float("inf")][: rng.randrange(4)])
            value["n"] = rng.choice(["text", b"\xff\xfe"])
            data = encoder.encode("pkg/msg/All", value, big_endian=big_endian)
            plain = decoder.plain_decode("pkg/msg/All", data)
            assert plain is not None
            assert dumps(plain) == dumps(decoder.decode("pkg/msg/All", data))
            assert json_safe(plain) == json_safe(decoder.decode("pkg/msg/All", data))


def test_plain_decode_leaves_errors_to_decode() -> None:
    decoder = Decoder(DEFS)
    data = Encoder(DEFS).encode("pkg/msg/All", random_value(random.Random(2)))
    for bad in (data[:3], data[:40], b"\x00\x03" + data[2:], data + b"\x00" * 8):
        assert decoder.plain_decode("pkg/msg/All", bad) is None
