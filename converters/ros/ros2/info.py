"""`ros2 bag info` text, character for character, from a bag's metadata (no ROS needed).

Source: `rosbag2_py/src/rosbag2_py/format_bag_metadata.cpp` (+ `format_service_info.cpp`,
`info_sorting_method.cpp`, `_info.cpp`, `ros2bag/verb/info.py`) of ros2/rosbag2 in three
states, chosen with `layout`:

- "humble": topics in metadata order, no `ROS Distro:` line, service-event topics listed as
  topics (humble d256a5b).
- "jazzy": adds `ROS Distro:` ("unknown" when empty), lists `<svc>/_service_event` topics apart
  as services and leaves them out of `Messages:`; topics still in metadata order (jazzy 64717ee,
  PR #1241 and #1480).
- "rolling": as jazzy, plus `--sort name|type|count` (default name, PR #1804) and, with `-v`,
  per-topic `Size Contribution:` (PR #1726) (rolling 25304dd).

`nanosecond_fraction` picks the time fraction: 9 zero-padded digits of ns (PR #1745, July 2024,
backported to every branch: humble 5a3cb80, jazzy cf268d8) or the older milliseconds written
without padding (`36.763`, but `36.5` for 5 ms).

Times are printed in local time (`localtime_r`); pass `tz` to choose the zone (the upstream
tests run with TZ=UTC). `bag_size` is not in metadata.yaml: rosbag2 sums the sizes of the
regular files directly inside the bag directory (metadata.yaml included), or takes the
storage plugin's figure for a single storage file.

Sorting copies libstdc++'s `std::sort` (introsort; not stable past 16 elements), because
`--sort type` and `--sort count` tie often and the order of ties is part of the text.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from nanorec.errors import UsageError

from ..common.cxxsort import cxx_sort
from .metadata import BagMetadata, TopicInformation

Layout = Literal["humble", "jazzy", "rolling"]
SortMethod = Literal["name", "type", "count"]
#: The values `ros2 bag info --sort` accepts (`sorting_method_map` in info_sorting_method.hpp).
SORT_METHODS: tuple[SortMethod, ...] = ("name", "type", "count")

_INDENT = 19  # "The longest info field (Topics with Type:) plus one space."
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_SERVICE_EVENT_POSTFIX = "/_service_event"  # RCL_SERVICE_INTROSPECTION_TOPIC_POSTFIX
_EVENT_TYPE_POSTFIX = "_Event"


@dataclass(frozen=True)
class ServiceInfo:
    """What `rosbag2_cpp::Info::read_service_info` finds for one service (`-v` only): the
    distinct (client, sequence number) requests and responses seen in its event messages."""

    name: str
    type: str
    serialization_format: str
    request_count: int
    response_count: int


# ---------------------------------------------------------------------------------------------
# Pieces of the text


def format_file_size(size: int) -> str:
    """`format_file_size`: base 1024 up to TiB, one decimal (none for bytes)."""
    value = float(size)
    units = ("B", "KiB", "MiB", "GiB", "TiB")
    index = 0
    while value >= 1024 and index < 4:
        value /= 1024
        index += 1
    # std::fixed with setprecision rounds the exact binary value, as Python's format does.
    return f"{value:.{0 if index == 0 else 1}f} {units[index]}"


def _trunc_div(a: int, b: int) -> int:
    """C++ integer division (and std::chrono::duration_cast): truncates toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _time_parts(ns: int, tz: dt.tzinfo | None, nanosecond_fraction: bool) -> tuple[str, str, str]:
    """`format_duration`: (date, time, time_in_sec) of a count of ns since the epoch."""
    if nanosecond_fraction:
        seconds = _trunc_div(ns, 10**9)
        # std::setw(9) << std::setfill('0') pads on the left of the sign too ("0000000-5").
        fraction = str(ns - seconds * 10**9).rjust(9, "0")
    else:
        millis = _trunc_div(ns, 10**6)
        seconds = _trunc_div(millis, 1000)
        fraction = str(millis - seconds * 1000)  # std::to_string(m_seconds.count() % 1000)
    when = dt.datetime.fromtimestamp(seconds, tz)
    date = f"{_MONTHS[when.month - 1]} {when.day:2d} {when.year}"  # "%b %e %Y", C locale
    clock = f"{when.hour:02d}:{when.minute:02d}:{when.second:02d}.{fraction}"
    return date, clock, f"{seconds}.{fraction}"


