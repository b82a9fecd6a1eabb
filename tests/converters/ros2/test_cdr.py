"""The ROS 2 CDR decoder against `rosbags` (the oracle) on every message of the real bags,
round trips through the encoder, and damaged payloads (only NanorecError, bounded work)."""

from __future__ import annotations

import dataclasses
import functools
import math
import random
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("zstandard")
pytest.importorskip("rosbags")

import zstandard
from rosbags.typesys import Stores, get_types_from_idl, get_types_from_msg, get_typestore

from nanorec.converters.ros.ros2 import msgdef
from nanorec.converters.ros.ros2.cdr import Decoder
from nanorec.converters.ros.ros2.cdr_encode import Encoder
from nanorec.errors import FormatError, NanorecError, TruncatedError, UnsupportedError
from tests.conftest import REALDATA

ROS2 = REALDATA / "ros2"
JAZZY = get_typestore(Stores.ROS2_JAZZY)
Defs = dict[str, tuple[str, str]]


def storage_files() -> list[Path]:
    if not ROS2.is_dir():
        return []
    return sorted(p for p in ROS2.glob("*/*") if p.name.endswith((".db3", ".db3.zstd", ".mcap")))


def read_file(path: Path) -> tuple[Defs, list[tuple[str, bytes]]]:
    """The definitions a storage file carries and its (type, CDR payload) messages."""
    if path.suffix == ".mcap":
        from mcap.reader import make_reader

        with path.open("rb") as stream:
            reader = make_reader(stream)
            defs: Defs = {}
            messages = []
            for schema, _channel, message in reader.iter_messages():
                assert schema is not None
                if schema.encoding:  # an empty text is an empty message
                    defs[schema.name] = (schema.encoding, schema.data.decode())
                messages.append((schema.name, bytes(message.data)))
            return defs, messages
    raw = path.read_bytes()
    if path.name.endswith(".zstd"):
        raw = zstandard.ZstdDecompressor().decompress(raw, max_output_size=1 << 26)
    with tempfile.NamedTemporaryFile(suffix=".db3") as copy:  # WAL mode -> rollback journal
        copy.write(raw[:18] + b"\x01\x01" + raw[20:])
        copy.flush()
        db = sqlite3.connect(f"file:{copy.name}?immutable=1", uri=True)
        return read_db(db)


def read_db(db: sqlite3.Connection) -> tuple[Defs, list[tuple[str, bytes]]]:
    tables = {r[0] for r in db.execute("select name from sqlite_master where type='table'")}
    defs = {}
    if "message_definitions" in tables:
        query = "select topic_type, encoding, encoded_message_definition from message_definitions"
        defs = {t: (e, d) for t, e, d in db.execute(query) if e}
    types = dict(db.execute("select id, type from topics"))
    messages = []
    for topic, data in db.execute("select topic_id, data from messages order by id"):
        if data[:4] == b"\x28\xb5\x2f\xfd":  # per-message zstd compression
            data = zstandard.ZstdDecompressor().decompress(data, max_output_size=1 << 24)
        messages.append((types[topic], bytes(data)))
    return defs, messages


@functools.cache
def pool() -> Defs:
    """Every definition the real bags carry that decodes their messages, for the files that
    carry none (test_msgs is in no rosbags store)."""
    found: Defs = {}
    for path in storage_files():
        defs, messages = read_file(path)
        decoder = Decoder(defs)
        for type_name, (encoding, text) in defs.items():
            try:
                for name, data in messages:
                    if msgdef.canonical(name) == msgdef.canonical(type_name):
                        decoder.decode(name, data)
            except NanorecError:
                continue  # placeholder definitions of rosbag2_py's talker bag
            found.setdefault(msgdef.canonical(type_name), (encoding, text))
    return found


def stock(type_name: str) -> tuple[str, str]:
    """The definition rosbags' Jazzy store has for a type, as a bag would carry it."""
    text, _ = JAZZY.generate_msgdef(msgdef.canonical(type_name), ros_version=2)
    return "ros2msg", text


