"""`nanorec carla author TABLE -o run.log --map Town03`: a recorder file from a trajectory
table, the thin command over `author.author` (which documents what is written)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from nanorec.cli import run
from nanorec.cli.inputs import check_input
from nanorec.cli.options import Force, Json, Output
from nanorec.errors import NanorecError, UsageError

from .cli import app
from .releases import DEFAULT_RELEASE, RELEASE_NUMBERS

_RELEASES = ", ".join(RELEASE_NUMBERS)


@app.command("author")
def author_command(
    table: Annotated[
        Path, typer.Argument(help="Trajectory table: .csv, or .parquet (needs pyarrow).")
    ],
    output: Output,
    map_name: Annotated[
        str, typer.Option("--map", help="The map the recording replays on (e.g. Town03).")
    ],
    release: Annotated[
        str,
        typer.Option(
            "--release",
            help=f"The CARLA release to write for: {_RELEASES}; or a release family name "
            "(nightly-2023, ue4-dev-2026, ue5-dev-2026...).",
            metavar="VERSION",
        ),
    ] = DEFAULT_RELEASE,
    fps: Annotated[
        float | None,
        typer.Option(
            "--fps",
            help="Frames at this fixed rate, poses interpolated (default: one frame per "
            "distinct time t of the table).",
        ),
    ] = None,
    date: Annotated[
        int | None,
        typer.Option("--date", help="The header's date, Unix seconds (default: now)."),
    ] = None,
    uids_from: Annotated[
        Path | None,
        typer.Option(
            "--uids-from",
            help="Take blueprint UIds from this recording (one made on the server that "
            "will replay; a uid column still wins).",
            metavar="LOG",
        ),
    ] = None,
    force: Force = False,
    as_json: Json = False,
) -> None:
    """Write a CARLA recorder file that CARLA's replayer plays, from a table of poses.

    One row per actor and time. Columns (metres and degrees, axes as carla.Location and
    carla.Rotation): t (seconds), id (actor id), type_id (blueprint, e.g.
    vehicle.tesla.model3, walker.pedestrian.0001), x, y, z, yaw; optional pitch, roll,
    extent_x, extent_y, extent_z (bounding-box half-extents, m; written as additional
    data), role_name, uid (the blueprint's number in the server's library: `nanorec cat
    any.log --type event_add` shows it for a recording made on that server, --uids-from
    takes them all from one; default the release's own where known), and vehicle control
    throttle, steer, brake, hand_brake, reverse (written as gear -1), gear. Other columns
    are ignored.

    An actor is added in the first frame it appears in, moved every frame until its last
    row (interpolated between rows) and removed in the next frame. The table's first time
    is the recording's 0 s. The file stores centimetres; `nanorec cat run.log --type
    position` prints them back.

    Example: nanorec carla author tracks.csv -o run.log --map Town03 --release 0.9.15
    """
    from .author import author, recorded_uids

    def action() -> None:
        check_input(table)
        uids = None
        if uids_from is not None:
            check_input(uids_from)
            try:
                uids = recorded_uids(uids_from)
            except NanorecError as error:
                raise UsageError(
                    f"--uids-from {uids_from}: not a CARLA recording ({error})"
                ) from None
        report = author(
            table,
            output,
            map_name=map_name,
            release=release,
            fps=fps,
            overwrite=force,
            date=date,
            uids=uids,
        )
        typer.echo(json.dumps(report.as_dict(), indent=2) if as_json else report.line())

    run(action)
