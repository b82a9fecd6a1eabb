"""`ros2 bag info` text and metadata.yaml round trips against rosbag2's own sources.

No ROS here, so the expected texts are derived by hand from format_bag_metadata.cpp (comments
say from which bag and which layout), plus fragments copied from rosbag2's own tests (each cites
its file): those are the strongest evidence and are checked as the upstream test checks them.
"""

from __future__ import annotations

import datetime as dt
import re
import sqlite3
from pathlib import Path

import pytest

pytest.importorskip("yaml")

from nanorec.converters.ros.common.cxxsort import cxx_sort
from nanorec.converters.ros.ros2.info import (
    ServiceInfo,
    TopicFacts,
    format_file_size,
    info_text,
    plugin_metadata,
    topic_names_text,
)
from nanorec.converters.ros.ros2.metadata import (
    BagMetadata,
    TopicInformation,
    metadata_yaml,
    parse_metadata,
)
from nanorec.errors import FormatError
from tests.conftest import REALDATA

ROS2 = REALDATA / "ros2"
UTC = dt.timezone.utc
I19 = " " * 19
I21 = " " * 21


def bag(name: str) -> Path:
    folder = ROS2 / name
    if not folder.is_dir():
        pytest.skip(f"{folder} is not present")
    return folder


def load(name: str) -> tuple[BagMetadata, int]:
    """The bag's metadata and its size as rosbag2 measures it (regular files, depth 1)."""
    folder = bag(name)
    meta = parse_metadata((folder / "metadata.yaml").read_text(encoding="utf-8"))
    return meta, sum(p.stat().st_size for p in folder.iterdir() if p.is_file())


# ---------------------------------------------------------------------------------------------
# Hand-derived full texts, rosbag2_py_sqlite3_talker (metadata v4, 3 topics, no services)
# bag size 1595 + 28672 = 30267 B = 29.56 KiB; start 1585866235112411371 = 2020-04-02 22:23:55
# UTC; duration 4531096768 ns; end 1585866239643508139.

TALKER_HUMBLE = (
    "\n"
    "Files:             talker.db3\n"
    "Bag size:          29.6 KiB\n"
    "Storage id:        sqlite3\n"
    "Duration:          4.531096768s\n"
    "Start:             Apr  2 2020 22:23:55.112411371 (1585866235.112411371)\n"
    "End:               Apr  2 2020 22:23:59.643508139 (1585866239.643508139)\n"
    "Messages:          20\n"
    "Topic information: Topic: /topic | Type: std_msgs/msg/String | Count: 10 | "
    "Serialization Format: cdr\n"
    f"{I19}Topic: /rosout | Type: rcl_interfaces/msg/Log | Count: 10 | "
    "Serialization Format: cdr\n"
    f"{I19}Topic: /parameter_events | Type: rcl_interfaces/msg/ParameterEvent | Count: 0 | "
    "Serialization Format: cdr\n"
    "\n"
)

# Before PR #1745: milliseconds, unpadded (112 and 643 need no padding here).
TALKER_HUMBLE_MS = (
    TALKER_HUMBLE.replace("4.531096768s", "4.531s")
    .replace("55.112411371 (1585866235.112411371)", "55.112 (1585866235.112)")
    .replace("59.643508139 (1585866239.643508139)", "59.643 (1585866239.643)")
)

TALKER_JAZZY = (
    "\n"
    "Files:             talker.db3\n"
    "Bag size:          29.6 KiB\n"
    "Storage id:        sqlite3\n"
    "ROS Distro:        unknown\n"
    "Duration:          4.531096768s\n"
    "Start:             Apr  2 2020 22:23:55.112411371 (1585866235.112411371)\n"
    "End:               Apr  2 2020 22:23:59.643508139 (1585866239.643508139)\n"
    "Messages:          20\n"
    "Topic information: Topic: /topic | Type: std_msgs/msg/String | Count: 10 | "
    "Serialization Format: cdr\n"
    f"{I19}Topic: /rosout | Type: rcl_interfaces/msg/Log | Count: 10 | "
    "Serialization Format: cdr\n"
    f"{I19}Topic: /parameter_events | Type: rcl_interfaces/msg/ParameterEvent | Count: 0 | "
    "Serialization Format: cdr\n"
    "Service:           0\n"
    "Service information: \n"
)

