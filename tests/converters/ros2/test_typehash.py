"""RIHS01 type hashes: ours against the hashes rosbag2 stored in real Iron+ bags, against
rosbags' `hash_rihs01` for every type of its Jazzy and Humble stores, and in the bags we
write (read back by our reader and by rosbags)."""

from __future__ import annotations

import copy
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from nanorec import registry
from nanorec.cli import _register, app
from nanorec.converters.ros.ros2.msgdef import BUILTINS, Field, MsgType, parse_definition
from nanorec.converters.ros.ros2.storage import Definition, Topic, definition_for
from nanorec.converters.ros.ros2.typehash import (
    definition_hash,
    field_description,
    hash_of_definition,
    rihs01,
    stores_type_hashes,
    type_description,
)
from nanorec.converters.ros.ros2.writer import NewBag, write_bag
from nanorec.errors import FormatError
from tests.conftest import REALDATA, SAMPLES, make_runner

typesys = pytest.importorskip("rosbags.typesys")
pytest.importorskip("mcap")

_register()
ROS2 = REALDATA / "ros2"
#: The real bags storing a hash somewhere (sqlite column, MCAP channel, metadata.yaml).
HASHED = sorted(
    p
    for p in (ROS2.iterdir() if ROS2.is_dir() else ())
    if p.is_dir() and any(b"RIHS01_" in f.read_bytes() for f in p.iterdir() if f.is_file())
)


def _run(*args: object) -> tuple[int, str, str]:
    result = make_runner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def _stored(bag: Path) -> list[tuple[Topic, Definition | None]]:
    """Every topic of every file of `bag` with the definition the bag carries for it."""
    with registry.open(bag) as rec:
        meta = rec.meta
        return [
            (topic, definition_for(meta.definitions, topic.type))
            for index in range(len(meta.files))
            for topic in meta.topics(index)
        ]


# -- real bags: the acceptance ------------------------------------------------------------


def test_the_real_bags_store_hashes(realdata_dir: Path) -> None:
    assert len(HASHED) >= 6, [p.name for p in HASHED]


@pytest.mark.parametrize("bag", HASHED, ids=lambda p: p.name)
def test_our_hash_is_the_one_each_real_bag_stores(bag: Path) -> None:
    checked = 0
    for topic, definition in _stored(bag):
        if not topic.type_description_hash:
            continue
        assert definition is not None, topic.name
        ours = definition_hash(topic.type, definition.encoding, definition.text)
        assert ours == topic.type_description_hash, (topic.name, topic.type)
        checked += 1
    assert checked > 0


@pytest.mark.parametrize("bag", HASHED, ids=lambda p: p.name)
def test_metadata_yaml_and_message_definitions_hashes_too(bag: Path) -> None:
    yaml = pytest.importorskip("yaml")
    metadata = bag / "metadata.yaml"
    by_topic = {t.name: t.type_description_hash for t, _ in _stored(bag)}
    if metadata.is_file():
        info = yaml.safe_load(metadata.read_text())["rosbag2_bagfile_information"]
        for entry in info["topics_with_message_count"]:
            topic = entry["topic_metadata"]
            assert topic["type_description_hash"] == by_topic[topic["name"]]
    for db3 in bag.glob("*.db3"):
        with sqlite3.connect(f"file:{db3}?mode=ro&immutable=1", uri=True) as db:
            rows = db.execute(
                "SELECT topic_type, encoding, encoded_message_definition, type_description_hash "
                "FROM message_definitions"
            ).fetchall()
        for type_name, encoding, text, stored in rows:
            event = f"{type_name}_Event" if "/srv/" in type_name else type_name
            assert definition_hash(event, encoding, text) == stored


# -- rosbags' typestores: every type -------------------------------------------------------


def _rosidl_chars(store: Any) -> Any:
    """`store` with each `char` field read as rosidl_adapter reads a `.msg` char (uint8).
    rosbags hashes it as FIELD_TYPE_CHAR; rosidl (and the real BasicTypes_Event hashes
    above) as FIELD_TYPE_UINT8."""

    def fix(desc: Any) -> Any:
        if isinstance(desc, tuple):
            if desc == ("char", 0):
                return ("uint8", 0)
            return tuple(fix(d) for d in desc)
        return desc

    patched = copy.copy(store)
    patched.fielddefs = {
        name: (consts, [(fname, fix(fdesc)) for fname, fdesc in fields])
        for name, (consts, fields) in store.fielddefs.items()
    }
    return patched