def oracle(defs: Defs) -> Any:
    """A rosbags typestore of exactly these definitions (+ the builtins)."""
    store = get_typestore(Stores.EMPTY)
    add: dict[str, Any] = {}
    for type_name, (encoding, text) in defs.items():
        service = msgdef.service_of(msgdef.canonical(type_name))
        if service is not None:
            body = text.split(msgdef.SEPARATOR)[0]
            request, _, response = body.partition("\n---\n")
            service = service.replace("/srv/", "/msg/")  # rosbags spells no srv types
            add.update(get_types_from_msg(request, f"{service}_Request"))
            add.update(get_types_from_msg(response, f"{service}_Response"))
            event = (
                f"service_msgs/ServiceEventInfo info\n{service.split('/')[-1]}_Request[<=1] "
                f"request\n{service.split('/')[-1]}_Response[<=1] response\n"
            )
            add.update(get_types_from_msg(event, f"{service}_Event"))
        elif encoding == "ros2idl":
            add.update(get_types_from_idl(text))
        else:
            add.update(get_types_from_msg(text, msgdef.canonical(type_name)))
    for name in msgdef.BUILTINS:
        add.setdefault(name, JAZZY.fielddefs[name])
    store.register(add)
    return store


def same(mine: Any, theirs: Any, path: str) -> None:
    """`mine` (the decoder's dicts) equals `theirs` (rosbags' objects); ROS 2 `byte` is
    unsigned (octet), rosbags reads it signed: compared modulo 256."""
    if hasattr(theirs, "__dataclass_fields__"):
        names = [
            f.name for f in dataclasses.fields(theirs) if f.name.islower() and f.name[0] != "_"
        ]
        assert isinstance(mine, dict) and list(mine) == names, path
        for name in names:
            same(mine[name], getattr(theirs, name), f"{path}.{name}")
    elif isinstance(theirs, np.ndarray):
        assert isinstance(mine, np.ndarray), path
        if mine.dtype != theirs.dtype and mine.dtype.itemsize == theirs.dtype.itemsize:
            mine = mine.view(theirs.dtype.newbyteorder(mine.dtype.byteorder))
        assert np.array_equal(mine, theirs, equal_nan=mine.dtype.kind == "f"), path
    elif isinstance(theirs, list):
        assert isinstance(mine, list) and len(mine) == len(theirs), path
        for i, (a, b) in enumerate(zip(mine, theirs, strict=True)):
            same(a, b, f"{path}[{i}]")
    elif isinstance(theirs, float):
        assert mine == theirs or (math.isnan(mine) and math.isnan(theirs)), path
    elif isinstance(theirs, int) and not isinstance(theirs, bool) and theirs < 0 <= mine:
        assert mine == theirs % 256, path  # a byte
    else:
        assert type(mine) is type(theirs) and mine == theirs, path


FILES = storage_files()


@pytest.mark.realdata
@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.name}" for p in FILES])
def test_every_real_message_as_rosbags(path: Path) -> None:
    defs, messages = read_file(path)
    every = pool()
    decoder = Decoder(defs)
    fallback: dict[str, tuple[Decoder, Any]] = {}  # root -> (decoder, oracle), built once
    stores: dict[str, Any] = {}
    checked = 0
    for type_name, data in messages:
        root = msgdef.canonical(type_name)
        try:
            mine = decoder.decode(type_name, data)
            if root not in stores:
                own = (root, msgdef.service_of(root))
                stores[root] = oracle({k: v for k, v in defs.items() if msgdef.canonical(k) in own})
            store = stores[root]
        except NanorecError as error:  # no definition, or one that does not fit the data
            assert not isinstance(error, UnsupportedError)
            if root not in fallback:
                use = every.get(root) or stock(root)
                fallback[root] = Decoder({root: use}), oracle({root: use})
            mine = fallback[root][0].decode(type_name, data)
            store = fallback[root][1]
        same(mine, store.deserialize_cdr(data, root.replace("/srv/", "/msg/")), root)
        checked += 1
    assert checked == len(messages)