# rolling: the same, topics sorted by name (the --sort default since PR #1804).
TALKER_ROLLING = (
    TALKER_JAZZY.split("Topic information: ")[0] + "Topic information: "
    "Topic: /parameter_events | Type: rcl_interfaces/msg/ParameterEvent | Count: 0 | "
    "Serialization Format: cdr\n"
    f"{I19}Topic: /rosout | Type: rcl_interfaces/msg/Log | Count: 10 | "
    "Serialization Format: cdr\n"
    f"{I19}Topic: /topic | Type: std_msgs/msg/String | Count: 10 | "
    "Serialization Format: cdr\n"
    "Service:           0\n"
    "Service information: \n"
)


def test_talker_humble() -> None:
    meta, size = load("rosbag2_py_sqlite3_talker")
    assert size == 30267
    assert info_text(meta, bag_size=size, layout="humble", tz=UTC) == TALKER_HUMBLE
    text = info_text(meta, bag_size=size, layout="humble", tz=UTC, nanosecond_fraction=False)
    assert text == TALKER_HUMBLE_MS


def test_talker_jazzy_and_rolling() -> None:
    meta, size = load("rosbag2_py_sqlite3_talker")
    assert info_text(meta, bag_size=size, layout="jazzy", tz=UTC) == TALKER_JAZZY
    assert info_text(meta, bag_size=size, layout="rolling", tz=UTC) == TALKER_ROLLING
    counted = info_text(meta, bag_size=size, layout="rolling", tz=UTC, sort="count")
    # count ties (10, 10) keep metadata order: std::sort is an insertion sort up to 16 items
    assert "Topic information: Topic: /parameter_events" in counted
    assert counted.index("/topic |") < counted.index("/rosout |")


# ---------------------------------------------------------------------------------------------
# rosbag2_tests_mcap_bag_with_topics_and_service_events (metadata v8, 2 services)
# bag size 13271 + 3543 = 16814 B = 16.42 KiB; start 1699345836270074454 = 2023-11-07 08:30:36
# UTC; duration 70653944 ns; end 1699345836340728398; 10 messages of which 8 service events.

SERVICES_JAZZY = (
    "\n"
    "Files:             bag_with_topics_and_service_events.mcap\n"
    "Bag size:          16.4 KiB\n"
    "Storage id:        mcap\n"
    "ROS Distro:        unknown\n"
    "Duration:          0.070653944s\n"
    "Start:             Nov  7 2023 08:30:36.270074454 (1699345836.270074454)\n"
    "End:               Nov  7 2023 08:30:36.340728398 (1699345836.340728398)\n"
    "Messages:          2\n"
    "Topic information: Topic: /events/write_split | Type: rosbag2_interfaces/msg/WriteSplitEvent"
    " | Count: 0 | Serialization Format: cdr\n"
    f"{I19}Topic: /test_topic1 | Type: test_msgs/msg/Strings | Count: 1 | "
    "Serialization Format: cdr\n"
    f"{I19}Topic: /test_topic2 | Type: test_msgs/msg/Strings | Count: 1 | "
    "Serialization Format: cdr\n"
    "Service:           2\n"
    "Service information: Service: /test_service1 | Type: test_msgs/srv/BasicTypes | "
    "Event Count: 4 | Serialization Format: cdr\n"
    f"{I21}Service: /test_service2 | Type: test_msgs/srv/BasicTypes | "
    "Event Count: 4 | Serialization Format: cdr\n"
    "\n"
)