@pytest.mark.parametrize("distro", ["ROS2_JAZZY", "ROS2_HUMBLE"])
def test_equal_to_rosbags_for_every_type_of_its_store(distro: str) -> None:
    store = typesys.get_typestore(getattr(typesys.Stores, distro))
    oracle = _rosidl_chars(store)
    compared = 0
    for name in sorted(store.fielddefs):
        text, _ = store.generate_msgdef(name, ros_version=2)
        types = {**BUILTINS, **parse_definition(name, "ros2msg", text)}
        wanted = oracle.hash_rihs01(name)
        assert rihs01(name, types) == wanted, name
        compared += 1
    assert compared == len(store.fielddefs) > 100


def test_char_is_hashed_as_rosidl_hashes_a_msg_char() -> None:
    store = typesys.get_typestore(typesys.Stores.ROS2_JAZZY)
    name = "service_msgs/msg/ServiceEventInfo"
    text, _ = store.generate_msgdef(name, ros_version=2)
    ours = rihs01(name, {**BUILTINS, **parse_definition(name, "ros2msg", text)})
    assert ours == _rosidl_chars(store).hash_rihs01(name) != store.hash_rihs01(name)
    assert ours == rihs01(name, BUILTINS)


def test_bounds_and_arrays_equal_rosbags() -> None:
    store = typesys.get_typestore(typesys.Stores.EMPTY)
    text = (
        "string<=22 bounded\nstring<=5[3] fixed_of_bounded\nstring<=7[<=4] bounded_of_bounded\n"
        "int32[<=3] bounded_ints\nfloat64[9] fixed\nuint8[] data\nbool flag\n"
        "byte b\nint64 CONST=3\nstring s 'default'\n"
    )
    store.register(typesys.get_types_from_msg(text, "pkg/msg/Bounds"))
    store.register(
        typesys.get_types_from_msg("pkg/Bounds[<=2] many\npkg/Bounds one", "pkg/msg/Outer")
    )
    ours = {
        **parse_definition("pkg/msg/Bounds", "ros2msg", text),
        **parse_definition("pkg/msg/Outer", "ros2msg", "pkg/Bounds[<=2] many\npkg/Bounds one"),
    }
    for name in ("pkg/msg/Bounds", "pkg/msg/Outer"):
        assert rihs01(name, ours) == store.hash_rihs01(name)
    fields = {f.name: f for f in ours["pkg/msg/Bounds"].fields}
    assert fields["bounded"].string_bound == 22 and fields["bounded_of_bounded"].bound == 4
    assert field_description(fields["bounded_of_bounded"])["type"] == {
        "type_id": 96 + 21, "capacity": 4, "string_capacity": 7, "nested_type_name": ""
    }  # fmt: skip


def test_idl_bounds_are_read() -> None:
    idl = (
        "module pkg { module msg { struct T { string<8> name; sequence<string<3>, 2> tags;"
        " wstring w; }; }; };"
    )
    msg = parse_definition("pkg/msg/T", "ros2idl", idl)["pkg/msg/T"]
    assert [(f.string_bound, f.bound, f.array) for f in msg.fields] == [
        (8, 0, None), (3, 2, -1), (0, 0, None)
    ]  # fmt: skip
    assert [field_description(f)["type"]["type_id"] for f in msg.fields] == [21, 96 + 21, 18]


def test_an_idl_char_is_idls_char_and_a_msg_char_uint8() -> None:
    idl = "module pkg { module msg { struct C { char c; uint8 u; octet o; }; }; };"
    store = typesys.get_typestore(typesys.Stores.EMPTY)
    store.register(typesys.get_types_from_idl(idl))
    ours = parse_definition("pkg/msg/C", "ros2idl", idl)
    assert ours["pkg/msg/C"].from_idl
    assert rihs01("pkg/msg/C", ours) == store.hash_rihs01("pkg/msg/C")
    as_msg = parse_definition("pkg/msg/C", "ros2msg", "char c\nuint8 u\nbyte o")
    assert rihs01("pkg/msg/C", as_msg) == _rosidl_chars(store).hash_rihs01("pkg/msg/C")
    assert rihs01("pkg/msg/C", as_msg) != rihs01("pkg/msg/C", ours)