def test_placeholder_definitions_are_refused_not_misread() -> None:
    """rosbag2_py's talker bag stores `uint8 level` for rcl_interfaces/msg/Log: the decoder
    must say the payload does not fit, not return a partial message."""
    log = JAZZY.serialize_cdr(
        JAZZY.types["rcl_interfaces/msg/Log"](
            JAZZY.types["builtin_interfaces/msg/Time"](1, 2), 20, "n", "m", "f", "g", 3
        ),
        "rcl_interfaces/msg/Log",
    )
    decoder = Decoder({"rcl_interfaces/msg/Log": ("ros2msg", "uint8 level\n")})
    with pytest.raises(FormatError, match="bytes follow the message"):
        decoder.decode("rcl_interfaces/msg/Log", log)
    missing = Decoder({"rcl_interfaces/msg/ParameterEvent": ("ros2msg", "Parameter[] p\n")})
    with pytest.raises(FormatError, match="no type rcl_interfaces/msg/Parameter"):
        missing.decode("rcl_interfaces/msg/ParameterEvent", b"\x00\x01\x00\x00\x00\x00\x00\x00")


ALL = """\
bool a
byte b
char c
int8 d
uint8 e
int16 f
uint16 g
int32 h
uint32 i
int64 j
uint64 k
float32 l
float64 m
string n
string<=8 o
int32 CONST=5 # a constant
int16 p 7
Inner q
Inner[2] r
Inner[] s
Inner[<=3] t
float64[] u
uint8[] v
bool[3] w
string[] x
string[2] y
int16[<=4] z
builtin_interfaces/Time stamp
Header header
float64 last
================================================================================
MSG: pkg/Inner
uint8 flag
float64[] values
string label
int64 count
"""
DEFS: Defs = {"pkg/msg/All": ("ros2msg", ALL)}


def random_value(rng: random.Random) -> dict[str, Any]:
    def text(n: int) -> str:
        return "".join(rng.choice("ab\u00e9\u4e2d ") for _ in range(rng.randrange(n)))

    def inner() -> dict[str, Any]:
        values = np.array([rng.uniform(-1, 1) for _ in range(rng.randrange(3))], "<f8")
        return {"flag": rng.randrange(256), "values": values, "label": text(5),
                "count": rng.randrange(-(2**63), 2**63)}  # fmt: skip

    return {
        "a": rng.random() < 0.5, "b": rng.randrange(256), "c": rng.randrange(256),
        "d": rng.randrange(-128, 128), "e": rng.randrange(256),
        "f": rng.randrange(-(2**15), 2**15), "g": rng.randrange(2**16),
        "h": rng.randrange(-(2**31), 2**31), "i": rng.randrange(2**32),
        "j": rng.randrange(-(2**63), 2**63), "k": rng.randrange(2**64),
        "l": float(np.float32(rng.uniform(-1e3, 1e3))), "m": rng.uniform(-1e300, 1e300),
        "n": text(9), "o": text(8), "p": rng.randrange(-100, 100), "q": inner(),
        "r": [inner(), inner()], "s": [inner() for _ in range(rng.randrange(4))],
        "t": [inner() for _ in range(rng.randrange(4))],
        "u": np.array([rng.random() for _ in range(rng.randrange(4))], "<f8"),
        "v": np.array([rng.randrange(256) for _ in range(rng.randrange(9))], "u1"),
        "w": np.array([rng.random() < 0.5 for _ in range(3)]),
        "x": [text(4) for _ in range(rng.randrange(4))], "y": [text(3), text(3)],
        "z": np.array([rng.randrange(-9, 9) for _ in range(rng.randrange(5))], "<i2"),
        "stamp": {"sec": rng.randrange(2**31), "nanosec": rng.randrange(10**9)},
        "header": {"stamp": {"sec": 1, "nanosec": 2}, "frame_id": text(6)},
        "last": rng.random(),
    }  # fmt: skip