def format_time_point(
    ns: int, tz: dt.tzinfo | None = None, *, nanosecond_fraction: bool = True
) -> str:
    """`Apr  9 2020 04:27:36.763032325 (1586406456.763032325)`."""
    date, clock, in_sec = _time_parts(ns, tz, nanosecond_fraction)
    return f"{date} {clock} ({in_sec})"


def format_duration(ns: int, *, nanosecond_fraction: bool = True) -> str:
    """The `Duration:` value without its trailing "s" (seconds since 0, the `time_in_sec`)."""
    return _time_parts(ns, dt.timezone.utc, nanosecond_fraction)[2]


def is_service_event_topic(name: str, type_: str) -> bool:
    """`rosbag2_cpp::is_service_event_topic`: name ends with `/_service_event` (and is longer),
    type contains `/srv/` and ends with `_Event` (and is longer)."""
    if len(name) <= len(_SERVICE_EVENT_POSTFIX) or not name.endswith(_SERVICE_EVENT_POSTFIX):
        return False
    if len(type_) <= len(_EVENT_TYPE_POSTFIX) or "/srv/" not in type_:
        return False
    return type_.endswith(_EVENT_TYPE_POSTFIX)


def service_event_topic_name(service: str) -> str:
    """`service_name_to_service_event_topic_name`."""
    if not service:
        return service
    if len(service) > len(_SERVICE_EVENT_POSTFIX) and service.endswith(_SERVICE_EVENT_POSTFIX):
        return service
    return service + _SERVICE_EVENT_POSTFIX


def _topic_less(method: SortMethod) -> Callable[[TopicInformation, TopicInformation], bool]:
    # std::string operator< compares bytes; for UTF-8 that is code point order, as in Python.
    if method == "name":
        return lambda x, y: x.name < y.name
    if method == "type":
        return lambda x, y: x.type < y.type
    return lambda x, y: x.message_count < y.message_count


def _service_less(method: SortMethod) -> Callable[[ServiceInfo, ServiceInfo], bool]:
    if method == "name":
        return lambda x, y: x.name < y.name
    if method == "type":
        return lambda x, y: x.type < y.type
    return lambda x, y: x.request_count + x.response_count < y.request_count + y.response_count


# ---------------------------------------------------------------------------------------------
# The whole text


def _lines(first: str, rest: Sequence[str], indent: int) -> str:
    """A field's values: the first on the label's line, the others indented below it."""
    return "".join([first + "\n"] + [" " * indent + line + "\n" for line in rest])


def _check_sort(layout: Layout, sort: SortMethod | None) -> SortMethod | None:
    if sort is not None and sort not in SORT_METHODS:
        raise UsageError(
            f"--sort: invalid choice: {sort!r} (choose from {', '.join(SORT_METHODS)})"
        )
    if layout == "humble" and sort is not None:
        raise UsageError("humble's `ros2 bag info` has no --sort")
    return "name" if sort is None and layout == "rolling" else sort