# Before PR #1745 the 70 ms duration printed as "0.70s" (the bug #1745 fixed).
SERVICES_JAZZY_MS = (
    SERVICES_JAZZY.replace("0.070653944s", "0.70s")
    .replace("36.270074454 (1699345836.270074454)", "36.270 (1699345836.270)")
    .replace("36.340728398 (1699345836.340728398)", "36.340 (1699345836.340)")
)

SERVICES_HUMBLE = (
    "\n"
    "Files:             bag_with_topics_and_service_events.mcap\n"
    "Bag size:          16.4 KiB\n"
    "Storage id:        mcap\n"
    "Duration:          0.070653944s\n"
    "Start:             Nov  7 2023 08:30:36.270074454 (1699345836.270074454)\n"
    "End:               Nov  7 2023 08:30:36.340728398 (1699345836.340728398)\n"
    "Messages:          10\n"
    "Topic information: Topic: /events/write_split | Type: rosbag2_interfaces/msg/WriteSplitEvent"
    " | Count: 0 | Serialization Format: cdr\n"
    f"{I19}Topic: /test_service1/_service_event | Type: test_msgs/srv/BasicTypes_Event | "
    "Count: 4 | Serialization Format: cdr\n"
    f"{I19}Topic: /test_service2/_service_event | Type: test_msgs/srv/BasicTypes_Event | "
    "Count: 4 | Serialization Format: cdr\n"
    f"{I19}Topic: /test_topic1 | Type: test_msgs/msg/Strings | Count: 1 | "
    "Serialization Format: cdr\n"
    f"{I19}Topic: /test_topic2 | Type: test_msgs/msg/Strings | Count: 1 | "
    "Serialization Format: cdr\n"
    "\n"
)


def test_services_bag_layouts() -> None:
    meta, size = load("rosbag2_tests_mcap_bag_with_topics_and_service_events")
    assert size == 16814
    assert info_text(meta, bag_size=size, layout="jazzy", tz=UTC) == SERVICES_JAZZY
    # already in name order: rolling's default sort changes nothing here
    assert info_text(meta, bag_size=size, layout="rolling", tz=UTC) == SERVICES_JAZZY
    ms = info_text(meta, bag_size=size, layout="jazzy", tz=UTC, nanosecond_fraction=False)
    assert ms == SERVICES_JAZZY_MS
    assert info_text(meta, bag_size=size, layout="humble", tz=UTC) == SERVICES_HUMBLE


# ---------------------------------------------------------------------------------------------
# Golden fragments from rosbag2's own tests


@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
def test_upstream_info_end_to_end(storage: str) -> None:
    """rosbag2_tests/test/rosbag2_tests/test_rosbag2_info_end_to_end.cpp @25304dd
    (`info_end_to_end_test` and the four `info_output_*sorted*` tests), same regexes."""
    meta, size = load(f"rosbag2_tests_{storage}_cdr_test")
    out = info_text(meta, bag_size=size, layout="rolling")  # local time: the regex allows any
    ext = "db3" if storage == "sqlite3" else "mcap"
    assert re.search(
        "\nFiles:             cdr_test_0." + ext + "\nBag size:          .*B"
        "\nStorage id:        " + storage + "\nROS Distro:        unknown"
        "\nDuration:          0.151137181s"
        "\nStart:             Apr  .+ 2020 .*:.*:36.763032325 \\(1586406456.763032325\\)"
        "\nEnd:               Apr  .+ 2020 .*:.*:36.914169506 \\(1586406456.914169506\\)"
        "\nMessages:          7"
        "\nTopic information: ",
        out,
    )
    by_name = (
        "Topic: /array_topic | Type: test_msgs/msg/Arrays | Count: 4 | "
        "Serialization Format: cdr\n"
        "                   Topic: /test_topic | Type: test_msgs/msg/BasicTypes | Count: 3 | "
        "Serialization Format: cdr"
    )
    assert by_name in out
    assert by_name in info_text(meta, bag_size=size, layout="rolling", sort="name")
    assert by_name in info_text(meta, bag_size=size, layout="rolling", sort="type")
    assert (
        "Topic: /test_topic | Type: test_msgs/msg/BasicTypes | Count: 3 | "
        "Serialization Format: cdr\n"
        "                   Topic: /array_topic | Type: test_msgs/msg/Arrays | Count: 4 | "
        "Serialization Format: cdr"
    ) in info_text(meta, bag_size=size, layout="rolling", sort="count")
    # info_output_topics_only_*: `-t` default (name) and `--sort count`
    assert "/array_topic\n/test_topic" in topic_names_text(meta)
    assert "/test_topic\n/array_topic" in topic_names_text(meta, sort="count")