def equal(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))
    return bool(a == b)


@pytest.mark.parametrize("big_endian", [False, True])
def test_round_trip_every_kind_of_field(big_endian: bool) -> None:
    rng = random.Random(7)
    encoder, decoder = Encoder(DEFS), Decoder(DEFS)
    store = oracle(DEFS)
    for _ in range(200):
        value = random_value(rng)
        data = encoder.encode("pkg/msg/All", value, big_endian=big_endian)
        decoded = decoder.decode("pkg/msg/All", data)
        assert equal(decoded, value)
        same(decoded, store.deserialize_cdr(data, "pkg/msg/All"), "All")
        theirs = store.serialize_cdr(store.deserialize_cdr(data, "pkg/msg/All"), "pkg/msg/All",
                                     little_endian=not big_endian)  # fmt: skip
        assert equal(decoder.decode("pkg/msg/All", theirs), value)
    if big_endian:
        assert decoded["u"].dtype.byteorder in ">" or decoded["u"].size == 0


def test_numeric_arrays_are_views_of_the_payload() -> None:
    data = Encoder(DEFS).encode("pkg/msg/All", random_value(random.Random(1)))
    decoded = Decoder(DEFS).decode("pkg/msg/All", data)
    assert decoded["w"].base is not None and not decoded["w"].flags.writeable


def test_strings_not_utf8_come_back_as_bytes() -> None:
    defs = {"p/msg/S": ("ros2msg", "string s\nstring[] t\nwstring w\n")}
    value = {"s": b"\xff\xfe", "t": [b"ok", b"\xc3"], "w": "w\u00e9\U0001f600"}
    decoded = Decoder(defs).decode("p/S", Encoder(defs).encode("p/msg/S", value))
    assert decoded == {"s": b"\xff\xfe", "t": ["ok", b"\xc3"], "w": "w\u00e9\U0001f600"}


@pytest.mark.parametrize(
    "text",
    [
        "uint8 a\nfloat64 b\nuint8 c\nint16 d\nint64[] e\nuint8 f\nfloat64 g",
        "string s\nfloat64 x\nuint8 c\nint64[] e\nint32 i\nint64[2] f",
        "uint8 a\nX[] xs\nuint8 b\nX x\nfloat64 c\n===\nMSG: p/X\nuint8 q\nint64 r\nstring s",
        "bool a\nY[2] ys\nint16 b\n===\nMSG: p/Y\nstring s\nint8 t\n",
    ],
)
def test_alignment_cases_agree_with_rosbags(text: str) -> None:
    text = text.replace("===\n", msgdef.SEPARATOR + "\n")
    defs = {"p/msg/T": ("ros2msg", text)}
    store = oracle(defs)
    decoder = Decoder(defs)
    rng = random.Random(3)
    types = msgdef.load(defs, "p/msg/T")

    def make(name: str) -> Any:
        cls = store.types[name]
        args = []
        for f in types[name].fields:
            one = (lambda t=f.type: make(t)) if "/" in f.type else (
                (lambda: "x" * rng.randrange(4)) if f.type == "string" else
                (lambda: rng.randrange(100)))  # fmt: skip
            if f.array is None:
                args.append(one())
            elif "/" in f.type or f.type == "string":
                args.append([one() for _ in range(f.array if f.array > 0 else rng.randrange(3))])
            else:
                n = f.array if f.array > 0 else rng.randrange(3)
                args.append(np.array([rng.randrange(100) for _ in range(n)], np.int64 if
                                     f.type == "int64" else np.uint8))  # fmt: skip
        return cls(*args)

    for _ in range(100):
        message = make("p/msg/T")
        for little in (True, False):
            data = store.serialize_cdr(message, "p/msg/T", little_endian=little)
            same(decoder.decode("p/msg/T", data), store.deserialize_cdr(data, "p/msg/T"), "T")


