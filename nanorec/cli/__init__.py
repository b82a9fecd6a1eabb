"""The `nanorec` command: format-neutral verbs, and one sub-command group per format.

The verbs (`convert export info cat play plot view verify recover repack roundtrip`, in `verbs.py`
and `container.py`) work on any archive and any registered format through the contract. The
core parses each verb itself, every format's options flattened in, and calls the input's
format's hook (a bag's `info` prints what `rosbag info` prints): see `dispatch.py` and
`hooks.py`; `nanorec rosbag info` is the same command with the format pinned. What only one
format has lives under its group (`nanorec carla collisions`); such a command also answers
at the top level when no other format has one by that name (`nanorec collisions`), and a
format's command named like a verb that is not a hook yet (`nanorec carla roundtrip`) gets
the verb's command line on a file of its format.

Library errors are caught only at the command boundary by `run`: one line on stderr and
exit status 2. Library warnings (a damaged part of an input that still opens) become one
`nanorec: warning: ...` line each.
"""

from __future__ import annotations

import copy
import functools
import inspect
import signal
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

import typer

from nanorec.archive.atomic import remove_unfinished
from nanorec.cli._click import Command, Context, Formatter, click
from nanorec.cli.app import (
    EXIT_BAD_INPUT,
    EXIT_PROBLEM,
    VERBS,
    WholeHelpGroup,
    app,
    fail,
    first_sentence,
    one_line,
    run,
    said,
    say,
    warning_line,
)
from nanorec.signals import stop

#: Verbs taking many inputs: handed to a format's own command only when given one file.
_MANY_INPUTS = ("convert", "roundtrip")


class _RoutingGroup(WholeHelpGroup):
    """Lists the verbs first, routes a format's own command (see above), and ends a verb's
    help with what each format adds to it.

    A format's group joins when a command line names it or routes to it, not before: its
    commands are imported then (they import numpy, the format's decoders...). `--help` lists
    the groups from the titles the formats declare (`registry.command_titles`). A verb too
    is built (its options read from its signature) when used; `--help` lists it from its
    docstring, as typer would."""

    @functools.cached_property
    def _titles(self) -> dict[str, str]:
        from nanorec import registry

        return registry.command_titles()

    def get_command(self, ctx: Context, name: str) -> Command:
        known = self.commands.get(name)
        if name in VERBS and not hasattr(known, "nanorec_pinned"):  # built by typer: plain
            built = _verb_command(name)
            if built is not None:
                self.add_command(built, name)
        elif known is None and name not in VERBS:
            built = _format_group(name)
            if built is not None:
                self.add_command(built, name)
        command = super().get_command(ctx, name)
        if name in VERBS and command is not None and "format_epilog" not in vars(command):
            command.format_epilog = functools.partial(_formats_epilog, command, name)
        return command

    def list_commands(self, ctx: Context) -> list[str]:
        names = {*super().list_commands(ctx), *_verbs()}
        return [v for v in VERBS if v in names] + sorted({*names, *self._titles} - set(VERBS))

    def help_line(self, ctx: Context, name: str) -> str | None:
        if name not in self.commands and name in self._titles:
            return _group_help(self._titles[name])
        verb = _verbs().get(name) if name not in self.commands else None
        if verb is not None:
            text = verb.help or inspect.getdoc(verb.callback) or ""
            return str(verb.short_help or first_sentence(text))
        return super().help_line(ctx, name)

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        parsed: list[str] = super().parse_args(ctx, route(self, ctx, list(args)))
        return parsed


app.info.cls = _RoutingGroup


@functools.cache
def _register() -> None:
    """Add the verbs (once); the formats' groups join when used (`_RoutingGroup`)."""
    from nanorec.cli import container, convert, export, verbs  # noqa: F401 - commands join `app`


def lazy_app() -> typer.Typer:
    """`app` as `main` builds it: without its registered verbs, which typer would each build
    up front (~16 ms, once `_register` ran) though `_RoutingGroup` builds the one a command
    line uses, and lists the others from `_verbs`."""
    bare = copy.copy(app)
    bare.registered_commands = []
    return bare


def _verbs() -> dict[str, typer.models.CommandInfo]:
    """The verbs registered on `app`, by name: typer's `CommandInfo` of each (registered
    when first asked: `nanorec --version` needs none)."""
    _register()
    return {
        info.name or typer.main.get_command_name(info.callback.__name__): info
        for info in app.registered_commands
        if info.callback is not None
    }


def _verb_command(name: str, pinned: str | None = None) -> Command:
    """The click command of verb `name`, built now as `app` builds its commands, with the
    formats' options of the verb (only format `pinned`'s for its group) added (None: no
    such verb registered)."""
    from nanorec.cli._coercion import without_pydantic
    from nanorec.cli.dispatch import attach

    info = _verbs().get(name)
    if info is None:
        return None
    command = typer.main.get_command_from_info(
        info,
        pretty_exceptions_short=app.pretty_exceptions_short,
        rich_markup_mode=app.rich_markup_mode,
    )
    command.nanorec_pinned = pinned  # type: ignore[attr-defined]
    return without_pydantic(attach(command, name, pinned))


def _group_help(title: str) -> str:
    return f"{title} commands."