def test_upstream_info_end_to_end_humble_milliseconds() -> None:
    """The same test before PR #1745 (rosbag2 humble, 5a3cb80^): `0\\.151s`, `36.763`."""
    meta, size = load("rosbag2_humble_tests_cdr_test")
    out = info_text(meta, bag_size=size, layout="humble", nanosecond_fraction=False)
    assert re.search(
        "\nFiles:             cdr_test_0\\.db3\nBag size:          .*B"
        "\nStorage id:        sqlite3\nDuration:          0\\.151s"
        "\nStart:             Apr  .+ 2020 .*:.*:36.763 \\(1586406456\\.763\\)"
        "\nEnd:               Apr  .+ 2020 .*:.*:36.914 \\(1586406456\\.914\\)"
        "\nMessages:          7\nTopic information: ",
        out,
    )
    assert "Topic: /test_topic | Type: test_msgs/msg/BasicTypes | Count: 3 | " in out


@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
def test_upstream_info_verbose(storage: str) -> None:
    """`info_with_verbose_option_end_to_end_test` (same file): sizes and request/response
    counts come from the messages, so they are given here as that test states them."""
    meta, size = load(f"rosbag2_tests_{storage}_bag_with_topics_and_service_events")
    sizes = {
        "/test_topic1": 217,
        "/test_topic2": 217,
        "/test_service1/_service_event": 434,
        "/test_service2/_service_event": 434,
    }
    services = [
        ServiceInfo("/test_service2", "test_msgs/srv/BasicTypes", "cdr", 2, 2),
        ServiceInfo("/test_service1", "test_msgs/srv/BasicTypes", "cdr", 2, 2),
    ]
    out = info_text(
        meta, bag_size=size, layout="rolling", verbose=True, services=services, sizes=sizes
    )
    assert re.search(
        "\nDuration:          0\\.0706.*s"
        "\nStart:             Nov  7 2023 .*:30:36\\..* \\(1699345836\\..*\\)"
        "\nEnd:               Nov  7 2023 .*:30:36\\..* \\(1699345836\\..*\\)"
        "\nMessages:          2\nTopic information: ",
        out,
    )
    for line in (
        "Topic: /events/write_split | Type: rosbag2_interfaces/msg/WriteSplitEvent | Count: 0 | "
        "Size Contribution: 0 B | Serialization Format: cdr\n",
        "Topic: /test_topic1 | Type: test_msgs/msg/Strings | Count: 1 | "
        "Size Contribution: 217 B | Serialization Format: cdr\n",
        "Service:           2\n",
        "Service: /test_service1 | Type: test_msgs/srv/BasicTypes | Request Count: 2 | "
        "Response Count: 2 | Size Contribution: 434 B | Serialization Format: cdr\n",
    ):
        assert line in out
    # and the exact tail: format_service_info (services sorted by name) + std::endl
    assert out.endswith(
        "Service:           2\n"
        "Service information: Service: /test_service1 | Type: test_msgs/srv/BasicTypes | "
        "Request Count: 2 | Response Count: 2 | Size Contribution: 434 B | "
        "Serialization Format: cdr\n"
        f"{I21}Service: /test_service2 | Type: test_msgs/srv/BasicTypes | "
        "Request Count: 2 | Response Count: 2 | Size Contribution: 434 B | "
        "Serialization Format: cdr\n\n"
    )


