"""One surface for every format: the options each verb has whatever the file, declared here
once and given to the core's command of each verb (`COMMON`); a format adds its own options
and answer through `nanorec.cli.hooks`, never by renaming or dropping one of these.

The core's verb is written as

    @verb_command(app, "cat")
    def cat(file: ..., kinds: Kinds = None, fmt: TableFormat = "ndjson", start: Start = None,
            ...) -> None:

and must take every common parameter of the verb by its name: the decorator refuses the
function otherwise (at import), and replaces each common parameter's declaration with the
one here (same spellings, aliases and short forms). `tests/converters/contract.py` checks
every registered format's commands against `COMMON`.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Iterable
from typing import Annotated, TypeVar, get_args

import typer
from typer.models import OptionInfo

from nanorec.cli import options
from nanorec.cli._click import Command
from nanorec.errors import UsageError

F = TypeVar("F", bound=Callable[..., object])

#: Parameter name (or "verb.name" where one verb words it its own way) -> the core's
#: declaration (type and typer option).
DECLARED: dict[str, object] = {
    "output": options.Output,
    "force": options.Force,
    "as_json": options.Json,
    "start": options.Start,
    "end": options.End,
    "duration": options.Duration,
    "messages": options.Messages,
    "kinds": options.Kinds,
    "fmt": options.TableFormat,
    "export.fmt": options.ExportFormat,
    "storage": options.Storage,
    "rate": options.Rate,
    "loop": options.Loop,
    "immediate": options.Immediate,
    "pause": options.Pause,
}
_SELECTION = ("kinds", "start", "end", "duration", "messages")
#: What every command named like a verb takes, whatever the format.
COMMON: dict[str, tuple[str, ...]] = {
    "info": ("as_json",),
    "cat": ("fmt", *_SELECTION),
    "play": (*_SELECTION, "rate", "loop", "immediate", "pause"),
    "export": ("output", "force", "fmt", "storage", *_SELECTION),
    "plot": ("output", "force", *_SELECTION),
    "view": (),
}


def verb_command(app: typer.Typer, verb: str, **helps: str) -> Callable[[F], F]:
    """Register `func` as `app`'s command `verb` with the verb's common options (see the
    module docstring); `helps` rewords the help of some of them for this format."""
    common = COMMON[verb]

    def register(func: F) -> F:
        signature = inspect.signature(func)
        missing = [name for name in common if name not in signature.parameters]
        if missing:
            raise TypeError(
                f"{func.__module__}.{func.__qualname__} is a `{verb}` command: it must take "
                f"the verb's common options {', '.join(missing)}"
            )
        for name in common:
            declared = DECLARED.get(f"{verb}.{name}", DECLARED[name])
            if name in helps:
                kind, option = get_args(declared)
                option = _reworded(option, helps[name])
                declared = Annotated[kind, option]
            func.__annotations__[name] = declared
        app.command(verb)(func)
        return func

    return register


def _reworded(option: OptionInfo, help_text: str) -> OptionInfo:
    """A copy of a typer option declaration with another help text."""
    reworded = copy.copy(option)
    reworded.help = help_text
    return reworded


def check_choice(option: str, value: str, choices: Iterable[str]) -> str:
    """`value` if it is one of `choices`, else a `UsageError` listing them."""
    known = tuple(choices)
    if value not in known:
        raise UsageError(f"{option} takes {', '.join(known)}; not {value!r}")
    return value


def option_names(command: Command) -> set[str]:
    """Every spelling a click command accepts (`--start`, `-s`, ...)."""
    return {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)}


def common_spellings(verb: str) -> set[str]:
    """The spellings of the verb's common options, as the core declares them."""
    found: set[str] = set()
    for name in COMMON[verb]:
        option = get_args(DECLARED[name])[1]
        decls = (option.default, *option.param_decls)
        found.update(d for d in decls if isinstance(d, str) and d.startswith("-"))
    return found


def format_options_help(verb: str) -> str:
    """For the verb's plain `--help`: what each installed format adds to it (its own
    options, and for export its own output forms), without importing a format's commands."""
    from nanorec import registry
    from nanorec.cli.dispatch import declared_options, options_of
    from nanorec.cli.hooks import fields_of
    from nanorec.contract import export_forms

    declared = options_of(verb)
    lines = []
    for name, converter in sorted(registry.converters().items()):
        parts = []
        if name in declared:
            parts += ["/".join(field.option.flags) for field in fields_of(declared[name])]
        # a format declaring no verb options may still have its own command of the verb
        group = converter.commands() if name not in declared_options() else None
        command = _command_of(group, verb) if group is not None else None
        if command is not None:  # a format's command not yet a hook of the core's verb
            common = common_spellings(verb) | {"--help", "-h"}
            for param in command.params:
                spellings = [*param.opts, *param.secondary_opts]
                if param.param_type_name == "option" and not common & set(spellings):
                    parts.append("/".join(spellings))
        if verb == "export" and export_forms(converter):
            parts.append("--format " + "|".join(export_forms(converter)))
        if parts:
            lines.append(f"{name}: {', '.join(parts)}")
    if not lines:
        return ""
    return "Format options (with a file of that format):\n\n" + "\n\n".join(lines)


def _command_of(group: typer.Typer, verb: str) -> Command:
    if not group.registered_commands and not group.registered_groups:
        return None  # only hooks of the core's verbs
    command = typer.main.get_command(group)
    return getattr(command, "commands", {}).get(verb)
