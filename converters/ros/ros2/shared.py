"""What the `nanorec ros2` commands share: the app, the input argument, `--msg-path`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from nanorec.errors import UsageError

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


def ros2_recording(recording: Any, file: Path, msg_path: list[Path] | None) -> Ros2Recording:
    """`recording` as a ROS 2 recording (a `UsageError` for another format's)."""
    if not isinstance(recording, Ros2Recording):
        raise UsageError(f"{file} is not a ROS 2 bag")
    recording.msg_path = list(msg_path or ())
    return recording
