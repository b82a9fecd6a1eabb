"""The reading verbs: info, cat, play, plot, view, over the contract only.

Each works on any archive (a nanorec archive of any format, NanoVer's own recordings) and on
any native file a registered converter takes. A format with its own command of the same name
gets the command line instead (see `nanorec.cli`).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Annotated

import typer

from nanorec import registry
from nanorec.archive.urls import is_url
from nanorec.cli.app import app, run
from nanorec.cli.inputs import check_output, input_path, message_dict
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

if TYPE_CHECKING:  # the verbs' machinery: imported when one runs, not for `nanorec --help`
    import socket

    from nanorec.cli.hooks import VerbCall
    from nanorec.contract import Recording
    from nanorec.player import Player

#: The input argument of the verbs the core hands to a format: kept as typed (a ROS 2
#: storage file's `Files:` line shows it so).
Input = Annotated[str, typer.Argument(help="An archive or a native recording.", show_default=False)]


@verb_command(app, "info")
def info(file: Input, as_json: Json = False) -> None:
    """Summarise a recording: format, messages, times, kinds.

    Formats have their own richer text (CARLA's and rosbag's info), used automatically.

    Example: nanorec info recording.nanover.zip --json
    """
    from nanorec.cli.dispatch import run_verb

    raise typer.Exit(run(lambda: run_verb("info", file, _info, as_json=as_json)))


def _info(call: VerbCall[object]) -> int:
    """info on a recording whose format adds nothing: its summary."""
    from nanorec.outputs.tables import dumps

    summary = call.recording.summary()
    if call.as_json:
        typer.echo(dumps(summary))
        return 0
    for key, value in summary.items():
        if isinstance(value, dict):
            typer.echo(f"{key}:")
            for name, item in value.items():
                typer.echo(f"  {name}: {item}")
        else:
            typer.echo(f"{key}: {value}")
    return 0


@verb_command(app, "cat")
def cat(
    file: Input,
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
    from nanorec.cli.dispatch import run_verb
    from nanorec.cli.hooks import SelectionOptions

    chosen = SelectionOptions(start, end, duration, messages, kinds)
    raise typer.Exit(run(lambda: run_verb("cat", file, _cat, selection=chosen, form=fmt)))


def _cat(call: VerbCall[object]) -> int:
    """cat of any recording: its messages, or the rows of the kinds asked for."""
    from nanorec.outputs.tables import write_csv, write_ndjson

    fmt, selection, kinds = call.form, call.selection, call.kinds
    assert selection is not None
    check_choice("--format", fmt or "", ("ndjson", "csv"))
    recording = call.recording
    selection.chosen_from(recording.reader)
    if not kinds:
        if fmt == "csv":
            raise UsageError("CSV needs one --type (one table); NDJSON takes them all")
        write_ndjson(map(message_dict, recording.messages(selection)), sys.stdout)
        sys.stdout.flush()
        return 0
    if fmt == "csv" and len(kinds) > 1:
        raise UsageError("CSV holds one table: give one --type")
    for kind in kinds:
        rows = recording.rows(kind, selection)
        (write_csv if fmt == "csv" else write_ndjson)(rows, sys.stdout)
    sys.stdout.flush()
    return 0


@verb_command(app, "play")
def play(
    file: Input,
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
    from nanorec.cli.dispatch import run_verb
    from nanorec.cli.hooks import Pace, SelectionOptions

    chosen = SelectionOptions(start, end, duration, messages, kinds)
    pace = Pace(rate=rate, loop=loop, immediate=immediate, pause=pause)
    raise typer.Exit(run(lambda: run_verb("play", file, _play, selection=chosen, pace=pace)))


def _play(call: VerbCall[object]) -> int:
    """play of any recording: each message as one JSON line, paced."""
    from nanorec.outputs.tables import write_line

    pace, recording = call.pace, call.recording
    with terminal_player(
        recording,
        pace.pause,
        loop=pace.loop,
        immediate=pace.immediate,
        rate=pace.rate,
        selection=call.selection,
    ) as player:
        for message in player.paced(recording.message):
            write_line(message_dict(message), sys.stdout)
            if not pace.immediate:
                sys.stdout.flush()
    sys.stdout.flush()
    return 0


@contextlib.contextmanager
def terminal_player(
    recording: Recording,
    pause: bool,
    *,
    factory: Callable[..., Player] | None = None,
    **options: object,
) -> Iterator[Player]:
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

        make: Callable[..., Player] = factory or Player  # a format's takes options of its own
        pressed = keys if terminal is not None else None
        player = make(recording, paused=pause, keys=pressed, **options)
        if terminal is not None:
            typer.echo(
                "nanorec: space pauses/resumes, s steps one message while paused, q quits"
                + (" [PAUSED]" if pause else ""),
                err=True,
            )
        yield player


@verb_command(app, "plot")
def plot(
    file: Input,
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
    from nanorec.cli.dispatch import run_verb
    from nanorec.cli.hooks import SelectionOptions

    chosen = SelectionOptions(start, end, duration, messages, kinds)

    def action() -> int:
        check_output(output, input_path(file))
        return run_verb("plot", file, _plot, selection=chosen, output=output, force=force)

    raise typer.Exit(run(action))


def _plot(call: VerbCall[object]) -> int:
    """plot of any recording: its messages' timeline."""
    from nanorec.outputs.timeline import plot_timeline

    assert call.selection is not None and call.output is not None
    recording = call.recording
    call.selection.chosen_from(recording.reader)
    size = plot_timeline(recording, call.output, overwrite=call.force, selection=call.selection)
    typer.echo(f"{call.output}: {size} bytes")
    return 0


