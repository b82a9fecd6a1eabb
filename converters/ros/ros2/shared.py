"""What the `nanorec ros2` commands share: the app, the input argument, `--msg-path`,
`--distro`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from nanorec.errors import UsageError

from .bundle import DISTROS, check_distro
from .recording import Ros2Recording

app = typer.Typer(
    help="ROS 2 bags: ros2 bag info, cat, play without ROS; plots.", no_args_is_help=True
)

BAG = Annotated[
    Path,
    typer.Argument(help="A ROS 2 bag (its folder, or one .db3/.mcap file) or its archive."),
]
MSG_PATH = Annotated[
    list[Path] | None,
    typer.Option(
        "--msg-path",
        help="A folder of pkg/msg/Type.msg files, for bags without definitions; repeatable.",
        metavar="DIR",
    ),
]

DISTRO = Annotated[
    str | None,
    typer.Option(
        "--distro",
        help=(
            "Decode types the bag has no definition of with this distro's bundled ones "
            f"({', '.join(DISTROS)}); default: the bag's ros_distro, else humble."
        ),
        metavar="NAME",
    ),
]


def ros2_recording(
    recording: Any, file: Path, msg_path: list[Path] | None, distro: str | None = None
) -> Ros2Recording:
    """`recording` as a ROS 2 recording (a `UsageError` for another format's), decoding
    with `msg_path` and `distro` (set before its first decode)."""
    if not isinstance(recording, Ros2Recording):
        raise UsageError(f"{file} is not a ROS 2 bag")
    recording.msg_path = list(msg_path or ())
    recording.distro = None if distro is None else check_distro(distro)
    return recording
