"""`nanorec pbstream ...`: info, cat (trajectories as CSV/TUM, tables, every record),
plot (trajectories, submaps, constraints) and export (exact file, subsets, ROS map).

The core's verbs call the hooks here on a `.pbstream` (or its archive): `nanorec info
map.pbstream` and `nanorec pbstream info map.pbstream` are one command (`nanorec.cli.hooks`).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import typer

from nanorec import registry
from nanorec.cli.hooks import VerbCall, verb_hook
from nanorec.cli.surface import check_choice
from nanorec.contract import ExportRequest
from nanorec.errors import UsageError

from .about import NAME
from .export_options import PbstreamExportOptions as RequestOptions
from .verb_options import PbstreamCatOptions, PbstreamExportOptions, PbstreamPlotOptions

if TYPE_CHECKING:
    from .recording import PbstreamRecording

app = typer.Typer(
    name="pbstream",
    help="Cartographer .pbstream states: info, trajectories, tables, plots, ROS maps.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def _pbstream(call: VerbCall[object]) -> PbstreamRecording:
    """The call's input as a `PbstreamRecording`."""
    from .recording import PbstreamRecording

    recording = call.recording
    if not isinstance(recording, PbstreamRecording):
        raise UsageError(f"{call.source} is not a pbstream recording")
    return recording


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


@verb_hook(app, "info")
def info_hook(call: VerbCall[None]) -> int:
    """Summarise a pbstream: format version, trajectories (node and submap counts, time
    span), 2D or 3D, constraints (intra/inter), sensor data per kind, landmarks.

    Example: nanorec info map.pbstream --json
    """
    from nanorec.outputs.tables import dumps

    summary = _pbstream(call).summary()
    summary["path"] = str(call.source)  # as given (a .pbstream opens through a temporary archive)
    typer.echo(dumps(summary) if call.as_json else "\n".join(info_lines(summary)))
    return 0


@verb_hook(app, "cat", options=PbstreamCatOptions)
def cat_hook(call: VerbCall[PbstreamCatOptions]) -> int:
    """Print a table (one row per pose, constraint or record), or every record decoded.

    TUM: `t x y z qx qy qz qw` per node pose (t in Unix seconds, exact), optimised poses
    from the pose graph (local poses for trajectories it does not hold).

    Example: nanorec cat map.pbstream --type trajectory --format tum > poses.tum
    """
    from nanorec.outputs.tables import write_csv, write_ndjson

    from .cli_rows import not_empty, record_lines, table_rows, tum_lines

    fmt, kinds, trajectory = call.form or "ndjson", call.kinds, call.extra.trajectory
    check_choice("--format", fmt, ("ndjson", "csv", "tum"))
    selection = call.selecting(None)
    rec = _pbstream(call)
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
    return 0


@verb_hook(app, "plot", options=PbstreamPlotOptions)
def plot_hook(call: VerbCall[PbstreamPlotOptions]) -> int:
    """Draw the trajectories (optimised node poses), submap origins and constraints
    coloured by kind, over the assembled 2D map; prints one line saying what it drew.
    Needs matplotlib (the plot extra).

    With a selection, only the nodes in it (by their own time, or their record's number) and
    the submaps tied to them, over the whole map; --type node and/or submap draws only those.

    Example: nanorec plot map.pbstream -o map.png --start 0 --duration 60
    """
    from .plot import plot

    assert call.output is not None and call.selection is not None
    selection, trajectory = call.selection, call.extra.trajectory
    rec = _pbstream(call)
    if not selection.everything:
        selection.chosen(rec.reader.index)
    rec.check_trajectories(trajectory)
    report = plot(
        rec,
        call.output,
        overwrite=call.force,
        draw_map=not call.extra.no_map,
        selection=selection,
        trajectories=trajectory or None,
    )
    typer.echo(report.line())
    return 0


@verb_hook(app, "export", options=PbstreamExportOptions)
def export_hook(call: VerbCall[PbstreamExportOptions]) -> int | None:
    """Write the .pbstream back byte for byte; or a valid stream of some trajectories, a
    node, time or record range; or the 2D occupancy grid as a ROS map (like
    cartographer_pbstream_to_ros_map: `-o map` writes map.pgm and map.yaml).

    A subset always holds the header, the pose graph and the builder options (filtered to
    what is kept): `--messages 0:5` gives those and records 3 and 4.

    Example: nanorec export map.pbstream --format ros-map -o map --resolution 0.05
    """
    from nanorec.cli.export import export_choices
    from nanorec.selection import parse_range

    fmt, extra, selection = call.form or "native", call.extra, call.selection
    assert selection is not None
    check_choice("--format", fmt, export_choices(registry.get(NAME)))
    trajectories = tuple(extra.trajectory) if extra.trajectory else None
    nodes = parse_range("--nodes", extra.nodes) if extra.nodes is not None else None
    if (trajectories is not None or nodes is not None) and fmt != "native":
        raise UsageError(f"--trajectory and --nodes cut the native stream, not {fmt}")
    if extra.resolution is not None:
        if fmt != "ros-map":
            raise UsageError("--resolution is for --format ros-map")
        if not extra.resolution > 0:
            raise UsageError(f"--resolution must be > 0, not {extra.resolution}")
    if fmt == "ros-map" and not selection.everything:
        raise UsageError("--format ros-map draws the whole map: no range or --type")
    options = RequestOptions(trajectories, nodes, extra.resolution)
    if options == RequestOptions():
        return None  # the core's export
    from nanorec.cli.export import export_native

    rec = _pbstream(call)
    if not selection.everything:
        selection.chosen(rec.reader.index)
    assert call.output is not None
    wanted = ExportRequest(selection, call.force, form=fmt, options=options)
    report = export_native(registry.get(NAME), rec.reader, call.output, wanted)
    cut = f" (a cut of {report.messages} messages)" if fmt == "native" else ""
    typer.echo(f"{report.output}: {report.size} bytes, sha256 {report.sha256}{cut}")
    return 0


__all__ = ["app", "info_lines"]
