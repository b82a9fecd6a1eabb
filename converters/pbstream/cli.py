"""`nanorec pbstream ...`: info, cat (trajectories as CSV/TUM, tables, every record),
plot (trajectories, submaps, constraints) and export (exact file, subsets, ROS map).

The generic verbs hand a `.pbstream` (or its archive) to the command of the same name here
(see `nanorec.cli`): `nanorec info map.pbstream` runs `nanorec pbstream info map.pbstream`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from nanorec.cli import run
from nanorec.cli.options import Duration, End, Force, Json, Messages, Output, Start
from nanorec.errors import UsageError
from nanorec.selection import Selection

if TYPE_CHECKING:
    from .recording import PbstreamRecording

app = typer.Typer(
    name="pbstream",
    help="Cartographer .pbstream states: info, trajectories, tables, plots, ROS maps.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

_FILE_HELP = "A Cartographer .pbstream, or its nanorec archive."
_TRAJECTORY = Annotated[
    list[int] | None,
    typer.Option("--trajectory", help="Only this trajectory id (repeatable).", metavar="ID"),
]


@contextmanager
def opened(path: Path) -> Iterator[PbstreamRecording]:
    """`path` (native or archive) as a `PbstreamRecording`."""
    from nanorec.cli.inputs import opened as open_any

    from .recording import PbstreamRecording

    with open_any(path) as recording:
        if not isinstance(recording, PbstreamRecording):
            raise UsageError(f"{path} is not a pbstream recording")
        yield recording


def info_lines(summary: dict[str, Any]) -> list[str]:
    """The text `nanorec info` prints for a pbstream summary."""
    lines = [
        f"file:            {summary['source']}",
        f"format:          pbstream, format version {summary['format_version']}",
        f"records:         {summary['messages']}",
        f"dimensions:      {summary['dimensions'] or 'unknown'}",
    ]
    span = summary.get("time_span")
    if span:
        lines.append(f"time span:       {span['start']} .. {span['end']}")
    lines.append(f"trajectories:    {len(summary['trajectories'])}")
    for tid, row in summary["trajectories"].items():
        text = f"  {tid}: {row['nodes']} nodes, {row['submaps']} submaps"
        if "pose_graph_nodes" in row:
            text += (
                f" (pose graph: {row['pose_graph_nodes']} nodes, "
                f"{row['pose_graph_submaps']} submaps)"
            )
        if "start" in row:
            text += f", {row['start']} .. {row['end']} ({row['duration']:.3f} s)"
        lines.append(text)
    constraints = summary["constraints"]
    lines.append(
        f"constraints:     {constraints['total']} "
        f"({constraints['intra']} intra-submap, {constraints['inter']} inter-submap)"
    )
    sensors = ", ".join(f"{k} {v}" for k, v in summary["sensor_data"].items())
    lines.append(f"sensor data:     {sensors}")
    lines.append(f"landmarks:       {summary['landmarks']}")
    kept = f"{summary['raw_members']} gzip members kept verbatim"
    if summary["tail_bytes"]:
        kept += f", {summary['tail_bytes']} bytes of a cut record ({summary['cut']['reason']})"
    if summary["damaged"]:
        kept += f", {summary['damaged']} damaged records"
    lines.append(f"kept raw:        {kept}")
    lines += [f"missing:         {note}" for note in summary.get("missing", [])]
    lines += [f"problem:         {note}" for note in summary.get("problems", [])]
    lines.append("records by kind:")
    lines += [f"  {kind}: {count}" for kind, count in summary["kinds"].items()]
    return lines


@app.command("info")
def info_command(
    file: Annotated[Path, typer.Argument(help=_FILE_HELP)],
    as_json: Json = False,
) -> None:
    """Summarise a pbstream: format version, trajectories (node and submap counts, time
    span), 2D or 3D, constraints (intra/inter), sensor data per kind, landmarks.

    Example: nanorec info map.pbstream --json
    """
    from nanorec.tables import dumps

    def action() -> None:
        with opened(file) as rec:
            summary = rec.summary()
        summary["path"] = str(file)  # as given (a .pbstream opens through a temporary archive)
        typer.echo(dumps(summary) if as_json else "\n".join(info_lines(summary)))

    run(action)


def tum_lines(
    rec: PbstreamRecording, selection: Selection, only: list[int] | None
) -> Iterator[str]:
    """`t x y z qx qy qz qw` per node pose: exact seconds (100-ns digits), full precision."""
    from .tables import _in_range

    inside = _in_range(rec, selection)
    for tid, poses in rec.trajectories().items():
        if only and tid not in only:
            continue
        stamps = poses.timestamp.tolist()
        for row, (t, q) in enumerate(
            zip(poses.translation.tolist(), poses.rotation.tolist(), strict=True)
        ):
            if not inside(stamps[row]):
                continue
            seconds, rest = divmod(stamps[row] - 621_355_968_000_000_000, 10_000_000)
            values = " ".join(repr(float(v)) for v in (*t, *q))
            yield f"{seconds}.{rest:07d} {values}"


@app.command("cat")
def cat_command(
    file: Annotated[Path, typer.Argument(help=_FILE_HELP)],
    kind: Annotated[
        str | None,
        typer.Option(
            "--type",
            "-t",
            help="A table: trajectory, submap_poses, constraint, landmark_poses, imu_data, "
            "odometry_data, fixed_frame_pose_data, landmark_data, node, submap, "
            "trajectory_data. Without it: every record as one NDJSON line.",
            metavar="TYPE",
        ),
    ] = None,
    fmt: Annotated[
        str, typer.Option("--format", "-F", help="ndjson, csv or tum (trajectory only).")
    ] = "ndjson",
    trajectory: _TRAJECTORY = None,
    start: Start = None,
    end: End = None,
    duration: Duration = None,
    messages: Messages = None,
) -> None:
    """Print a table (one row per pose, constraint or record), or every record decoded.

    TUM: `t x y z qx qy qz qw` per node pose (t in Unix seconds, exact), optimised poses
    from the pose graph (local poses for trajectories it does not hold).

    Example: nanorec cat map.pbstream --type trajectory --format tum > poses.tum
    """
    from nanorec.tables import dumps, write_csv, write_ndjson

    def action() -> None:
        if fmt not in ("ndjson", "csv", "tum"):
            raise UsageError(f"--format takes ndjson, csv or tum, not {fmt!r}")
        selection = Selection.make(start=start, end=end, duration=duration, messages=messages)
        with opened(file) as rec:
            out = sys.stdout
            if kind is None:
                if fmt != "ndjson":
                    raise UsageError("CSV and TUM need a --type; NDJSON prints every record")
                for number in selection.numbers(rec.reader.index).tolist():
                    line = {"number": number, "time": rec.time_of(number)}
                    out.write(dumps({**line, **rec.decode(number)}) + "\n")
            elif fmt == "tum":
                if kind != "trajectory":
                    raise UsageError("TUM holds poses: use it with --type trajectory")
                for text in tum_lines(rec, selection, trajectory):
                    out.write(text + "\n")
            else:
                rows = rec.rows(kind, selection)
                if trajectory:
                    rows = (r for r in rows if r.get("trajectory_id") in trajectory)
                (write_csv if fmt == "csv" else write_ndjson)(rows, out)
            out.flush()

    run(action)


@app.command("plot")
def plot_command(
    file: Annotated[Path, typer.Argument(help=_FILE_HELP)],
    output: Output,
    force: Force = False,
    no_map: Annotated[
        bool, typer.Option("--no-map", help="Do not draw the occupancy grid under the paths.")
    ] = False,
) -> None:
    """Draw the trajectories (optimised node poses), submap origins and constraints, over
    the assembled 2D map. Needs matplotlib (the plot extra).

    Example: nanorec plot map.pbstream -o map.png
    """
    from nanorec.cli.inputs import check_output

    from .plot import plot

    def action() -> None:
        check_output(output, file)
        with opened(file) as rec:
            size = plot(rec, output, overwrite=force, draw_map=not no_map)
        typer.echo(f"{output}: {size} bytes")

    run(action)


@app.command("export")
def export_command(
    file: Annotated[Path, typer.Argument(help=_FILE_HELP)],
    output: Output,
    force: Force = False,
    to: Annotated[
        str,
        typer.Option(
            "--format",
            "-F",
            help="native (the .pbstream, exact or a subset), ros-map (PGM + YAML), parquet, mcap.",
            metavar="FORMAT",
        ),
    ] = "native",
    resolution: Annotated[
        float | None,
        typer.Option("--resolution", help="ros-map: metres per pixel (default: the submaps')."),
    ] = None,
    trajectory: _TRAJECTORY = None,
    nodes: Annotated[
        str | None,
        typer.Option("--nodes", help="Only node indexes A:B (B excluded).", metavar="A:B"),
    ] = None,
    start: Start = None,
    end: End = None,
    duration: Duration = None,
) -> None:
    """Write the .pbstream back byte for byte; or a valid stream of some trajectories or a
    node/time range; or the 2D occupancy grid as a ROS map (like
    cartographer_pbstream_to_ros_map: `-o map` writes map.pgm and map.yaml).

    Example: nanorec export map.pbstream --format ros-map -o map --resolution 0.05
    """
    from nanorec.cli.export import export_file
    from nanorec.selection import parse_range

    def action() -> int:
        selection = Selection.make(start=start, end=end, duration=duration)
        options: dict[str, Any] = {}
        if trajectory:
            options["trajectories"] = list(trajectory)
        if nodes is not None:
            options["nodes"] = parse_range("--nodes", nodes)
        if resolution is not None:
            if not resolution > 0:
                raise UsageError(f"--resolution must be > 0, not {resolution}")
            options["resolution"] = resolution
        if to in ("parquet", "mcap") or (to == "native" and not options):
            return export_file(file, output, selection, force=force, to=to)
        return _export_with_options(file, output, selection, force, to, options)

    raise typer.Exit(run(action))


def _export_with_options(
    file: Path, output: Path, selection: Selection, force: bool, to: str, options: dict[str, Any]
) -> int:
    from nanorec.cli.inputs import check_output

    from .converter import CONVERTER

    check_output(output, file)
    with opened(file) as rec:
        report = CONVERTER.export(
            rec.reader,
            output,
            selection=selection,
            overwrite=force,
            options={**options, "format": to},
        )
    typer.echo(f"{report.output}: {report.size} bytes, sha256 {report.sha256}")
    return 0


__all__ = ["app", "info_lines", "tum_lines"]
