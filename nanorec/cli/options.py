"""The options every verb shares, defined once so they are spelled and explained alike.

Times are seconds from the recording's first message (`--start 10 --end 25`, both
inclusive; `--duration` counts from `--start`). `--messages A:B` picks message numbers
(0-based, B excluded); a format whose messages are frames also calls it `--frames`.
`--type` keeps one kind (a record kind, a topic), repeatable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def _output(typed: str) -> Path:
    from nanorec.cli.inputs import output_path  # the registry: not for `--help`

    return output_path(typed)


Output = Annotated[
    Path,
    typer.Option(
        "--output", "-o", help="File to write (or s3://BUCKET/KEY: uploaded).", parser=_output
    ),
]
OptionalOutput = Annotated[
    Path | None,
    typer.Option(
        "--output", "-o", help="File to write (default: next to the input).", parser=_output
    ),
]
Force = Annotated[bool, typer.Option("--force", help="Overwrite an existing output.")]
Json = Annotated[bool, typer.Option("--json", help="Print one JSON document instead of text.")]
Start = Annotated[
    float | None,
    typer.Option("--start", "-s", help="From this time (seconds from the first message)."),
]
End = Annotated[
    float | None,
    typer.Option("--end", help="Up to this time (seconds from the first message, included)."),
]
Duration = Annotated[
    float | None,
    typer.Option("--duration", "-u", help="Only this many seconds from --start."),
]
Messages = Annotated[
    str | None,
    typer.Option(
        "--messages",
        "--frames",
        help="Message numbers A:B (0-based, B excluded; a CARLA message is a frame).",
        metavar="A:B",
    ),
]
Kinds = Annotated[
    list[str] | None,
    typer.Option(
        "--type",
        "--topic",
        "-t",
        help="Only messages/records of this kind (a record type, a topic); repeatable.",
        metavar="KIND",
    ),
]
ExportFormat = Annotated[
    str,
    typer.Option(
        "--format",
        "-F",
        help="native (the recording's own format), parquet (a directory of tables, needs the "
        "[tables] extra), mcap (needs the [mcap] extra), ros1 or ros2 (a ROS bag of any "
        "recording: its topics mapped, or its poses and maps), or a format's own (see below).",
        metavar="FORMAT",
    ),
]
Storage = Annotated[
    str | None,
    typer.Option(
        "--storage",
        help="The output's storage where its format has several: a ROS 2 bag's sqlite3 or "
        "mcap (default: the source bag's, else sqlite3).",
        metavar="STORAGE",
    ),
]
TableFormat = Annotated[
    str,
    typer.Option(
        "--format", "-F", help="ndjson (one JSON object a line) or csv.", metavar="FORMAT"
    ),
]
Rate = Annotated[float, typer.Option("--rate", "-r", help="Speed factor: 2 plays twice as fast.")]
Loop = Annotated[bool, typer.Option("--loop", "-l", help="Start over after the end.")]
Immediate = Annotated[
    bool, typer.Option("--immediate", "-i", help="Print every message at once, no waiting.")
]
Pause = Annotated[
    bool, typer.Option("--pause", help="Start paused (needs a terminal: space resumes).")
]
Stored = Annotated[
    bool,
    typer.Option(
        "--stored",
        help="Write the stored layout (members kept as they are: zero-copy reads, several "
        "times the disk) instead of the compact one.",
    ),
]
KeepGoing = Annotated[
    bool,
    typer.Option(
        "--keep-going",
        help="Exit 0 even when the input was damaged or a warning was given (still reported).",
    ),
]
