"""The reading verbs: info, cat, play, plot, over the contract only.

Each works on any archive (a nanorec archive of any format, NanoVer's own recordings) and on
any native file a registered converter takes. A format with its own command of the same name
gets the command line instead (see `nanorec.cli`).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from nanorec.cli import app, run
from nanorec.cli.inputs import (
    check_output,
    message_dict,
    opened,
)
from nanorec.cli.options import (
    Duration,
    End,
    Force,
    Immediate,
    Json,
    Kinds,
    Loop,
    Messages,
    Output,
    Pause,
    Rate,
    Start,
    TableFormat,
)
from nanorec.cli.surface import check_choice, verb_command
from nanorec.errors import UsageError


@verb_command(app, "info")
def info(
    file: Annotated[Path, typer.Argument(help="An archive or a native recording.")],
    as_json: Json = False,
) -> None:
    """Summarise a recording: format, messages, times, kinds.

    Formats have their own richer text (CARLA's and rosbag's info), used automatically.

    Example: nanorec info recording.nanover.zip --json
    """
    from nanorec.outputs.tables import dumps

    def action() -> None:
        with opened(file) as recording:
            summary = recording.summary()
        if as_json:
            typer.echo(dumps(summary))
            return
        for key, value in summary.items():
            if isinstance(value, dict):
                typer.echo(f"{key}:")
                for name, item in value.items():
                    typer.echo(f"  {name}: {item}")
            else:
                typer.echo(f"{key}: {value}")

    run(action)


@verb_command(app, "cat")
def cat(
    file: Annotated[Path, typer.Argument(help="An archive or a native recording.")],
    kinds: Kinds = None,
    fmt: TableFormat = "ndjson",
    start: Start = None,
    end: End = None,
    duration: Duration = None,
    messages: Messages = None,
) -> None:
    """Print records as a table, one row per record (CSV needs one --type), or with no
    --type every message as one NDJSON line (number, time, kind, value).

    Example: nanorec cat recording.nanover.zip --type frame --format csv > frames.csv
    """
    from nanorec.outputs.tables import write_csv, write_ndjson
    from nanorec.selection import Selection

    def action() -> None:
        check_choice("--format", fmt, ("ndjson", "csv"))
        selection = Selection.make(
            start=start, end=end, duration=duration, messages=messages, kinds=kinds
        )
        with opened(file) as recording:
            selection.chosen(recording.reader.index)
            if not kinds:
                if fmt == "csv":
                    raise UsageError("CSV needs one --type (one table); NDJSON takes them all")
                write_ndjson(map(message_dict, recording.messages(selection)), sys.stdout)
                return
            if fmt == "csv" and len(kinds) > 1:
                raise UsageError("CSV holds one table: give one --type")
            for kind in kinds:
                rows = recording.rows(kind, selection)
                (write_csv if fmt == "csv" else write_ndjson)(rows, sys.stdout)
        sys.stdout.flush()

    run(action)


@verb_command(app, "play")
def play(
    file: Annotated[Path, typer.Argument(help="An archive or a native recording.")],
    rate: Rate = 1.0,
    start: Start = None,
    end: End = None,
    duration: Duration = None,
    messages: Messages = None,
    kinds: Kinds = None,
    loop: Loop = False,
    immediate: Immediate = False,
    pause: Pause = False,
) -> None:
    """Print each message as one JSON line at the recorded pace (like rosbag play).

    On a terminal, space pauses and resumes, s steps one message while paused, q quits.

    Example: nanorec play recording.nanover.zip --rate 2 --start 10 --duration 5
    """
    from nanorec.outputs.tables import write_line
    from nanorec.selection import Selection

    def action() -> None:
        selection = Selection.make(
            start=start, end=end, duration=duration, messages=messages, kinds=kinds
        )
        options: dict[str, Any] = dict(rate=rate, selection=selection)
        with (
            opened(file) as recording,
            terminal_player(recording, pause, loop=loop, immediate=immediate, **options) as player,
        ):
            for message in player.paced(recording.message):
                write_line(message_dict(message), sys.stdout)
                if not immediate:
                    sys.stdout.flush()
        sys.stdout.flush()

    run(action)


@contextlib.contextmanager
def terminal_player(
    recording: Any, pause: bool, *, factory: Callable[..., Any] | None = None, **options: Any
) -> Iterator[Any]:
    """A `Player` of `recording` (or what `factory` makes, a format's own `Player`
    subclass, with the same arguments) driven by the keyboard when stdin is a terminal:
    space pauses and resumes, s steps while paused, q quits. Any format's `play` uses it."""
    from nanorec.player import Player, TerminalKeys

    interactive = sys.stdin.isatty()
    if pause and not interactive:
        raise UsageError("--pause needs a terminal on stdin (space resumes, s steps)")
    with contextlib.ExitStack() as stack:
        terminal = stack.enter_context(TerminalKeys(sys.stdin.fileno())) if interactive else None
        player: Player

        def keys(seconds: float) -> None:
            assert terminal is not None
            key = terminal.wait(seconds)
            if key is not None:
                player.handle_key(key)
            if key == " ":
                when = "-" if player.time is None else f"{player.time:.3f} s"
                state = "PAUSED" if player.paused else "RUNNING"
                typer.echo(f"[{state}] message {player.index}, {when}", err=True)

        player = (factory or Player)(
            recording, paused=pause, keys=keys if terminal is not None else None, **options
        )
        if terminal is not None:
            typer.echo(
                "nanorec: space pauses/resumes, s steps one message while paused, q quits"
                + (" [PAUSED]" if pause else ""),
                err=True,
            )
        yield player


@verb_command(app, "plot")
def plot(
    file: Annotated[Path, typer.Argument(help="An archive or a native recording.")],
    output: Output,
    force: Force = False,
    start: Start = None,
    end: End = None,
    duration: Duration = None,
    messages: Messages = None,
    kinds: Kinds = None,
) -> None:
    """Draw how many messages of each kind a recording holds over time (formats draw more:
    CARLA a bird's-eye view, pbstream its map). Needs the plot extra (matplotlib).

    Example: nanorec plot recording.nanover.zip -o timeline.png
    """
    from nanorec.outputs.timeline import plot_timeline
    from nanorec.selection import Selection

    def action() -> None:
        check_output(output, file)
        selection = Selection.make(
            start=start, end=end, duration=duration, messages=messages, kinds=kinds
        )
        with opened(file) as recording:
            selection.chosen(recording.reader.index)
            size = plot_timeline(recording, output, overwrite=force, selection=selection)
        typer.echo(f"{output}: {size} bytes")

    run(action)