def test_a_service_type_describes_its_three_messages() -> None:
    types = {
        **BUILTINS,
        **parse_definition("pkg/srv/Add_Event", "ros2msg", "int64 a\n---\nint64 s"),
    }
    description = type_description("pkg/srv/Add", types)
    top: Any = description["type_description"]
    assert [f["name"] for f in top["fields"]] == [
        "request_message", "response_message", "event_message"
    ]  # fmt: skip
    referenced: Any = description["referenced_type_descriptions"]
    assert [r["type_name"] for r in referenced] == sorted(r["type_name"] for r in referenced)
    assert "service_msgs/msg/ServiceEventInfo" in [r["type_name"] for r in referenced]


def test_an_empty_message_hashes_its_placeholder_field() -> None:
    jazzy = typesys.get_typestore(typesys.Stores.ROS2_JAZZY)
    msg = MsgType("std_msgs/msg/Empty", (Field("uint8", "structure_needs_at_least_one_member"),))
    wanted = jazzy.hash_rihs01("std_msgs/msg/Empty")
    assert rihs01(msg.name, {msg.name: msg}) == definition_hash(msg.name, "ros2msg", "") == wanted


# -- broken input --------------------------------------------------------------------------


def test_a_missing_type_is_a_format_error() -> None:
    with pytest.raises(FormatError, match="no definition of pkg/msg/Gone"):
        definition_hash("pkg/msg/T", "ros2msg", "pkg/Gone g")
    with pytest.raises(FormatError, match="unknown encoding"):
        definition_hash("pkg/msg/T", "ros1msg", "int32 x")
    with pytest.raises(FormatError, match="expected a number"):
        parse_definition("pkg/msg/T", "ros2idl", "module pkg { module msg { struct T {"
                         " string<N> s; }; }; };")  # fmt: skip
    assert hash_of_definition("pkg/msg/T", Definition("pkg/msg/T", "ros2msg", "pkg/Gone g")) == ""
    assert hash_of_definition("pkg/msg/T", None) == ""
    with pytest.raises(FormatError, match="no type hash id"):
        field_description(Field("float128", "x"))


def test_humble_and_older_store_no_hash() -> None:
    assert not stores_type_hashes("humble") and not stores_type_hashes("Foxy")
    assert stores_type_hashes("iron") and stores_type_hashes("jazzy") and stores_type_hashes("")


# -- bags we write -------------------------------------------------------------------------

STRING = "std_msgs/msg/String"
JAZZY_STRING = "RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18"


def _read_back(out: Path) -> dict[str, str]:
    """topic -> hash, as our reader and rosbags' read the written bag (asserted equal)."""
    rosbag2 = pytest.importorskip("rosbags.rosbag2")
    with registry.open(out) as rec:
        ours = {t.name: t.type_description_hash for t in rec.meta.topics(0)}
    with rosbag2.Reader(out) as reader:
        theirs = {c.topic: c.digest for c in reader.connections}
    assert ours == theirs
    return ours


