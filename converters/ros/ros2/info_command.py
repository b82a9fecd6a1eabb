"""`nanorec info BAG` for ROS 2 bags: exactly `ros2 bag info`'s text (or the facts as JSON)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from nanorec.cli import run
from nanorec.cli.inputs import opened
from nanorec.cli.options import Json
from nanorec.cli.surface import check_choice, verb_command
from nanorec.errors import UsageError
from nanorec.timezones import parse_zone

from .shared import app, ros2_recording

_LAYOUTS = ("humble", "jazzy", "rolling")


@verb_command(app, "info", as_json="The facts as JSON (the metadata rosbag2 reads, the files).")
def info_command(
    typed: Annotated[
        str,
        typer.Argument(
            help="A ROS 2 bag (its folder, or one .db3/.mcap file) or its archive.",
            metavar="FILE",
            show_default=False,
        ),
    ],
    distro: Annotated[
        str,
        typer.Option(
            "--distro",
            help="Print as this release's ros2 bag info: humble, jazzy or rolling.",
            metavar="NAME",
        ),
    ] = "rolling",
    pre_2024_fraction: Annotated[
        bool,
        typer.Option(
            "--pre-2024-fraction",
            help="Times with milliseconds unpadded, as before rosbag2 PR #1745 (July 2024).",
        ),
    ] = False,
    sort: Annotated[
        str | None,
        typer.Option("--sort", help="Topics by name, type or count (rolling).", metavar="KEY"),
    ] = None,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Services' requests and responses, sizes.")
    ] = False,
    as_json: Json = False,
    tz: Annotated[
        str | None,
        typer.Option(
            "--tz", help="Time zone of the dates (default: this machine's, as ROS).", metavar="ZONE"
        ),
    ] = None,
) -> None:
    """Print exactly what `ros2 bag info` prints: from metadata.yaml for a bag folder, from
    the storage itself for one .db3/.mcap file (as rosbag2's storage plugins build it).

    Example: nanorec info rosbag2_dir --distro humble --tz UTC
    """
    from nanorec import registry

    from .bag import MAX_METADATA, METADATA, read_regular
    from .facts import as_held, bag_metadata, bag_size, facts_of_archive, services, topic_sizes
    from .info import info_text
    from .metadata import parse_metadata

    file = Path(typed)  # `typed` as typed: one storage file's `Files:` line (facts.py)

    def action() -> None:
        check_choice("--distro", distro, _LAYOUTS)
        if sort is not None:
            check_choice("--sort", sort, ("name", "type", "count"))
            if distro != "rolling":
                raise UsageError(f"--sort is rolling's; {distro}'s ros2 bag info has none")
        if verbose and distro == "humble":
            raise UsageError("humble's ros2 bag info has no --verbose")
        zone = None if tz is None else parse_zone(tz)
        if not (as_json or verbose) and (file / METADATA).is_file():
            # As `ros2 bag info DIR`: metadata.yaml and the folder's size, nothing converted.
            text = read_regular(file / METADATA, MAX_METADATA).decode("utf-8", "replace")
            metadata = parse_metadata(text)
            size = sum(p.stat().st_size for p in file.iterdir() if p.is_file())
            typer.echo(
                info_text(
                    metadata,
                    bag_size=size,
                    layout=distro,  # type: ignore[arg-type]
                    nanosecond_fraction=not pre_2024_fraction,
                    tz=zone,
                    sort=sort,  # type: ignore[arg-type]
                ),
                nl=False,
            )
            return
        with opened(file) as opened_recording:
            recording = ros2_recording(opened_recording, file, None)
            if as_json:
                typer.echo(json.dumps(facts_of_archive(recording), indent=2))
                return
            native = file.is_file() and not registry.is_archive(registry.read_head(file))
            metadata, origin = bag_metadata(
                recording,
                distro,  # type: ignore[arg-type]
                uri=typed if native else None,
            )
            metadata, claims = as_held(recording, metadata)
            text = info_text(
                metadata,
                bag_size=bag_size(recording),
                layout=distro,  # type: ignore[arg-type]
                nanosecond_fraction=not pre_2024_fraction,
                tz=zone,
                sort=sort,  # type: ignore[arg-type]
                verbose=verbose,
                services=services(recording, metadata) if verbose else (),
                sizes=topic_sizes(recording) if verbose else None,
            )
            typer.echo(text, nl=False)
            if origin == "reindexed":
                what = "no" if recording.meta.metadata is None else "an unreadable"
                typer.echo(
                    f"nanorec: {what} metadata.yaml: shown as `ros2 bag reindex` would write it",
                    err=True,
                )
            for note in [*recording.meta.notes, *claims]:
                typer.echo(f"nanorec: {note}", err=True)

    run(action)
