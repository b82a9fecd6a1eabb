"""The `nanorec` typer app and what every command module shares: exit statuses, the verbs'
names, one-line errors and warnings (`run`, `fail`, `say`). The package (`__init__`) routes
command lines and registers the verbs' modules, which add their commands to `app` here (why
a module of its own: they import it, and the package imports them)."""

from __future__ import annotations

import functools
import os
import sys
import warnings
from collections.abc import Callable
from typing import NoReturn, TextIO, TypeVar

import typer
from typer.core import TyperGroup

from nanorec._version import __version__
from nanorec.cli._click import Command, Context, Formatter, Parameter
from nanorec.errors import NanorecError

T = TypeVar("T")
EXIT_PROBLEM = 1
EXIT_BAD_INPUT = 2
#: The format-neutral verbs, in the order `--help` lists them.
VERBS = (
    "convert",
    "export",
    "info",
    "cat",
    "play",
    "plot",
    "view",
    "verify",
    "recover",
    "repack",
    "roundtrip",
)


class WholeHelpGroup(TyperGroup):
    """A group listing each command with its whole first sentence (click cuts it at the
    terminal width with "..."), wrapped instead. Every group of the CLI uses it."""

    def get_command(self, ctx: Context, name: str) -> Command:
        command = super().get_command(ctx, name)
        for param in getattr(command, "params", ()):
            _plain_metavar(param)
        if command is not None and not hasattr(command, "commands"):
            command.collect_usage_pieces = functools.partial(_plain_usage, command)  # type: ignore[method-assign]
        return command

    def format_commands(self, ctx: Context, formatter: Formatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            line = self.help_line(ctx, name)
            if line is not None:
                rows.append((name, line))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def help_line(self, ctx: Context, name: str) -> str | None:
        """What the list of commands says of `name` (None: not listed)."""
        command = self.get_command(ctx, name)
        if command is None or command.hidden:
            return None
        line: str = command.short_help or first_sentence(command.help or "")
        return line


def _plain_metavar(param: Parameter) -> None:
    """Name an argument as click's help traditionally does (FILE, SOURCES...), not as typer
    spells its annotation (`{file}`, `<list[Path]>`)."""
    if param.param_type_name == "argument" and param.metavar is None:
        param.metavar = (param.name or "value").upper() + ("..." if param.nargs == -1 else "")
        param.display_type_rich = lambda ctx: None  # typer's "<list[Path]>" after the name


def _plain_usage(command: Command, ctx: Context) -> list[str]:
    """The usage line's pieces without typer's braces around required arguments."""
    pieces = type(command).collect_usage_pieces(command, ctx)
    # (typer >= 0.20 adds "..." to a many-valued argument itself, earlier ones do not)
    return [p.replace("{", "").replace("}", "").replace("......", "...") for p in pieces]


def first_sentence(text: str) -> str:
    """The first sentence of a docstring's first paragraph, on one line."""
    paragraph = " ".join(text.strip().split("\n\n", 1)[0].split())
    head, dot, _ = paragraph.partition(". ")
    return head + "." if dot else paragraph


app = typer.Typer(
    name="nanorec",
    cls=WholeHelpGroup,  # the routing group, once the package has it (`__init__`)
    help="Convert, seek, verify and replay recorded simulation and robotics logs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"nanorec {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Convert, seek, verify and replay recorded simulation and robotics logs.

    Every verb takes a native recording (CARLA .log/.rec, ROS .bag, Cartographer .pbstream:
    the formats installed are listed below as groups) or a nanorec/NanoVer archive.
    """


#: Whether the running command has printed a line on stderr besides its error (a warning, a
#: note, the player's status line): an error after one exits 1, a problem among the others
#: said; exit status 2 is always the one line on stderr (#34 item 10).
_SAID: list[bool] = [False]


def one_line(message: str) -> str:
    """`message` in one line: a library's multi-line text (PyYAML's problem, context and
    mark; an OS error's) joined by spaces."""
    return " ".join(message.split())


def say(line: str) -> None:
    """Print one line to stderr that is not the command's error (a warning, a note)."""
    _SAID[0] = True
    typer.echo(one_line(line), err=True)


def said() -> None:
    """Record that stderr holds something besides the error to come (a status line)."""
    _SAID[0] = True


def fail(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    """Print one line to stderr and exit with `code`."""
    typer.echo(f"nanorec: {one_line(message)}", err=True)
    raise typer.Exit(code)


def warning_line(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """A warning as the command line shows it: one line, no Python source location."""
    say(f"nanorec: warning: {message}")


def run(action: Callable[[], T]) -> T:
    """Run `action`, turning library and OS errors into one line and exit status 2 (1 when
    the command had already printed warnings or a status line: see `_SAID`), library
    warnings into one line each, and a closed stdout (`nanorec cat ... | head`) into a quiet
    exit."""
    _SAID[0] = False
    try:
        with warnings.catch_warnings():
            warnings.showwarning = warning_line
            return action()
    except NanorecError as error:
        # The library names its keyword; on the command line the same switch is --force.
        fail(str(error).replace("overwrite=True", "--force"), _error_code())
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        raise typer.Exit(0) from None
    except OSError as error:
        where = f": {error.filename}" if error.filename else ""
        fail(f"{error.strerror or error}{where}", _error_code())


def _error_code() -> int:
    return EXIT_PROBLEM if _SAID[0] else EXIT_BAD_INPUT