@pytest.mark.parametrize("indexed", [True, False], ids=["repaired", "cut"])
@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
def test_a_written_bag_stores_the_computed_hashes(
    storage: str, indexed: bool, tmp_path: Path
) -> None:
    jazzy = typesys.get_typestore(typesys.Stores.ROS2_JAZZY)
    assert jazzy.hash_rihs01(STRING) == JAZZY_STRING
    out = tmp_path / "cut"
    args = (
        ("--storage", storage, "--format", "indexed")
        if indexed
        else ("--storage", storage, "--start", "1")
    )
    code, _, stderr = _run("export", SAMPLES / "ros2-robot", "-o", out, *args)
    assert code == 0, stderr
    hashes = _read_back(out)
    with registry.open(SAMPLES / "ros2-robot") as rec:
        types = {t.name: t.type for t in rec.meta.topics(0)}
    assert hashes and all(h.startswith("RIHS01_") for h in hashes.values())
    for topic, type_name in types.items():
        assert hashes[topic] == jazzy.hash_rihs01(type_name), topic
    yaml = pytest.importorskip("yaml")
    info = yaml.safe_load((out / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert {
        e["topic_metadata"]["name"]: e["topic_metadata"]["type_description_hash"]
        for e in info["topics_with_message_count"]
    } == hashes


def test_a_stored_hash_wins_and_humble_gets_none(tmp_path: Path) -> None:
    definition = Definition(STRING, "ros2msg", "string data")
    kept = Topic(1, "/kept", STRING, "cdr", type_description_hash="RIHS01_" + "ab" * 32)
    computed = Topic(2, "/computed", STRING, "cdr")
    messages = [("/kept", 1, b"\0\1\0\0\1\0\0\0\0\0\0\0"), ("/computed", 2, b"\0\1\0\0\1\0\0\0\0")]
    bag = NewBag(topics=[kept, computed], definitions=[definition], storage="sqlite3")
    write_bag(tmp_path / "iron", bag, messages, folder=True, overwrite=False)
    assert _read_back(tmp_path / "iron") == {
        "/kept": "RIHS01_" + "ab" * 32,
        "/computed": JAZZY_STRING,
    }
    for storage in ("sqlite3", "mcap"):
        humble = NewBag(
            topics=[computed], definitions=[definition], storage=storage, distro="humble"
        )
        out = tmp_path / f"humble-{storage}"
        write_bag(out, humble, messages[1:], folder=True, overwrite=False)
        assert _read_back(out) == {"/computed": ""}
    from mcap.reader import make_reader

    with (tmp_path / "humble-mcap" / "humble-mcap_0.mcap").open("rb") as stream:
        channels = make_reader(stream).get_summary().channels  # type: ignore[union-attr]
    assert all("topic_type_hash" not in c.metadata for c in channels.values())


@pytest.mark.parametrize(
    "name",
    ["rosbag2_tests_sqlite3_bag_with_topics_and_service_events", "rosbag2_tests_sqlite3_cdr_test"],
)
def test_a_cut_of_a_real_bag_keeps_or_computes_hashes(name: str, tmp_path: Path) -> None:
    bag = ROS2 / name
    if not bag.is_dir():
        pytest.skip("../shared/realdata is not present")
    source = tmp_path / "src"
    shutil.copytree(bag, source)
    archive, out = tmp_path / "a.nanover.zip", tmp_path / "cut"
    assert _run("convert", source, "-o", archive)[0] == 0
    code, _, stderr = _run("export", archive, "-o", out, "--format", "indexed")
    assert code == 0, stderr
    stored = {t.name: (t, d) for t, d in _stored(bag)}
    written = _read_back(out)
    for topic, got in written.items():
        source_topic, definition = stored[topic]
        assert definition is not None
        wanted = source_topic.type_description_hash or hash_of_definition(
            source_topic.type, definition
        )
        assert got == wanted != "", topic


def test_mcap_export_fills_the_hash(tmp_path: Path) -> None:
    from mcap.reader import make_reader

    out = tmp_path / "out.mcap"
    code, _, stderr = _run("export", SAMPLES / "ros2-robot.db3", "-o", out, "--format", "mcap")
    assert code == 0, stderr
    jazzy = typesys.get_typestore(typesys.Stores.ROS2_JAZZY)
    with out.open("rb") as stream:
        summary = make_reader(stream).get_summary()
    assert summary is not None
    for channel in summary.channels.values():
        schema = summary.schemas[channel.schema_id]
        assert channel.metadata["topic_type_hash"] == jazzy.hash_rihs01(schema.name)


@pytest.mark.parametrize("source", ["rosbag-robot.bag", "pbstream-small.pbstream"])
def test_a_bridged_bag_gets_the_real_hashes(source: str, tmp_path: Path) -> None:
    """A ROS1 bag's mapped types and another format's standard messages, written as ROS 2:
    each standard type's hash is the one Jazzy's rosidl gives it."""
    out = tmp_path / "bridged"
    code, _, stderr = _run("export", SAMPLES / source, "-o", out, "--format", "ros2")
    assert code == 0, stderr
    hashes = _read_back(out)
    assert hashes and all(h.startswith("RIHS01_") for h in hashes.values())
    jazzy = typesys.get_typestore(typesys.Stores.ROS2_JAZZY)
    with registry.open(out) as rec:
        standard = [t for t in rec.meta.topics(0) if t.type in jazzy.fielddefs]
    assert standard
    for topic in standard:
        assert hashes[topic.name] == jazzy.hash_rihs01(topic.type), topic.name
