"""The ROS 2 Parquet fast path (`columnar.py`, `cdr_columns.py`): a topic decoded a run at
once gives the very table the per-message path (`nanorec.outputs.arrow.iter_batches`) gives, on
generated bags, real bags, messages of one topic changing size, types that force the
fallback, and broken payloads."""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import nanorec
from nanorec import registry
from nanorec.converters.ros.common.run_columns import decode_run, leaves
from nanorec.converters.ros.ros2 import columnar
from nanorec.converters.ros.ros2.cdr_pack import Packer
from nanorec.converters.ros.ros2.msgdef import SEPARATOR, load
from nanorec.converters.ros.ros2.storage import Definition, Topic
from nanorec.converters.ros.ros2.writer import NewBag, write_bag
from nanorec.errors import NanorecError
from nanorec.outputs import arrow
from tests.arrow_same import same_tables
from tests.conftest import REALDATA

pa = pytest.importorskip("pyarrow")

MIXED = "pkg/msg/Mixed"
LISTY = "pkg/msg/Listy"
INNER = "MSG: pkg/Inner\nint32 sec\nuint32 nanosec\nstring frame"
MIXED_TEXT = "\n".join(
    [
        "pkg/Inner inner",
        "bool flag",
        "int8 small",
        "uint64 big",
        "float32 ratio",
        "string name",
        "float64[3] triple",
        "uint8[4] quad",
        "int16[] shorts",
        "float64[] values",
        "uint8[] blob",
        "string tail",
        "char c",
        "byte b",
        SEPARATOR,
        INNER,
    ]
)
LISTY_TEXT = f"string[] names\npkg/Inner[] inners\nfloat64 x\n{SEPARATOR}\n{INNER}"
DEFINITIONS = {MIXED: ("ros2msg", MIXED_TEXT), LISTY: ("ros2msg", LISTY_TEXT)}


def mixed(i: int) -> dict[str, Any]:
    """A Mixed message whose strings and sequences change length with `i`."""
    values = np.arange(i % 5, dtype="f8") * 0.5
    if i % 7 == 3 and len(values):
        values[0] = math.nan if i % 2 else math.inf
    return {
        "inner": {"sec": i - 50, "nanosec": i * 1000, "frame": "f" * (i % 4)},
        "flag": i % 3 == 0,
        "small": -(i % 100),
        "big": 2**62 + i,
        "ratio": i / 3,
        "name": "é" * (i % 3),
        "triple": np.array([i, -i, math.nan if i % 11 == 0 else 0.25]),
        "quad": np.array([i % 256, 1, 2, 3], "u1"),
        "shorts": np.arange(i % 6, dtype="i2") - 3,
        "values": values,
        "blob": np.frombuffer(bytes(range(i % 9)), "u1"),
        "tail": "" if i % 2 else "t",
        "c": 65 + i % 26,
        "b": i % 256,
    }


def listy(i: int) -> dict[str, Any]:
    inner = {"sec": i, "nanosec": 0, "frame": "x"}
    return {"names": ["a"] * (i % 3), "inners": [inner] * (i % 2), "x": i * 0.1}


def make_bag(folder: Path, entries: list[tuple[str, str, bytes]], storage: str = "mcap") -> Path:
    """A bag of topics `/mixed` (Mixed) and `/listy` (Listy) holding `entries`
    (topic, type, payload) in order, 10 ms apart."""
    types = {topic: type_name for topic, type_name, _ in entries}
    topics = [Topic(k, name, t, "cdr") for k, (name, t) in enumerate(sorted(types.items()), 1)]
    bag = NewBag(
        topics=topics,
        definitions=[Definition(t, *DEFINITIONS[t]) for t in sorted(set(types.values()))],
        storage=storage,
        distro="humble",
    )
    messages = [(topic, 10**18 + n * 10**7, data) for n, (topic, _, data) in enumerate(entries)]
    write_bag(folder, bag, messages, folder=True, overwrite=False)
    return folder


def payloads(count: int, first: int = 0) -> list[tuple[str, str, bytes]]:
    packer = Packer(DEFINITIONS)
    out = []
    for i in range(first, first + count):
        out.append(("/mixed", MIXED, packer.encode(MIXED, mixed(i))))
        if i % 4 == 0:
            out.append(("/listy", LISTY, packer.encode(LISTY, listy(i))))
    return out


def tables(rec: Any, kind: str) -> tuple[Any, Any]:
    """`kind`'s table by the per-message path and by `nanorec.outputs.arrow.table` (columns)."""
    slow = pa.Table.from_batches(list(arrow.iter_batches(rec, kind)))
    return slow, arrow.table(rec, kind)


def assert_same_tables(path: Path) -> int:
    """Every topic's two tables are equal; returns how many were taken by the fast path."""
    fast = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # definitions a real bag lacks
        with nanorec.open(path) as rec:
            for kind in rec.table_kinds():
                slow, quick = tables(rec, kind)
                assert same_tables(slow, quick), kind
                fast += columnar._plan(rec, kind) is not None
    return fast


