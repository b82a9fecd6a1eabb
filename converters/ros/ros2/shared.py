"""What the `nanorec ros2` commands share: the app, the recording decoding with `--msg-path`
and `--distro`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from nanorec.errors import UsageError

from .bundle import check_distro
from .recording import Ros2Recording

app = typer.Typer(
    help="ROS 2 bags: ros2 bag info, cat, play without ROS; plots.", no_args_is_help=True
)


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