def test_upstream_topic_name_option() -> None:
    """ros2bag/test/test_info.py @25304dd: `ros2 bag info --topic-name empty_bag`."""
    meta, _ = load("rosbag2_ros2bag_empty_bag")
    assert topic_names_text(meta) == "/parameter_events\n/rosout\n"


def test_size_contribution_golden() -> None:
    """`Size Contribution: 2.7 KiB` and `156 B` (test_rosbag2_info_end_to_end.cpp)."""
    assert format_file_size(156) == "156 B"
    assert format_file_size(2765) == "2.7 KiB"
    assert format_file_size(1023) == "1023 B"
    assert format_file_size(1024) == "1.0 KiB"
    assert format_file_size(5 * 1024**5) == "5120.0 TiB"


# ---------------------------------------------------------------------------------------------
# The pieces


def test_empty_bag_and_times() -> None:
    meta = BagMetadata(
        version=9, storage_identifier="mcap", duration_ns=0, starting_time_ns=0, message_count=0
    )
    assert info_text(meta, bag_size=0, layout="rolling", tz=UTC) == (
        "\n"
        "Files:             \n"
        "Bag size:          0 B\n"
        "Storage id:        mcap\n"
        "ROS Distro:        unknown\n"
        "Duration:          0.000000000s\n"
        "Start:             Jan  1 1970 00:00:00.000000000 (0.000000000)\n"
        "End:               Jan  1 1970 00:00:00.000000000 (0.000000000)\n"
        "Messages:          0\n"
        "Topic information: \n"
        "Service:           0\n"
        "Service information: \n"
    )
    # unpadded milliseconds: 5 ms reads ".5"
    five = BagMetadata(
        version=9,
        storage_identifier="mcap",
        duration_ns=5_000_000,
        starting_time_ns=10**9 + 5_000_000,
        message_count=0,
        ros_distro="jazzy",
    )
    out = info_text(five, bag_size=0, layout="jazzy", tz=UTC, nanosecond_fraction=False)
    assert "Duration:          0.5s\n" in out
    assert "Start:             Jan  1 1970 00:00:01.5 (1.5)\n" in out
    assert "ROS Distro:        jazzy\n" in out
    east = dt.timezone(dt.timedelta(hours=10))
    assert "Start:             Jan  1 1970 10:00:01.005000000 (1.005000000)" in info_text(
        five, bag_size=0, tz=east
    )


def test_only_service_topics() -> None:
    topic = TopicInformation("/a/_service_event", "p/srv/A_Event", "cdr", message_count=3)
    meta = BagMetadata(
        version=9,
        storage_identifier="mcap",
        duration_ns=0,
        starting_time_ns=0,
        message_count=3,
        topics_with_message_count=(topic,),
    )
    out = info_text(meta, bag_size=0, tz=UTC)
    assert "Messages:          0\nTopic information: \nService:           1\n" in out
    assert out.endswith(
        "Service information: Service: /a | Type: p/srv/A | Event Count: 3 | "
        "Serialization Format: cdr\n\n"
    )


def test_services_sort_on_service_names() -> None:
    """Rolling sorts services by their own names: "/a" < "/a-b", although the event topic
    "/a-b/_service_event" sorts before "/a/_service_event"."""
    topics = tuple(
        TopicInformation(f"{n}/_service_event", "p/srv/A_Event", "cdr", message_count=1)
        for n in ("/a-b", "/a")
    )
    meta = BagMetadata(
        version=9,
        storage_identifier="mcap",
        duration_ns=0,
        starting_time_ns=0,
        message_count=2,
        topics_with_message_count=topics,
    )
    out = info_text(meta, bag_size=0, tz=UTC)
    assert out.index("Service: /a |") < out.index("Service: /a-b |")
    jazzy = info_text(meta, bag_size=0, tz=UTC, layout="jazzy")
    assert jazzy.index("Service: /a-b |") < jazzy.index("Service: /a |")