@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
def test_messages_changing_size_give_the_per_message_table(tmp_path: Path, storage: str) -> None:
    bag = make_bag(tmp_path / "bag", payloads(120), storage)
    with nanorec.open(bag) as rec:
        assert columnar._plan(rec, "/mixed") is not None  # the fast path
        assert columnar._plan(rec, "/listy") is None  # string[], Inner[]: message by message
        slow, quick = tables(rec, "/mixed")
        assert same_tables(slow, quick)
        assert quick.schema.field("blob").type == pa.binary()
        assert quick.schema.field("inner.frame").type == pa.string()
        assert str(quick.column("values")[3].as_py()) == "[nan, 0.5, 1.0]"  # a list, NaN kept
        slow, quick = tables(rec, "/listy")
        assert same_tables(slow, quick)


def test_runs_across_batches_and_a_selection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs cut by `BATCH_ROWS` and `BATCH_BYTES`, and a cut of the messages."""
    bag = make_bag(tmp_path / "bag", payloads(90))
    monkeypatch.setattr(arrow, "BATCH_ROWS", 16)
    monkeypatch.setattr(arrow, "BATCH_BYTES", 900)
    with nanorec.open(bag) as rec:
        for selection in (None, nanorec.Selection.make(messages="7:61")):
            for kind in ("/mixed", "/listy"):
                slow = pa.Table.from_batches(list(arrow.iter_batches(rec, kind, selection)))
                assert same_tables(slow, arrow.table(rec, kind, selection)), (kind, selection)
        batches = [b for _, b in arrow.column_batches(rec, ["/mixed"])]
        assert len(batches) > 90 // 16 and max(b.num_rows for b in batches) <= 16


def test_generated_bags_take_the_fast_path(tmp_path: Path) -> None:
    from nanorec.converters.ros.ros2.generate import generate

    generate(tmp_path / "images", seconds=3, storage="sqlite3", image=64)
    assert assert_same_tables(tmp_path / "images") == 3  # PoseStamped, String, Image


def test_a_value_the_fast_path_declines_goes_message_by_message(tmp_path: Path) -> None:
    """A string that is not UTF-8, a big-endian payload, a uint64 beyond int64: each run
    holding one is decoded message by message, and the tables stay equal (the uint64 lands
    in a uint64 column: it failed with Arrow's OverflowError before)."""
    packer = Packer(DEFINITIONS)
    entries = payloads(20)
    entries[3] = ("/mixed", MIXED, packer.encode(MIXED, dict(mixed(5), big=2**64 - 1)))
    with nanorec.open(make_bag(tmp_path / "huge", entries)) as rec:
        table = arrow.table(rec, "/mixed")
    big = table.column("big")
    assert str(big.type) == "uint64" and 2**64 - 1 in big.to_pylist()
    latin = bytearray(packer.encode(MIXED, dict(mixed(1), name="ab")))
    at = latin.index(b"ab\x00")
    latin[at] = 0xE9  # "\xe9b": not UTF-8, so the decoder gives bytes
    entries = payloads(20)
    entries[4] = ("/mixed", MIXED, bytes(latin))
    entries[6] = ("/mixed", MIXED, packer.encode(MIXED, mixed(9), big_endian=True))
    assert assert_same_tables(make_bag(tmp_path / "latin", entries)) == 1


def test_a_broken_payload_fails_as_the_per_message_path_does(tmp_path: Path) -> None:
    entries = payloads(20)
    topic, type_name, data = entries[5]
    entries[5] = (topic, type_name, data[:-9])  # cut inside the last fields
    with nanorec.open(make_bag(tmp_path / "bag", entries)) as rec:
        with pytest.raises(NanorecError) as slow:
            list(arrow.iter_batches(rec, "/mixed"))
        with pytest.raises(NanorecError) as quick:
            arrow.table(rec, "/mixed")
    assert type(quick.value) is type(slow.value) and str(quick.value) == str(slow.value)


def test_decode_run_declines_what_the_decoder_refuses() -> None:
    """Straight on payloads: what the decoder refuses or decodes otherwise is None here."""
    types = {**load(DEFINITIONS, MIXED), **load(DEFINITIONS, LISTY)}
    plan = leaves(lambda name: columnar._fields(types, name), MIXED, columnar.CDR)
    listy = leaves(lambda name: columnar._fields(types, name), LISTY, columnar.CDR)
    assert plan is not None and listy is None
    good = Packer(DEFINITIONS).encode(MIXED, mixed(4))
    cases = {
        "fine": [good, good],
        "short": [good, good[:-6]],
        "trailing": [good, good + b"\x00" * 4],
        "no header": [good, b"\x00"],
        "xcdr2": [good, b"\x00\x07" + good[2:]],
    }
    found = {}
    for name, datas in cases.items():
        lengths = np.array([len(d) for d in datas], np.int64)
        starts = np.cumsum(lengths) - lengths
        found[name] = decode_run(plan, columnar.CDR, b"".join(datas), starts, lengths) is not None
    assert found == {"fine": True, "short": False, "trailing": False, "no header": False,
                     "xcdr2": False}  # fmt: skip


def _real_bags() -> list[Path]:
    folder = REALDATA / "ros2"
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if registry.for_directory(p))


@pytest.mark.realdata
@pytest.mark.parametrize("path", _real_bags(), ids=lambda p: p.name)
def test_real_bags_give_the_per_message_tables(path: Path) -> None:
    assert_same_tables(path)