Port = Annotated[
    int,
    typer.Option("--port", "-p", help="Port on 127.0.0.1 (default: a free one).", min=0),
]
NoBrowser = Annotated[
    bool, typer.Option("--no-browser", help="Only print the page's address; open nothing.")
]


@verb_command(app, "view")
def view(file: Input, port: Port = 0, no_browser: NoBrowser = False) -> None:
    """Scrub a recording in the browser: timeline, kinds, message inspector, plots of
    numeric fields, and what the format draws (a local page on 127.0.0.1; Ctrl-C stops).

    Example: nanorec view recording.nanover.zip --port 8765
    """
    from nanorec.cli.dispatch import run_verb

    def action() -> int:
        sock = _listening(file, port)
        try:
            view = lambda call: _view(call, port, no_browser, sock)  # noqa: E731
            return run_verb("view", file, view, show_conversion=True)
        except KeyboardInterrupt:
            if sock is None:
                raise
            # its URL printed, the page is stopped as when it is served (not exit 130)
            typer.echo("nanorec: stopped", err=True)
            return 0
        finally:
            if sock is not None:
                sock.close()  # (a format's own view, or an error, left it unserved)

    raise typer.Exit(run(action))


def _listening(typed: str, port: int) -> socket.socket | None:
    """For a local archive, a socket listening for its page, its URL printed: the server's
    modules and the format's commands are then imported while the browser starts loading
    the page, and the archive is opened while it does (`_view`). None for another input (a
    native file is converted first, its bar shown, before the URL is printed)."""
    from nanorec.view.listen import listen, url_of

    source = input_path(typed)
    if (
        is_url(source)
        or not source.is_file()
        or not registry.is_archive(registry.read_head(source))
    ):
        return None
    sock = listen(port)
    typer.echo(f"viewing {typed} at {url_of(sock)} (Ctrl-C stops)")
    return sock


def _view(call: VerbCall[object], port: int, no_browser: bool, sock: socket.socket | None) -> int:
    """view of any recording: the page served until Ctrl-C; on `sock` (`_listening`), its
    URL printed already, with the archive opened while the browser loads the page (half of
    a first paint's server time on a 1 GB one)."""
    from nanorec.view.server import serve

    def ready(url: str) -> None:
        typer.echo(f"viewing {call.typed} at {url} (Ctrl-C stops)")

    if sock is not None:
        opening = lambda: call.recording  # noqa: E731
        serve(None, browser=not no_browser, ready=lambda url: None, opening=opening, sock=sock)
    else:
        serve(call.recording, port=port, browser=not no_browser, ready=ready)
    typer.echo("nanorec: stopped", err=True)
    return 0