def info_text(
    meta: BagMetadata,
    *,
    bag_size: int,
    layout: Layout = "rolling",
    nanosecond_fraction: bool = True,
    tz: dt.tzinfo | None = None,
    sort: SortMethod | None = None,
    verbose: bool = False,
    services: Sequence[ServiceInfo] = (),
    sizes: Mapping[str, int] | None = None,
) -> str:
    """What `ros2 bag info` prints to stdout (from its leading empty line to the final newline).

    `sort`: None = the layout's default (metadata order for humble and jazzy, "name" for
    rolling). `verbose` (jazzy, rolling): the services block comes from `services` (request and
    response counts, which need the event messages; give them in the order rosbag2 found them)
    and, for rolling, each topic and service gets `Size Contribution:` from `sizes` (bytes of
    serialized data per topic name, 0 when missing). Raises UsageError (a ValueError) for an
    option the layout does not have."""
    method = _check_sort(layout, sort)
    if verbose and layout == "humble":
        raise UsageError("humble's `ros2 bag info` has no -v")
    show_sizes = verbose and layout == "rolling"
    size_of = sizes or {}
    start = meta.starting_time_ns
    end = start + meta.duration_ns
    topics = list(meta.topics_with_message_count)

    def when(ns: int) -> str:
        return format_time_point(ns, tz, nanosecond_fraction=nanosecond_fraction)

    event_topics = (
        [] if layout == "humble" else [t for t in topics if is_service_event_topic(t.name, t.type)]
    )
    event_messages = sum(t.message_count for t in event_topics)
    out = ["\n"]
    paths = list(meta.relative_file_paths)
    out.append("Files:             " + (_lines(paths[0], paths[1:], _INDENT) if paths else "\n"))
    out.append(f"Bag size:          {format_file_size(bag_size)}\n")
    out.append(f"Storage id:        {meta.storage_identifier}\n")
    if layout != "humble":
        out.append(f"ROS Distro:        {meta.ros_distro or 'unknown'}\n")
    duration = _time_parts(meta.duration_ns, dt.timezone.utc, nanosecond_fraction)[2]
    out.append(f"Duration:          {duration}s\n")
    out.append(f"Start:             {when(start)}\n")
    out.append(f"End:               {when(end)}\n")
    # size_t arithmetic: the difference wraps around if events outnumber the total.
    out.append(f"Messages:          {(meta.message_count - event_messages) % 2**64}\n")
    out.append("Topic information: ")
    ordered = cxx_sort(topics, _topic_less(method)) if method else topics
    shown = [t for t in ordered if layout == "humble" or not is_service_event_topic(t.name, t.type)]

    def topic_line(t: TopicInformation) -> str:
        size = (
            f"Size Contribution: {format_file_size(size_of.get(t.name, 0))} | "
            if show_sizes
            else ""
        )
        return (
            f"Topic: {t.name} | Type: {t.type} | Count: {t.message_count} | {size}"
            f"Serialization Format: {t.serialization_format}"
        )

    lines = [topic_line(t) for t in shown]
    out.append(_lines(lines[0], lines[1:], _INDENT) if lines else "\n")
    if layout == "humble":
        return "".join(out) + "\n"
    if verbose:
        out.append(_verbose_services(services, method, size_of if show_sizes else None))
        return "".join(out) + "\n"
    out.append(f"Service:           {len(event_topics)}\n")
    out.append("Service information: ")
    if event_topics:
        # filter_service_event_topic: the service name and type lose their postfixes, and
        # --sort compares those (not the event topic's), which can order differently.
        events = [
            replace(
                t,
                name=t.name[: -len(_SERVICE_EVENT_POSTFIX)],
                type=t.type[: -len(_EVENT_TYPE_POSTFIX)],
            )
            for t in event_topics
        ]
        if method:
            events = cxx_sort(events, _topic_less(method))

        def service_line(t: TopicInformation) -> str:
            event_size = size_of.get(service_event_topic_name(t.name), 0)
            size = f"Size Contribution: {format_file_size(event_size)} | " if show_sizes else ""
            return (
                f"Service: {t.name} | Type: {t.type} | "
                f"Event Count: {t.message_count} | {size}"
                f"Serialization Format: {t.serialization_format}"
            )

        lines = [service_line(t) for t in events]
        out.append(_lines(lines[0], lines[1:], _INDENT + 2))
    return "".join(out) + "\n"


def _verbose_services(
    services: Sequence[ServiceInfo], method: SortMethod | None, sizes: Mapping[str, int] | None
) -> str:
    """`format_service_info` (the `-v` services block)."""
    label = "Service information: "
    out = f"Service:           {len(services)}\n{label}"
    ordered = cxx_sort(services, _service_less(method)) if method else list(services)
    lines = []
    for s in ordered:
        size = ""
        if sizes is not None:
            total = sizes.get(service_event_topic_name(s.name), 0)
            size = f"Size Contribution: {format_file_size(total)} | "
        lines.append(
            f"Service: {s.name} | Type: {s.type} | Request Count: {s.request_count} | "
            f"Response Count: {s.response_count} | {size}"
            f"Serialization Format: {s.serialization_format}"
        )
    return out + (_lines(lines[0], lines[1:], len(label)) if lines else "")


def topic_names_text(
    meta: BagMetadata, *, layout: Layout = "rolling", sort: SortMethod | None = None
) -> str:
    """`ros2 bag info -t` (jazzy, rolling): one topic name a line, service-event topics left
    out; rolling sorts (default by name), jazzy keeps metadata order."""
    if layout == "humble":
        raise UsageError("humble's `ros2 bag info` has no -t")
    method = _check_sort(layout, sort)
    topics = list(meta.topics_with_message_count)
    ordered = cxx_sort(topics, _topic_less(method)) if method else topics
    return "".join(t.name + "\n" for t in ordered if not is_service_event_topic(t.name, t.type))


