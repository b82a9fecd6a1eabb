"""Bags without definitions decode with the bundled ones of their distro (`ros2/bundle.py`):
every message of every real ROS 2 bag whose type is stored or bundled decodes, equal to
`rosbags`' reading with the matching type store; synthetic Humble-style bags (no
definitions) of each storage and distro decode and export to ROS1 with every message;
`--distro` and the Python keyword override; a bag's own definition and `--msg-path` win."""

from __future__ import annotations

import json
import sqlite3
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("rosbags")
pytest.importorskip("mcap")
pytest.importorskip("yaml")

from rosbags.typesys import Stores, get_typestore

from nanorec import registry
from nanorec.cli import _register, app
from nanorec.converters.ros.ros2 import msgdef
from nanorec.converters.ros.ros2.bundle import DISTROS, bundled
from nanorec.converters.ros.ros2.generate import QOS
from nanorec.converters.ros.ros2.make_bundle import STORES
from nanorec.converters.ros.ros2.recording import Ros2Recording
from nanorec.converters.ros.ros2.writer import SCHEMA
from nanorec.errors import NanorecError, UsageError
from tests.conftest import REALDATA, REPO, make_runner
from tests.converters.ros2.test_cdr import oracle, same

ROS2 = REALDATA / "ros2"
REAL = sorted(
    p
    for p in (ROS2.glob("*") if ROS2.is_dir() else ())
    if p.is_dir() and any(f.suffix in (".db3", ".mcap", ".zstd") for f in p.iterdir())
)
START = 1_700_000_000_000_000_000

_register()


def _run(*args: object) -> tuple[int, str, str]:
    result = make_runner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def store_of(distro: str) -> Any:
    return get_typestore(Stores(f"ros2_{STORES[distro]}"))


def _open(bag: Path) -> Ros2Recording:
    """A real bag folder (or its one storage file, for folders without metadata.yaml)."""
    try:
        rec = registry.open(bag)
    except Exception:
        files = [p for p in bag.iterdir() if p.suffix in (".db3", ".mcap")]
        assert len(files) == 1, bag
        rec = registry.open(files[0])
    assert isinstance(rec, Ros2Recording)
    return rec


def _storage(rec: Ros2Recording) -> str:
    return str(rec.meta.files[0]["storage"])


@pytest.mark.realdata
@pytest.mark.parametrize("bag", REAL, ids=lambda p: p.name)
def test_every_real_message_with_a_definition_decodes_as_rosbags(bag: Path) -> None:
    """Stored definitions are compared with a rosbags store made of them, bundled ones with
    rosbags' own store of the bag's distro (no bytes, no base64 for either)."""
    with _open(bag) as rec:
        rec.on_undecodable = None  # a message that does not decode raises
        stored = {t: (d.encoding, d.text) for t, d in rec.meta.definitions.items()}
        distro_store = store_of(rec.bundle_distro)
        stores: dict[str, Any] = {}
        checked = 0
        for number in range(len(rec)):
            type_name = rec.type_of(rec.kind_of(number))
            if type_name not in rec.definitions:
                assert bundled(rec.bundle_distro, type_name) is None
                continue
            value = rec.decode(number)
            assert isinstance(value, dict), (number, type_name)
            root = msgdef.canonical(type_name)
            if rec.definitions[type_name] == stored.get(type_name):
                if root not in stores:
                    stores[root] = oracle({type_name: stored[type_name]})
                store = stores[root]
            else:
                assert rec.definitions[type_name] == bundled(rec.bundle_distro, type_name)
                store = distro_store
            data = rec.serialized(number)
            same(value, store.deserialize_cdr(data, root.replace("/srv/", "/msg/")), root)
            checked += 1
        assert checked or not len(rec) or not rec.definitions


@pytest.mark.realdata
def test_the_real_bags_cover_both_storages_and_their_distros() -> None:
    """Which (storage, distro, origin of a definition) the real bags exercise: Humble bags
    (bundled), rolling's (stored; bundled for rosbag2_py's placeholder Log), MCAP bags with
    stored definitions (no distro named: Humble's stand by). MCAP without definitions is the
    synthetic bags' below."""
    if not REAL:
        pytest.skip("no real ROS 2 bags")
    seen: set[tuple[str, str, str]] = set()
    for bag in REAL:
        with _open(bag) as rec:
            for type_name in set(rec.meta.types.values()) & set(rec.definitions):
                own = rec.meta.definitions.get(type_name)
                if own is None:
                    origin = "bundled"
                elif rec.definitions[type_name] == (own.encoding, own.text):
                    origin = "stored"
                else:
                    origin = "in place of a stored one"
                seen.add((_storage(rec), rec.bundle_distro, origin))
    assert {
        ("sqlite3", "humble", "bundled"),
        ("sqlite3", "rolling", "stored"),
        ("sqlite3", "rolling", "in place of a stored one"),
        ("mcap", "humble", "stored"),
    } <= seen, sorted(seen)


