"""What ROS 2 bags add to the core's verbs, declared without importing the format (the core
builds the verbs' command lines from it: `nanorec.cli.hooks`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from nanorec.cli.hooks import option

from ..about import ROS2_DISTROS as DISTROS

_TZ = "Time zone of the dates (default: this machine's, as ROS)."


@dataclass(frozen=True)
class Ros2InfoOptions:
    """`nanorec info BAG`: ros2 bag info's own switches, per release."""

    distro: Annotated[
        str,
        option(
            "--distro",
            help="Print as this release's ros2 bag info: humble, jazzy or rolling.",
            metavar="NAME",
        ),
    ] = "rolling"
    pre_2024_fraction: Annotated[
        bool,
        option(
            "--pre-2024-fraction",
            help="Times with milliseconds unpadded, as before rosbag2 PR #1745 (July 2024).",
        ),
    ] = False
    sort: Annotated[
        str | None, option("--sort", help="Topics by name, type or count (rolling).", metavar="KEY")
    ] = None
    verbose: Annotated[
        bool, option("--verbose", "-v", help="Services' requests and responses, sizes.")
    ] = False
    tz: Annotated[str | None, option("--tz", help=_TZ, metavar="ZONE")] = None


MsgPath = Annotated[
    list[Path] | None,
    option(
        "--msg-path",
        help="A folder of pkg/msg/Type.msg files, for bags without definitions; repeatable.",
        metavar="DIR",
    ),
]
Distro = Annotated[
    str | None,
    option(
        "--distro",
        help="Decode types the bag has no definition of with this distro's bundled ones "
        f"({', '.join(DISTROS)}); default: the bag's ros_distro, else humble.",
        metavar="NAME",
    ),
]
_REPEAT = "; repeatable."


@dataclass(frozen=True)
class Ros2DecodeOptions:
    """`nanorec cat|plot BAG`: where the definitions of the bag's types come from."""

    msg_path: MsgPath = None
    distro: Distro = None


@dataclass(frozen=True)
class Ros2PlayOptions:
    """`nanorec play BAG`: ros2 bag play's own switches."""

    topics: Annotated[
        list[str] | None, option("--topics", help="Play this topic" + _REPEAT, same_as="kinds")
    ] = None
    regex: Annotated[
        str | None, option("--regex", "-e", help="Also play the topics matching REGEX.")
    ] = None
    exclude_regex: Annotated[
        str | None, option("--exclude-regex", "-x", help="Leave out the topics matching REGEX.")
    ] = None
    exclude_topics: Annotated[
        list[str] | None, option("--exclude-topics", help="Leave out this topic" + _REPEAT)
    ] = None
    start_offset: Annotated[
        float | None,
        option("--start-offset", help="Same as --start (ros2's spelling).", same_as="start"),
    ] = None
    playback_duration: Annotated[
        float | None,
        option(
            "--playback-duration",
            help="Same as --duration (ros2's spelling).",
            same_as="duration",
        ),
    ] = None
    until_sec: Annotated[
        float | None, option("--playback-until-sec", help="Stop at this Unix time (seconds).")
    ] = None
    until_nsec: Annotated[
        int | None, option("--playback-until-nsec", help="Stop at this Unix time (nanoseconds).")
    ] = None
    start_paused: Annotated[
        bool,
        option("--start-paused", "-p", help="Same as --pause (ros2's spelling).", same_as="pause"),
    ] = False
    delay: Annotated[float, option("--delay", "-d", help="Sleep SEC before playing.")] = 0.0
    clock: Annotated[
        bool, option("--clock", help="Also print clock lines (ros2 bag play --clock).")
    ] = False
    hz: Annotated[float, option("--hz", help="Clock lines per second.")] = 40.0
    quiet: Annotated[bool, option("--quiet", "-q", help="No status line.")] = False
    msg_path: MsgPath = None
    distro: Distro = None


VERB_OPTIONS: dict[str, type] = {
    "info": Ros2InfoOptions,
    "cat": Ros2DecodeOptions,
    "play": Ros2PlayOptions,
    "plot": Ros2DecodeOptions,
}