# ---------------------------------------------------------------------------------------------
# `ros2 bag info FILE`: the metadata a storage plugin builds for one storage file


@dataclass(frozen=True)
class TopicFacts:
    """A topic as a storage file declares it, with the number of its messages in the file."""

    name: str
    type: str
    serialization_format: str
    offered_qos_profiles: str = ""
    type_description_hash: str = ""
    message_count: int = 0


def plugin_metadata(
    storage: Literal["sqlite3", "mcap"],
    *,
    layout: Layout,
    uri: str,
    topics: Sequence[TopicFacts],
    first_ns: int,
    last_ns: int,
    stored: BagMetadata | None = None,
    schema_ros_distro: str | None = None,
) -> BagMetadata:
    """The BagMetadata `storage->get_metadata()` returns when `ros2 bag info` is given one
    storage file (rosbag2_cpp `Info::read_metadata`, no metadata.yaml beside it).

    `topics` must be in the plugin's order:
    - sqlite3 (humble `sqlite/sqlite_storage.cpp`, jazzy/rolling `rosbag2_storage_sqlite3`):
      `SELECT ... FROM topics ORDER BY id`, every topic (0 messages included); counts come from
      `messages JOIN topics ... GROUP BY topics.name`, so a name shared by two topic rows gets
      its whole count on one of them.
    - mcap (`rosbag2_storage_mcap` `read_metadata`): the iteration order of libmcap's
      `std::unordered_map<ChannelId, ChannelPtr>` (libstdc++: identity hash, prime bucket
      counts, a new node in an empty bucket goes to the list head and a rehash reverses the
      list), not the file's channel order; counts from the Statistics record's
      channelMessageCounts (0 when absent), type = schema name.

    `first_ns`/`last_ns`: sqlite MIN/MAX(timestamp), MCAP Statistics message start/end times;
    with no messages sqlite reports 0/0 (MCAP keeps what Statistics says).
    `stored` (jazzy, rolling): the newest metadata the file stores (sqlite `metadata` table
    (schema 3+), MCAP `rosbag2` record); the plugin starts from it and overwrites the counts,
    times and topics; sqlite then takes `ros_distro` from its `schema` table
    (`schema_ros_distro`). `uri` is the path as given on the command line, as the plugin
    was opened with it (`relative_path_`): the `Files:` line of MCAP in every layout, and of
    sqlite3 in humble or without a stored row. Bag size is not part of BagMetadata here:
    sqlite reports `page_size * page_count`, MCAP and humble sqlite the file size."""
    count = sum(t.message_count for t in topics)
    if storage == "sqlite3" and count == 0:
        first_ns = last_ns = 0
    infos = tuple(
        TopicInformation(
            name=t.name,
            type=t.type,
            serialization_format=t.serialization_format,
            offered_qos_profiles=t.offered_qos_profiles,
            type_description_hash=t.type_description_hash,
            message_count=t.message_count,
        )
        for t in topics
    )
    base = stored if (stored is not None and layout != "humble") else None
    if base is None:
        meta = BagMetadata(
            version=5 if layout == "humble" else 9,  # the struct defaults
            storage_identifier=storage,
            duration_ns=0,
            starting_time_ns=0,
            message_count=0,
            relative_file_paths=(uri,),
        )
    else:
        meta = base
    meta = replace(
        meta,
        message_count=count,
        starting_time_ns=first_ns,
        duration_ns=last_ns - first_ns,
        topics_with_message_count=infos,
    )
    if storage == "mcap":
        meta = replace(meta, storage_identifier="mcap", relative_file_paths=(uri,))
    if storage == "sqlite3" and schema_ros_distro is not None and layout != "humble":
        meta = replace(meta, ros_distro=schema_ros_distro)
    return meta


__all__ = [
    "SORT_METHODS",
    "Layout",
    "ServiceInfo",
    "SortMethod",
    "TopicFacts",
    "format_file_size",
    "format_time_point",
    "info_text",
    "is_service_event_topic",
    "plugin_metadata",
    "topic_names_text",
]