@pytest.mark.realdata
def test_the_humble_talker_decodes() -> None:
    bag = ROS2 / "rosbag2_humble_py_talker"
    if not bag.is_dir():
        pytest.skip(f"{bag} absent")
    code, out, err = _run("cat", bag, "--format", "ndjson")
    assert code == 0 and "warning" not in err, err
    assert "base64" not in out
    with _open(bag) as rec:
        assert rec.meta.definitions == {} and rec.bundle_distro == "humble"
        kinds = {rec.type_of(rec.kind_of(n)): rec.decode(n) for n in range(len(rec))}
        rows = list(rec.rows("/topic"))  # what tables (Parquet, Arrow, CSV) are made of
    assert rows and all(row["data"].startswith("Hello, world! ") for row in rows)
    assert kinds["std_msgs/msg/String"]["data"].startswith("Hello, world! ")
    log = kinds["rcl_interfaces/msg/Log"]
    assert log["level"] == 20 and log["name"] == "minimal_publisher"


# -- synthetic bags without definitions -------------------------------------------------

MAGNETIC = "sensor_msgs/msg/MagneticField"


def _magnetic(distro: str, count: int) -> list[tuple[int, bytes]]:
    store = store_of(distro)
    types = store.types
    out = []
    for i in range(count):
        ns = START + i * 10_000_000
        header = types["std_msgs/msg/Header"](
            types["builtin_interfaces/msg/Time"](ns // 10**9, ns % 10**9), "imu"
        )
        vector = types["geometry_msgs/msg/Vector3"](i * 1e-6, -i * 2e-6, 4.5e-5)
        covariance = np.arange(9, dtype="f8") * i
        message = types[MAGNETIC](header, vector, covariance)
        out.append((ns, bytes(store.serialize_cdr(message, MAGNETIC))))
    return out


def write_bag(path: Path, distro: str, storage: str, count: int = 50) -> Path:
    """One storage file with a MagneticField topic and no definitions, naming `distro`
    (the sqlite3 schema table; the MCAP `rosbag2` metadata record)."""
    messages = _magnetic(distro, count)
    if storage == "sqlite3":
        path = path.with_suffix(".db3")
        with sqlite3.connect(path) as db:
            for statement in SCHEMA:
                if "message_definitions" not in statement:
                    db.execute(statement)
            db.execute("INSERT INTO schema VALUES (3, ?)", (distro,))
            db.execute("INSERT INTO topics VALUES (1, '/mag', ?, 'cdr', ?, '')", (MAGNETIC, QOS))
            db.executemany(
                "INSERT INTO messages (timestamp, topic_id, data) VALUES (?, 1, ?)", messages
            )
        db.close()
        return path
    from mcap.writer import Writer

    path = path.with_suffix(".mcap")
    with path.open("wb") as stream:
        writer = Writer(stream)
        writer.start(profile="ros2", library="test")
        schema = writer.register_schema(MAGNETIC, "ros2msg", b"")
        writer.register_channel("/mag", "cdr", schema, {"offered_qos_profiles": QOS})
        for sequence, (ns, data) in enumerate(messages):
            writer.add_message(1, ns, data, ns, sequence=sequence)
        writer.add_metadata("rosbag2", {"ROS_DISTRO": distro})
        writer.finish()  # type: ignore[no-untyped-call]
    return path


@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
@pytest.mark.parametrize("distro", DISTROS)
def test_a_bag_without_definitions_decodes_with_its_distro(
    storage: str, distro: str, tmp_path: Path
) -> None:
    bag = write_bag(tmp_path / "bag", distro, storage)
    store = store_of(distro)
    with registry.open(bag) as rec:
        assert isinstance(rec, Ros2Recording)
        assert rec.meta.definitions == {} and rec.bundle_distro == distro
        assert rec.definitions[MAGNETIC] == bundled(distro, MAGNETIC)
        rec.on_undecodable = None
        for number in range(len(rec)):
            data = rec.serialized(number)
            same(rec.decode(number), store.deserialize_cdr(data, MAGNETIC), MAGNETIC)


@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
def test_a_humble_bag_of_magnetic_field_exports_to_ros1(storage: str, tmp_path: Path) -> None:
    """Its nested types (Vector3, Header) are bundled too: the topic crosses, every message."""
    from rosbags.highlevel import AnyReader

    bag = write_bag(tmp_path / "bag", "humble", storage, count=40)
    out = tmp_path / "out.bag"
    code, stdout, err = _run("export", bag, "--format", "ros1", "-o", out)
    assert code == 0, err
    assert "humble's, bundled with nanorec" in stdout
    with AnyReader([out]) as reader:
        rows = [reader.deserialize(data, conn.msgtype) for conn, _, data in reader.messages()]
    assert len(rows) == 40
    assert rows[3].magnetic_field.x == pytest.approx(3e-6)
    assert list(rows[2].magnetic_field_covariance) == [2.0 * i for i in range(9)]


def test_distro_option_and_keyword_override_the_bag(tmp_path: Path) -> None:
    bag = write_bag(tmp_path / "bag", "jazzy", "sqlite3", count=3)
    with registry.open(bag) as rec:
        assert isinstance(rec, Ros2Recording)
        assert rec.bundle_distro == "jazzy"
        other = Ros2Recording(rec.reader, distro="Kilted")
        assert other.bundle_distro == "kilted"
        assert other.definitions[MAGNETIC] == bundled("kilted", MAGNETIC)
        with pytest.raises(UsageError, match="foxy"):
            Ros2Recording(rec.reader, distro="foxy")
        rec.decode(0)
        rec.distro = "iron"  # after a decode too: resolved anew
        assert rec.definitions[MAGNETIC] == bundled("iron", MAGNETIC)
        assert rec.decoder.definitions[MAGNETIC] == bundled("iron", MAGNETIC)
    code, out, err = _run("cat", bag, "--distro", "iron")
    assert code == 0 and "warning" not in err and '"magnetic_field"' in out
    code, out, err = _run("cat", bag, "--distro", "foxy")
    assert code == 2 and err.startswith("nanorec: no bundled definitions for ROS 2 'foxy'")


def test_a_stored_definition_and_msg_path_win_over_the_bundle(tmp_path: Path) -> None:
    """The bag's definition, and `.msg` files under --msg-path, come before the bundle; a
    type in none of them stays bytes with one warning."""
    bag = write_bag(tmp_path / "bag", "humble", "sqlite3", count=3)
    with sqlite3.connect(bag) as db:  # a type nanorec does not bundle, same bytes
        db.execute(
            "INSERT INTO topics VALUES (2, '/mine', 'my_msgs/msg/Mag', 'cdr', ?, '')", (QOS,)
        )
        db.execute("UPDATE messages SET topic_id = 2 WHERE id = 1")
    db.close()
    code, out, err = _run("cat", bag)
    assert code == 0 and err.count("warning") == 1 and "my_msgs/msg/Mag" in err
    folder = tmp_path / "msgs"
    (folder / "my_msgs" / "msg").mkdir(parents=True)
    (folder / "my_msgs" / "msg" / "Mag.msg").write_text(
        "std_msgs/Header header\ngeometry_msgs/Vector3 field\nfloat64[9] covariance\n"
    )
    code, out, err = _run("cat", bag, "--msg-path", folder)  # Header, Vector3: bundled
    assert code == 0 and "warning" not in err, err
    assert '"field": {"x": 0.0' in out
    (folder / "sensor_msgs" / "msg").mkdir(parents=True)
    (folder / "sensor_msgs" / "msg" / "MagneticField.msg").write_text(
        "std_msgs/Header header\ngeometry_msgs/Vector3 renamed\nfloat64[9] covariance\n"
    )
    code, out, err = _run("cat", bag, "--msg-path", folder, "--topic", "/mag")
    assert code == 0 and '"renamed.x"' in out, err


def test_mcap_export_writes_the_resolved_schema(tmp_path: Path) -> None:
    """A Humble bag's MCAP export carries the bundled definition as the schema (rosbag2's
    `ros2msg` text), so MCAP viewers decode it; each message as stored."""
    from mcap.reader import make_reader

    bag = write_bag(tmp_path / "bag", "humble", "sqlite3", count=5)
    out = tmp_path / "out.mcap"
    code, _, err = _run("export", bag, "--format", "mcap", "-o", out)
    assert code == 0, err
    with out.open("rb") as stream:
        records = list(make_reader(stream).iter_messages())
    assert len(records) == 5
    schema = records[0][0]
    assert schema is not None and schema.name == MAGNETIC and schema.encoding == "ros2msg"
    expected = bundled("humble", MAGNETIC)
    assert expected is not None and schema.data.decode() == expected[1]
    assert [m.data for _, _, m in records] == [data for _, data in _magnetic("humble", 5)]


def test_a_stored_definition_that_does_not_fit_gives_way(tmp_path: Path) -> None:
    """rosbag2's own test bags store placeholders (`uint8 level` for a Log): a stored
    definition that does not decode its type's first message gives way to the bundled one,
    said once; a stored one that fits is kept."""
    bag = write_bag(tmp_path / "bag", "humble", "sqlite3", count=3)
    with sqlite3.connect(bag) as db:
        db.execute(next(s for s in SCHEMA if "message_definitions" in s))
        db.execute(
            "INSERT INTO message_definitions (topic_type, encoding, encoded_message_definition,"
            " type_description_hash) VALUES (?, 'ros2msg', 'uint8 level', '')",
            (MAGNETIC,),
        )
    db.close()
    code, out, err = _run("cat", bag)
    assert code == 0 and '"magnetic_field"' in out, err
    assert err.count("warning") == 1
    assert "definition of sensor_msgs/msg/MagneticField does not fit its messages" in err
    assert "ROS 2 humble's bundled definition" in err and "printed as bytes" not in err


@pytest.mark.realdata
def test_the_rolling_talkers_placeholder_log_decodes() -> None:
    bag = ROS2 / "rosbag2_py_sqlite3_talker"
    if not bag.is_dir():
        pytest.skip(f"{bag} absent")
    code, out, err = _run("cat", bag, "--topic", "/rosout")
    assert code == 0 and "base64" not in out and "printed as bytes" not in err, err
    assert "definition of rcl_interfaces/msg/Log does not fit" in err
    assert '"name": "minimal_publisher"' in out


def test_a_damaged_first_message_keeps_the_stored_definition(tmp_path: Path) -> None:
    """The fit check reads a type's first message: when that one is damaged, nothing fits
    it, the bag's definition stays, and only that message fails to decode."""
    bag = write_bag(tmp_path / "bag", "humble", "sqlite3", count=3)
    definition = bundled("humble", MAGNETIC)
    assert definition is not None
    with sqlite3.connect(bag) as db:
        db.execute(next(s for s in SCHEMA if "message_definitions" in s))
        db.execute(
            "INSERT INTO message_definitions (topic_type, encoding, encoded_message_definition,"
            " type_description_hash) VALUES (?, 'ros2msg', ?, '')",
            (MAGNETIC, definition[1]),
        )
        db.execute("UPDATE messages SET data = substr(data, 1, 10) WHERE id = 1")
    db.close()
    with registry.open(bag) as rec, warnings.catch_warnings():
        warnings.simplefilter("error")  # no "does not fit" note
        assert isinstance(rec, Ros2Recording)
        assert rec.definitions == {MAGNETIC: definition}
        assert rec.decode(1)["magnetic_field"]["x"] == pytest.approx(1e-6)
        with pytest.raises(NanorecError):
            rec.decode(0)


def test_a_type_bundled_for_another_distro_is_hinted(tmp_path: Path) -> None:
    """actionlib_msgs left ROS 2 in Lyrical: a Lyrical bag's GoalID stays bytes, and the
    warning names a distro that has it."""
    bag = write_bag(tmp_path / "bag", "lyrical", "sqlite3", count=2)
    with sqlite3.connect(bag) as db:
        db.execute("UPDATE topics SET type = 'actionlib_msgs/msg/GoalID'")
    db.close()
    code, _, err = _run("cat", bag)
    assert code == 0 and err.count("warning") == 1, err
    assert "no definition for actionlib_msgs/msg/GoalID" in err and "(try --distro kilted)" in err


def test_the_humble_sample_decodes_from_the_bundle_without_a_warning() -> None:
    """`samples/ros2-humble-robot` (the README's example): Humble's rosbag2 stored no
    definitions, so every message decodes from the bundled Humble ones, with no warning."""
    code, out, err = _run("cat", REPO / "samples" / "ros2-humble-robot", "--format", "ndjson")
    assert code == 0 and "warning" not in err, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert len(lines) == 210
    status = [m for m in lines if m["topic"] == "/status"]
    assert status[0]["message"] == {"data": "lap 0: all systems nominal"}
    odom = next(m for m in lines if m["topic"] == "/odom")["message"]
    assert odom["header"]["frame_id"] and set(odom["pose"]) == {"position", "orientation"}
