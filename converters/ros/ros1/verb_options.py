"""What ROS1 bags add to the core's verbs, declared without importing the format (the core
builds the verbs' command lines from it: `nanorec.cli.hooks`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from nanorec.cli.hooks import option

_TZ = "Time zone of the dates (default: this machine's, as ROS)."


@dataclass(frozen=True)
class Ros1InfoOptions:
    """`nanorec info x.bag`: rosbag info's own switches."""

    freq: Annotated[bool, option("--freq", help="Topic frequencies (reads the index).")] = False
    as_yaml: Annotated[bool, option("--yaml", "-y", help="As rosbag info --yaml.")] = False
    tz: Annotated[str | None, option("--tz", help=_TZ, metavar="ZONE")] = None


Topics = Annotated[
    list[str] | None,
    option(
        "--topics",
        help="Same as --topic (rosbag play's spelling).",
        metavar="TOPIC",
        same_as="kinds",
    ),
]


@dataclass(frozen=True)
class Ros1CatOptions:
    """`nanorec cat x.bag`: rosbag's spelling of the topics."""

    topics: Topics = None


@dataclass(frozen=True)
class Ros1PlayOptions:
    """`nanorec play x.bag`: rosbag play's own switches."""

    topics: Topics = None
    delay: Annotated[float, option("--delay", "-d", help="Sleep SEC before playing.")] = 0.0
    skip_empty: Annotated[
        float | None, option("--skip-empty", help="Skip gaps longer than SEC.")
    ] = None
    clock: Annotated[bool, option("--clock", help="Also print clock lines at --hz.")] = False
    hz: Annotated[float, option("--hz", help="Clock lines per second.")] = 100.0
    quiet: Annotated[bool, option("--quiet", "-q", help="No status line.")] = False


VERB_OPTIONS: dict[str, type] = {
    "info": Ros1InfoOptions,
    "cat": Ros1CatOptions,
    "play": Ros1PlayOptions,
}