IDL = """\
// generated from rosidl_adapter/resource/msg.idl.em
#include "builtin_interfaces/msg/Time.idl"
module pkg {
  module msg {
    module All_Constants {
      const int32 CONST = 5;
      const string NAME = "a;b{c}";
    };
    typedef double double__3[3];
    @verbatim (language="comment", text="A struct; with {braces} and \\"quotes\\".")
    struct All {
      @default (value=TRUE)
      boolean a;
      octet b;
      uint8 c, d;
      int16 f;
      unsigned long long k;
      float l;
      double m;
      string n;
      string<8> o;
      sequence<pkg::msg::Inner> s;
      sequence<pkg::msg::Inner, 3> t;
      double__3 u;
      int32 arr[2];
      sequence<string<5>> x;
      builtin_interfaces::msg::Time stamp;
    };
    struct Inner { uint8 flag; sequence<double> values; };
  };
};
"""
IDL_AS_MSG = """\
bool a
byte b
uint8 c
uint8 d
int16 f
uint64 k
float32 l
float64 m
string n
string<=8 o
Inner[] s
Inner[<=3] t
float64[3] u
int32[2] arr
string<=5[] x
builtin_interfaces/Time stamp
================================================================================
MSG: pkg/Inner
uint8 flag
float64[] values
"""


def test_idl_reads_as_the_same_msg() -> None:
    idl = msgdef.parse_definition("pkg/msg/All", "ros2idl", IDL)
    msg = msgdef.parse_definition("pkg/msg/All", "ros2msg", IDL_AS_MSG)
    for name in ("pkg/msg/All", "pkg/msg/Inner"):
        assert idl[name].fields == msg[name].fields
    assert [c.name for c in idl["pkg/msg/All"].constants] == ["CONST", "NAME"]
    wrapped = f"{msgdef.SEPARATOR}\nIDL: pkg/msg/All\n{IDL}"
    assert (
        msgdef.parse_definition("pkg/msg/All", "ros2idl", wrapped)["pkg/msg/All"]
        == idl["pkg/msg/All"]
    )


def test_service_events_in_the_newer_srv_spelling() -> None:
    text = f"{msgdef.SEPARATOR}\nSRV: p/srv/Add\nint64 a\nHeader h\n---\nint64 sum\n"
    defs = {"p/srv/Add_Event": ("ros2msg", text)}
    value = {
        "info": {"event_type": 1, "stamp": {"sec": 1, "nanosec": 2},
                 "client_gid": np.arange(16, dtype="u1"), "sequence_number": 9},
        "request": [{"a": 5, "h": {"stamp": {"sec": 3, "nanosec": 4}, "frame_id": "f"}}],
        "response": [],
    }  # fmt: skip
    data = Encoder(defs).encode("p/srv/Add_Event", value)
    assert equal(Decoder(defs).decode("p/srv/Add_Event", data), value)


def test_from_msg_path(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "msg").mkdir(parents=True)
    (tmp_path / "pkg" / "srv").mkdir(parents=True)
    (tmp_path / "pkg" / "msg" / "Outer.msg").write_text("Inner[] items\nstd_msgs/Header h\n")
    (tmp_path / "pkg" / "msg" / "Inner.msg").write_text("float64 x\n")
    (tmp_path / "pkg" / "srv" / "Do.srv").write_text("Inner a\n---\nbool ok\n")
    encoding, text = msgdef.from_msg_path([tmp_path], "pkg/msg/Outer")
    assert encoding == "ros2msg" and "MSG: pkg/Inner\nfloat64 x" in text
    types = msgdef.parse_definition("pkg/msg/Outer", encoding, text)
    assert set(types) == {"pkg/msg/Outer", "pkg/msg/Inner"}  # Header: a builtin
    encoding, text = msgdef.from_msg_path([tmp_path], "pkg/srv/Do_Event")
    assert set(msgdef.parse_definition("pkg/srv/Do_Event", encoding, text)) >= {
        "pkg/srv/Do_Event", "pkg/srv/Do_Request", "pkg/msg/Inner"}  # fmt: skip
    with pytest.raises(NanorecError, match=r"no pkg/msg/Missing\.msg"):
        msgdef.from_msg_path([tmp_path], "pkg/msg/Missing")


