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
from nanorec.cli.options import (
    Duration,
    End,
    ExportFormat,
    Force,
    Json,
    Kinds,
    Messages,
    Output,
    Start,
    Storage,
    TableFormat,
)
from nanorec.cli.surface import check_choice, verb_command
from nanorec.contract import ExportRequest
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
    kept = f"{summary['raw_members']} gzip members not in Cartographer's gzip form"
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


@verb_command(app, "info")
def info_command(
    file: Annotated[Path, typer.Argument(help=_FILE_HELP)],
    as_json: Json = False,
) -> None:
    """Summarise a pbstream: format version, trajectories (node and submap counts, time
    span), 2D or 3D, constraints (intra/inter), sensor data per kind, landmarks.

    Example: nanorec info map.pbstream --json
    """
    from nanorec.outputs.tables import dumps

    def action() -> None:
        with opened(file) as rec:
            summary = rec.summary()
        summary["path"] = str(file)  # as given (a .pbstream opens through a temporary archive)
        typer.echo(dumps(summary) if as_json else "\n".join(info_lines(summary)))

    run(action)


@verb_command(
    app,
    "cat",
    kinds="A table: trajectory, submap_poses, constraint, landmark_poses, imu_data, "
    "odometry_data, fixed_frame_pose_data, landmark_data, node, submap, trajectory_data; or "
    "another record kind (header, pose_graph...: its records, NDJSON); repeatable. Without "
    "it: every record as one NDJSON line.",
    fmt="ndjson, csv (one --type) or tum (--type trajectory).",
)
def cat_command(
    file: Annotated[Path, typer.Argument(help=_FILE_HELP)],
    kinds: Kinds = None,
    fmt: TableFormat = "ndjson",
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
    from nanorec.outputs.tables import write_csv, write_ndjson

    from .cli_rows import not_empty, record_lines, table_rows, tum_lines

    def action() -> None:
        check_choice("--format", fmt, ("ndjson", "csv", "tum"))
        selection = Selection.make(start=start, end=end, duration=duration, messages=messages)
        with opened(file) as rec:
            if not selection.everything:
                selection.chosen(rec.reader.index)
            rec.check_trajectories(trajectory)
            if not kinds:
                if fmt != "ndjson":
                    raise UsageError("CSV and TUM need a --type; NDJSON prints every record")
                write_ndjson(record_lines(rec, selection, trajectory, None), sys.stdout)
            elif fmt == "tum":
                if list(kinds) != ["trajectory"]:
                    raise UsageError("TUM holds poses: use it with one --type trajectory")
                lines = tum_lines(rec, selection, trajectory)
                lines = not_empty(lines, "trajectory", selection, trajectory)
                sys.stdout.writelines(text + "\n" for text in lines)
            else:
                if fmt == "csv" and len(kinds) > 1:
                    raise UsageError("CSV holds one table: give one --type")
                tables = [table_rows(rec, kind, selection, trajectory, fmt) for kind in kinds]
                for rows in tables:
                    (write_csv if fmt == "csv" else write_ndjson)(rows, sys.stdout)
            sys.stdout.flush()

    run(action)


@verb_command(app, "plot", kinds="node and/or submap: draw only those; repeatable.")
def plot_command(
    file: Annotated[Path, typer.Argument(help=_FILE_HELP)],
    output: Output,
    force: Force = False,
    start: Start = None,
    end: End = None,
    duration: Duration = None,
    messages: Messages = None,
    kinds: Kinds = None,
    trajectory: _TRAJECTORY = None,
    no_map: Annotated[
        bool, typer.Option("--no-map", help="Do not draw the occupancy grid under the paths.")
    ] = False,
) -> None:
    """Draw the trajectories (optimised node poses), submap origins and constraints
    coloured by kind, over the assembled 2D map; prints one line saying what it drew.
    Needs matplotlib (the plot extra).

    With a selection, only the nodes in it (by their own time, or their record's number) and
    the submaps tied to them, over the whole map.

    Example: nanorec plot map.pbstream -o map.png --start 0 --duration 60
    """
    from nanorec.cli.inputs import check_output

    from .plot import plot

    def action() -> None:
        check_output(output, file)
        selection = Selection.make(
            start=start, end=end, duration=duration, messages=messages, kinds=kinds
        )
        with opened(file) as rec:
            if not selection.everything:
                selection.chosen(rec.reader.index)
            rec.check_trajectories(trajectory)
            report = plot(
                rec,
                output,
                overwrite=force,
                draw_map=not no_map,
                selection=selection,
                trajectories=trajectory or None,
            )
        typer.echo(report.line())

    run(action)


@verb_command(
    app,
    "export",
    fmt="native (the .pbstream, exact or a subset), ros-map (PGM + YAML), parquet, mcap, "
    "ros1 or ros2 (a bag of the trajectories and the map).",
    kinds="Only records of this kind (node, submap, imu_data...); repeatable.",
)
def export_command(
    file: Annotated[Path, typer.Argument(help=_FILE_HELP)],
    output: Output,
    force: Force = False,
    fmt: ExportFormat = "native",
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
    messages: Messages = None,
    kinds: Kinds = None,
    storage: Storage = None,
) -> None:
    """Write the .pbstream back byte for byte; or a valid stream of some trajectories, a
    node, time or record range; or the 2D occupancy grid as a ROS map (like
    cartographer_pbstream_to_ros_map: `-o map` writes map.pgm and map.yaml).

    A subset always holds the header, the pose graph and the builder options (filtered to
    what is kept): `--messages 0:5` gives those and records 3 and 4.

    Example: nanorec export map.pbstream --format ros-map -o map --resolution 0.05
    """
    from nanorec.cli.export import export_choices, export_file
    from nanorec.selection import parse_range

    from .converter import CONVERTER

    def action() -> int:
        check_choice("--format", fmt, export_choices(CONVERTER))
        selection = Selection.make(
            start=start, end=end, duration=duration, messages=messages, kinds=kinds
        )
        options: dict[str, Any] = {}
        if trajectory:
            options["trajectories"] = tuple(trajectory)
        if nodes is not None:
            options["nodes"] = parse_range("--nodes", nodes)
        if options and fmt != "native":
            raise UsageError(f"--trajectory and --nodes cut the native stream, not {fmt}")
        if resolution is not None:
            if fmt != "ros-map":
                raise UsageError("--resolution is for --format ros-map")
            if not resolution > 0:
                raise UsageError(f"--resolution must be > 0, not {resolution}")
            options["resolution"] = resolution
        if fmt == "ros-map" and not selection.everything:
            raise UsageError("--format ros-map draws the whole map: no range or --type")
        if not options:
            return export_file(file, output, selection, force=force, to=fmt, storage=storage)
        return _export_with_options(file, output, selection, force, fmt, options)

    raise typer.Exit(run(action))


def _export_with_options(
    file: Path, output: Path, selection: Selection, force: bool, to: str, options: dict[str, Any]
) -> int:
    from nanorec.cli.inputs import check_output

    from .converter import CONVERTER, PbstreamExportOptions

    check_output(output, file)
    with opened(file) as rec:
        if not selection.everything:
            selection.chosen(rec.reader.index)
        wanted = ExportRequest(selection, force, form=to, options=PbstreamExportOptions(**options))
        report = CONVERTER.export(rec.reader, output, wanted)
    cut = f" (a cut of {report.messages} messages)" if to == "native" else ""
    typer.echo(f"{report.output}: {report.size} bytes, sha256 {report.sha256}{cut}")
    return 0


__all__ = ["app", "info_lines"]
