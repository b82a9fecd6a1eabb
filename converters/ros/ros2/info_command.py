"""`nanorec info BAG` for ROS 2 bags: exactly `ros2 bag info`'s text (or the facts as JSON)."""

from __future__ import annotations

import json

import typer

from nanorec.cli.hooks import VerbCall, verb_hook
from nanorec.cli.surface import check_choice
from nanorec.errors import UsageError
from nanorec.timezones import parse_zone

from .bag import MAX_METADATA, METADATA, read_regular
from .metadata import parse_metadata
from .shared import app, ros2_recording
from .verb_options import Ros2InfoOptions

_LAYOUTS = ("humble", "jazzy", "rolling")


@verb_hook(app, "info", options=Ros2InfoOptions)
def info_hook(call: VerbCall[Ros2InfoOptions]) -> int:
    """Print exactly what `ros2 bag info` prints: from metadata.yaml for a bag folder, from
    the storage itself for one .db3/.mcap file (as rosbag2's storage plugins build it).

    Example: nanorec info rosbag2_dir --distro humble --tz UTC
    """
    from nanorec import registry

    from .facts import as_held, bag_metadata, bag_size, facts_of_archive, services, topic_sizes
    from .info import info_text

    file, typed = call.source, call.typed  # as typed: one storage file's `Files:` line
    extra = call.extra
    distro, sort, verbose = extra.distro, extra.sort, extra.verbose
    check_choice("--distro", distro, _LAYOUTS)
    if sort is not None:
        check_choice("--sort", sort, ("name", "type", "count"))
        if distro != "rolling":
            raise UsageError(f"--sort is rolling's; {distro}'s ros2 bag info has none")
    if verbose and distro == "humble":
        raise UsageError("humble's ros2 bag info has no --verbose")
    zone = None if extra.tz is None else parse_zone(extra.tz)
    if not (call.as_json or verbose) and (file / METADATA).is_file():
        # As `ros2 bag info DIR`: metadata.yaml and the folder's size, nothing converted.
        text = read_regular(file / METADATA, MAX_METADATA).decode("utf-8", "replace")
        metadata = parse_metadata(text)
        size = sum(p.stat().st_size for p in file.iterdir() if p.is_file())
        typer.echo(
            info_text(
                metadata,
                bag_size=size,
                layout=distro,  # type: ignore[arg-type]
                nanosecond_fraction=not extra.pre_2024_fraction,
                tz=zone,
                sort=sort,  # type: ignore[arg-type]
            ),
            nl=False,
        )
        return 0
    recording = ros2_recording(call.recording, file, None)
    if call.as_json:
        typer.echo(json.dumps(facts_of_archive(recording), indent=2))
        return 0
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
        nanosecond_fraction=not extra.pre_2024_fraction,
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
    return 0