def payloads() -> Iterator[tuple[Decoder, str, bytes]]:
    rng = random.Random(5)
    encoder, decoder = Encoder(DEFS), Decoder(DEFS)
    for _ in range(20):
        yield decoder, "pkg/msg/All", encoder.encode("pkg/msg/All", random_value(rng))
    for path in FILES[:: max(1, len(FILES) // 8)]:
        defs, messages = read_file(path)
        for type_name, data in messages[:5]:
            root = msgdef.canonical(type_name)
            try:
                Decoder(defs).decode(type_name, data)
                yield Decoder(defs), type_name, data
            except NanorecError:
                yield Decoder({root: stock(root)}), type_name, data


def test_damaged_payloads_raise_only_nanorec_errors() -> None:
    rng = random.Random(11)
    started = time.monotonic()
    for decoder, type_name, data in payloads():
        for end in range(len(data)):
            with pytest.raises(NanorecError):
                decoder.decode(type_name, data[:end]) if end < len(data) - 3 else (
                    _ for _ in ()).throw(TruncatedError("padding may be cut"))  # fmt: skip
        for _ in range(60):
            damaged = bytearray(data)
            for _ in range(rng.randrange(1, 4)):
                damaged[rng.randrange(4, len(data))] = rng.randrange(256)
            if rng.random() < 0.3:
                at = rng.randrange(4, max(5, len(data) - 4))
                damaged[at : at + 4] = rng.choice([b"\xff\xff\xff\xff", b"\xff\xff\xff\x7f"])
            try:
                decoder.decode(type_name, bytes(damaged))
            except NanorecError as error:
                assert error.offset is None or 0 <= error.offset <= len(data)
    assert time.monotonic() - started < 60


def test_errors_name_type_field_and_offset() -> None:
    data = Encoder(DEFS).encode("pkg/msg/All", random_value(random.Random(2)))
    decoder = Decoder(DEFS)
    with pytest.raises(TruncatedError, match=r"pkg/msg/All\.\w+") as cut:
        decoder.decode("pkg/msg/All", data[:30])
    assert cut.value.offset is not None and cut.value.offset <= 30
    huge = b"\x00\x01\x00\x00" + b"\xff\xff\xff\xff"
    seq = Decoder({"p/msg/Q": ("ros2msg", "float64[] v\n")})
    with pytest.raises(TruncatedError, match=r"p/msg/Q\.v: a sequence of 4294967295"):
        seq.decode("p/msg/Q", huge)
    with pytest.raises(UnsupportedError):
        seq.decode("p/msg/Q", b"\x00\x07\x00\x00\x00\x00\x00\x00")
    bounded = Decoder({"p/msg/B": ("ros2msg", "int8[<=2] v\n")})
    with pytest.raises(FormatError, match="bounded to 2"):
        bounded.decode("p/msg/B", b"\x00\x01\x00\x00\x03\x00\x00\x00\x01\x02\x03")
    deep = Decoder({"p/msg/R": ("ros2msg", "R[] kids\n")})
    with pytest.raises(FormatError, match="nests too deep"):
        deep.decode("p/msg/R", b"\x00\x01\x00\x00" + b"\x01\x00\x00\x00" * 5000)
    with pytest.raises(FormatError, match="contains itself"):
        Decoder({"p/msg/S": ("ros2msg", "S s\n")}).decode("p/msg/S", b"\x00\x01\x00\x00")
