"""The `nanorec` command: a thin typer shell over the library.

Each command lives in a module beside this one (or in its converter's `cli`
module) and registers itself on `app`. Library errors are caught only at the
command boundary by `run`: one line on stderr and a non-zero exit.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import NoReturn, TypeVar

import typer

from nanorec.errors import NanorecError

app = typer.Typer(
    name="nanorec",
    help="Convert, seek, verify and replay recorded simulation and robotics logs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

T = TypeVar("T")


def _version(value: bool) -> None:
    if value:
        from nanorec._version import __version__

        typer.echo(f"nanorec {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Convert, seek, verify and replay recorded simulation and robotics logs."""


EXIT_BAD_INPUT = 2


def fail(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    """Print one line to stderr and exit with `code`."""
    typer.echo(f"nanorec: {message}", err=True)
    raise typer.Exit(code)


def run(action: Callable[[], T]) -> T:
    """Run `action`, turning library and OS errors into one line and exit status 2."""
    try:
        return action()
    except NanorecError as error:
        fail(str(error))
    except OSError as error:
        where = f": {error.filename}" if error.filename else ""
        fail(f"{error.strerror or error}{where}")


def _register() -> None:
    # Imported for their side effect of adding commands to `app`.
    import importlib

    importlib.import_module("nanorec.converters.carla.cli")
    from nanorec.cli import container  # noqa: F401


def main() -> None:
    """Console-script entry point: usage mistakes too get one line and exit status 2."""
    from typer._click import exceptions as click_errors

    _register()
    command = typer.main.get_command(app)
    try:
        result = command.main(args=sys.argv[1:], prog_name="nanorec", standalone_mode=False)
    except click_errors.NoArgsIsHelpError:
        sys.exit(0)  # the help was printed
    except click_errors.ClickException as error:
        typer.echo(f"nanorec: {error.format_message()} (see --help)", err=True)
        sys.exit(error.exit_code)
    except typer.Abort:
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
    sys.exit(result if isinstance(result, int) else 0)