def test_layout_options_refused() -> None:
    meta = BagMetadata(
        version=4, storage_identifier="x", duration_ns=0, starting_time_ns=0, message_count=0
    )
    with pytest.raises(ValueError, match="no --sort"):
        info_text(meta, bag_size=0, layout="humble", sort="name")
    with pytest.raises(ValueError, match="invalid choice"):
        info_text(meta, bag_size=0, sort="size")  # type: ignore[arg-type]


def test_cxx_sort_matches_libstdcxx_small_and_large() -> None:
    # up to 16 elements: insertion sort, stable
    pairs = [(i % 3, i) for i in range(16)]
    assert cxx_sort(pairs, lambda a, b: a[0] < b[0]) == sorted(pairs, key=lambda p: p[0])
    # larger: a correct sort by key, whatever it does to ties
    many = [((i * 7919) % 23, i) for i in range(200)]
    result = cxx_sort(many, lambda a, b: a[0] < b[0])
    assert [k for k, _ in result] == sorted(k for k, _ in many)
    assert sorted(result) == sorted(many)
    # libstdc++ is not stable past 16: with 17 equal keys, __move_median_to_first(first,
    # first + 1, mid, last - 1) picks mid (index 8) and swaps it to the front
    ties = [(0, i) for i in range(17)]
    assert cxx_sort(ties, lambda a, b: a[0] < b[0])[0] == (0, 8)


# ---------------------------------------------------------------------------------------------
# metadata.yaml


def _metadata_files() -> list[Path]:
    if not ROS2.is_dir():
        return []
    return sorted(ROS2.glob("*/metadata.yaml")) + sorted(ROS2.glob("*/*/metadata.yaml"))


# Written by yaml-cpp but saved with a final newline (by an editor or git): equal but for it.
TRAILING_NEWLINE = {
    "rosbag2_humble_py_talker",
    "rosbag2_humble_tests_cdr_test",
    "rosbag2_py_sqlite3_convert_a",
    "rosbag2_py_sqlite3_convert_b",
    "rosbag2_py_sqlite3_talker",
    "rosbag2_ros2bag_empty_bag",
    "rosbag2_tests_sqlite3_wrong_rmw_test",
    "rosbag2_transport_mcap_rewriter_a",
    "rosbag2_transport_sqlite3_rewriter_a",
    "rosbag2_transport_sqlite3_rewriter_b",
}
# Not written by rosbag2's C++ writer: PyYAML output (sorted keys, `''`, unindented lists) and
# a hand-made reindex target (version 5 with the version 4 key order).
NOT_CPP = {
    "rosbag2_py_mcap_convert_a",
    "rosbag2_py_mcap_convert_b",
    "rosbag2_py_mcap_talker",
    "rosbag2_py_mcap_wbag",
    "rosbag2_humble_tests_reindex_target_metadata/multiple_files",
}