def _format_group(name: str) -> Command:
    """The click group of format `name`'s own commands (`nanorec NAME ...`, imported now), or
    None when no format of that name has commands."""
    from nanorec import registry

    converter = registry.named(name)
    commands = converter.commands() if converter is not None else None
    if converter is None or commands is None:
        return None
    # built as `app` builds the groups added to it, with the same settings
    holder = typer.Typer(
        add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None
    )
    holder.add_typer(commands, name=name, help=_group_help(converter.title), cls=WholeHelpGroup)
    group = typer.main.get_command(holder).commands[name]  # type: ignore[attr-defined]
    from nanorec.cli.dispatch import hook_help, hooked_verbs

    for verb in hooked_verbs(name):  # `nanorec rosbag info`: the verb with the format pinned
        alias = _verb_command(verb, pinned=name)
        alias.help = hook_help(name, verb) or alias.help
        group.add_command(alias, verb)
    return group


def _formats_epilog(command: Command, verb: str, ctx: Context, formatter: Formatter) -> None:
    """A verb's help ends with what each installed format adds to it (`surface.py`): worked
    out when the help is shown, since it imports every format's commands."""
    if command.epilog is None:
        from nanorec.cli.surface import COMMON, format_options_help

        command.epilog = format_options_help(verb) if verb in COMMON else ""
    type(command).format_epilog(command, ctx, formatter)


def route(group: Command, ctx: Context, args: list[str]) -> list[str]:
    """`args` rewritten to a format's own command where one applies (see the docstring)."""
    if not args or args[0].startswith("-"):
        return args
    verb, rest = args[0], args[1:]
    if verb in VERBS:
        inputs = _inputs_of(rest, _value_options([group.get_command(ctx, verb)]))
        if verb in _MANY_INPUTS and len(inputs) != 1:
            return args  # a batch may mix formats
        source = inputs[0] if inputs else None
        name = _format_of(source) if source is not None and source.exists() else None
        if name and _own_command(name, verb):
            return [name, verb, *rest]  # a format's command not yet a hook of the core's verb
        return args
    if group.get_command(ctx, verb) is None:  # an alias: the one format having that command
        formats = _format_groups(group, ctx)
        owners = [name for name, sub in formats.items() if verb in sub.commands]
        if len(owners) == 1:
            return [owners[0], *args]
    return args


def _own_command(name: str, verb: str) -> bool:
    """Whether format `name` has a command `verb` of its own that is not its hook of the
    core's verb: read from its typer app, its group not built (that builds every verb it
    hooks: ~50 ms of each command on a file)."""
    from nanorec import registry
    from nanorec.cli.dispatch import hooked_verbs

    converter = registry.named(name)
    commands = converter.commands() if converter is not None else None
    if commands is None or verb in hooked_verbs(name):
        return False
    names = {
        info.name or typer.main.get_command_name(info.callback.__name__)
        for info in commands.registered_commands
        if info.callback is not None
    }
    return verb in names | {info.name for info in commands.registered_groups}


def _format_groups(group: Command, ctx: Context) -> dict[str, Command]:
    from nanorec import registry

    found = {}
    for name in registry.converters():
        command = group.get_command(ctx, name)
        if isinstance(getattr(command, "commands", None), dict):
            found[name] = command
    return found


def _value_options(commands: Sequence[Command]) -> set[str]:
    names: set[str] = set()
    for command in commands:
        for param in command.params if command is not None else ():
            is_option = getattr(param, "param_type_name", "") == "option"
            if is_option and not getattr(param, "is_flag", False) and not param.count:
                names.update(param.opts)
    return names


def _inputs_of(args: Sequence[str], value_options: set[str]) -> list[Path]:
    """The positional arguments naming existing files or folders (skipping option values)."""
    found = []
    skip = False
    for token in args:
        if skip:
            skip = False
            continue
        if token.startswith("-"):
            skip = token in value_options
            continue
        path = Path(token)
        if path.exists():
            found.append(path)
    return found


def _format_of(path: Path) -> str | None:
    from nanorec.cli.dispatch import format_of

    return format_of(path)


class _Never(Exception):
    """Stands for an exception class the installed click does not have."""


# click >= 8.2 raises this after printing the help of a bare group; older clicks exit 0.
_NO_ARGS_IS_HELP: type[Exception] = getattr(click.exceptions, "NoArgsIsHelpError", _Never)


def main(argv: Sequence[str] | None = None) -> object:
    """Console-script entry point: usage mistakes too get one line and exit status 2.

    SIGTERM unwinds like Ctrl-C; whenever either lands, even before the block that would
    clean up after it, the partial files still being written are removed on the way out.
    Ctrl-C becomes KeyboardInterrupt again here (`nanorec.signals`): the console script
    (`_nanorec_entry`) made it a quiet exit while the command loaded."""
    try:
        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        warnings.showwarning = warning_line  # also for commands that do not go through `run`
        from nanorec.cli._coercion import without_pydantic

        command = without_pydantic(typer.main.get_command(lazy_app()))  # verbs join when used
        args = list(sys.argv[1:] if argv is None else argv)
        result = command.main(args=args, prog_name="nanorec", standalone_mode=False)
    except _NO_ARGS_IS_HELP as shown:
        typer.echo(getattr(shown, "format_message", str)())  # click >= 8.2: ours to print
        sys.exit(0)
    except click.ClickException as error:
        typer.echo(f"nanorec: {one_line(error.format_message())} (see --help)", err=True)
        sys.exit(error.exit_code)
    except typer.Abort:
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
    finally:
        remove_unfinished()
    sys.exit(result if isinstance(result, int) else 0)


__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_PROBLEM",
    "VERBS",
    "WholeHelpGroup",
    "app",
    "fail",
    "first_sentence",
    "main",
    "one_line",
    "run",
    "said",
    "say",
]