@pytest.mark.parametrize("path", _metadata_files(), ids=lambda p: p.parent.name)
def test_metadata_yaml_round_trip(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    meta = parse_metadata(text)
    written = metadata_yaml(meta, meta.version)
    key = str(path.parent.relative_to(ROS2))
    if key in NOT_CPP:
        assert written != text
        assert parse_metadata(written) == meta  # same content all the same
    elif key in TRAILING_NEWLINE:
        assert written + "\n" == text
    else:
        assert written == text


def test_metadata_fields_and_versions() -> None:
    meta, _ = load("rosbag2_tests_mcap_bag_with_topics_and_service_events")
    assert meta.version == 8
    assert meta.ros_distro == ""
    assert meta.custom_data == ()
    assert meta.files[0].duration_ns == 70653944
    assert meta.topics_with_message_count[1].type_description_hash.startswith("RIHS01_")
    v9 = metadata_yaml(meta.__class__(**{**meta.__dict__, "topics_with_message_count": ()}))
    assert v9.startswith("rosbag2_bagfile_information:\n  version: 9\n")
    assert "  topics_with_message_count: []\n" in v9
    assert v9.endswith('  custom_data: ~\n  ros_distro: ""')


def test_metadata_v9_lists_and_custom_data() -> None:
    text = (
        "rosbag2_bagfile_information:\n  version: 9\n  storage_identifier: mcap\n"
        "  duration:\n    nanoseconds: 5\n  starting_time:\n    nanoseconds_since_epoch: 7\n"
        "  message_count: 1\n  topics_with_message_count:\n    - topic_metadata:\n"
        "        name: /t\n        type: p/msg/T\n        serialization_format: cdr\n"
        "        offered_qos_profiles:\n          - history: keep_last\n            depth: 10\n"
        "            deadline:\n              sec: 0\n              nsec: 0\n"
        '        type_description_hash: ""\n      message_count: 1\n'
        '  compression_format: ""\n  compression_mode: ""\n  relative_file_paths:\n    - a.mcap\n'
        "  files:\n    - path: a.mcap\n      starting_time:\n        nanoseconds_since_epoch: 7\n"
        "      duration:\n        nanoseconds: 5\n      message_count: 1\n"
        '  custom_data:\n    k: "a: b"\n  ros_distro: rolling'
    )
    meta = parse_metadata(text)
    assert meta.custom_data == (("k", "a: b"),)
    assert metadata_yaml(meta) == text


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("a: [", "YAML"),
        ("other: 1", "rosbag2_bagfile_information"),
        ("rosbag2_bagfile_information:\n  version: 4\n", "storage_identifier"),
        (
            "rosbag2_bagfile_information:\n  version: 1\n  storage_identifier: s\n"
            "  duration:\n    nanoseconds: -1\n",
            "nanoseconds",
        ),
    ],
)
def test_metadata_errors_name_the_key(text: str, key: str) -> None:
    with pytest.raises(FormatError, match=key):
        parse_metadata(text)


# ---------------------------------------------------------------------------------------------
# `ros2 bag info FILE` (no metadata.yaml): the storage plugin's metadata


def test_plugin_metadata_sqlite_talker() -> None:
    """talker.db3 (schema 4, ros_distro 'rolling', no metadata rows): topics in topics.id
    order, counts and times from the messages, distro from the schema table."""
    folder = bag("rosbag2_py_sqlite3_talker")
    db = sqlite3.connect(f"file:{folder / 'talker.db3'}?mode=ro&immutable=1", uri=True)
    try:
        counts = dict(
            db.execute(
                "SELECT name, COUNT(messages.id) FROM messages JOIN topics "
                "ON topics.id = messages.topic_id GROUP BY topics.name"
            ).fetchall()
        )
        first, last = db.execute("SELECT MIN(timestamp), MAX(timestamp) FROM messages").fetchone()
        topics = [
            TopicFacts(name, type_, fmt, message_count=counts.get(name, 0))
            for name, type_, fmt in db.execute(
                "SELECT name, type, serialization_format FROM topics ORDER BY id"
            )
        ]
        (distro,) = db.execute("SELECT ros_distro FROM schema").fetchone()
        page = (
            db.execute("PRAGMA page_size").fetchone()[0]
            * db.execute("PRAGMA page_count").fetchone()[0]
        )
    finally:
        db.close()
    meta = plugin_metadata(
        "sqlite3",
        layout="rolling",
        uri="talker.db3",
        topics=topics,
        first_ns=first,
        last_ns=last,
        schema_ros_distro=distro,
    )
    out = info_text(meta, bag_size=page, layout="jazzy", tz=UTC)
    assert out.startswith(
        "\nFiles:             talker.db3\nBag size:          28.0 KiB\n"
        "Storage id:        sqlite3\nROS Distro:        rolling\n"
    )
    assert "Messages:          20\nTopic information: Topic: /rosout |" in out
    empty = plugin_metadata(
        "sqlite3", layout="humble", uri="x.db3", topics=[], first_ns=5, last_ns=9
    )
    assert (empty.starting_time_ns, empty.duration_ns) == (0, 0)
