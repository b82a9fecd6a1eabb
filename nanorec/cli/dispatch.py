"""One verb, parsed by the core for every format (issue 35 item 1): each installed format's
options flattened into the verb's command line (as mcap's CLI gives every command its
common arguments, and `ros2 bag`'s storage plug-ins extend `--storage`), then one call to
the input's format (`nanorec.cli.hooks`).

`attach` adds the formats' options to a verb's click command; `run_verb` checks the input,
finds its format, refuses an option of another format in one line ("--freq is an option of
ROS1 bag files; x.log is a CARLA recorder file"), resolves the `Selection`, and calls the
format's hook or the verb's generic body. A format's group (`nanorec rosbag info`) gets the
same command with the format pinned.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import stat
import sys
import types
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated

import typer

from nanorec.cli._click import Command, Parameter, click
from nanorec.cli.hooks import (
    Field,
    Hook,
    Opener,
    Pace,
    SelectionOptions,
    VerbCall,
    call_hook,
    fields_of,
    hooks_of,
)
from nanorec.errors import NanorecError, UsageError

#: The entry-point group where a format declares its verbs' options (`{verb: dataclass}`).
VERBS_GROUP = "nanorec.verbs"
#: Where the callback leaves what the command line gave (`ctx.meta`).
_GIVEN = "nanorec.verb"
#: The click names of the formats' options (never a core parameter's).
_PREFIX = "format__"


@dataclasses.dataclass
class Flattened:
    """One format option of a verb, as the command line takes it: the fields of the formats
    sharing its spelling (same type), by format name."""

    field: Field
    owners: dict[str, str] = dataclasses.field(default_factory=dict)  # format -> field
    helps: dict[str, list[str]] = dataclasses.field(default_factory=dict)  # help -> titles

    @property
    def name(self) -> str:
        return _PREFIX + self.field.option.flags[0].lstrip("-").replace("-", "_")

    @property
    def flag(self) -> str:
        return self.field.option.flags[0]

    def parameter(self) -> inspect.Parameter:
        """The option as a parameter of a function typer reads (typer builds the click
        option: the installed typer's own click, whichever it is)."""
        field = self.field
        text = "; ".join(f"{said} [{', '.join(titles)}]" for said, titles in self.helps.items())
        kind: type | types.GenericAlias = (
            list.__class_getitem__(field.kind) if field.many else field.kind
        )
        declared = typer.Option(*field.option.flags, help=text, metavar=field.option.metavar)
        default = False if field.kind is bool else None
        typed = kind if field.kind is bool else kind | None
        annotation = Annotated.__class_getitem__((typed, declared))  # type: ignore[attr-defined]
        return inspect.Parameter(
            self.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
        )


def _click_options(entries: list[Flattened]) -> list[Parameter]:
    """The click options of `entries`, built by typer from a function taking them."""

    def holder(**values: object) -> None:
        """Never called: its signature is read."""

    parameters = [entry.parameter() for entry in entries]
    holder.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    holder.__annotations__ = {p.name: p.annotation for p in parameters}
    command = typer.main.get_command_from_info(
        typer.models.CommandInfo(callback=holder),
        pretty_exceptions_short=False,
        rich_markup_mode=None,
    )
    return list(command.params)


@functools.cache
def declared_options() -> dict[str, Mapping[str, type]]:
    """Each installed format's options dataclass of each verb, by format name: declared
    under `VERBS_GROUP` beside the converter's entry point, in a module importing nothing
    heavy (building a verb's command line imports no format)."""
    from nanorec.plugins import entry_points

    found: dict[str, Mapping[str, type]] = {}
    for point in entry_points(VERBS_GROUP):
        try:
            declared = point.load()
        except Exception as error:  # a broken plug-in must not take the others down
            print(f"nanorec: warning: {point.value} not loaded: {error}", file=sys.stderr)
            continue
        if isinstance(declared, Mapping):
            found.setdefault(point.name, declared)
    return found


def options_of(verb: str, only: str | None = None) -> dict[str, type]:
    """The options dataclass of each installed format (or of `only`) adding to `verb`."""
    return {
        name: declared[verb]
        for name, declared in sorted(declared_options().items())
        if (only is None or name == only) and verb in declared
    }


def title(name: str) -> str:
    """A format's title (`ROS1 bag`), from its declaration: no format imported."""
    return _titles().get(name, name)


@functools.cache
def _titles() -> dict[str, str]:
    from nanorec import registry

    return registry.command_titles()


def flattened(
    verb: str, only: str | None = None, taken: frozenset[str] = frozenset()
) -> list[Flattened]:
    """The formats' options of `verb` merged by spelling; a `TypeError` when two formats
    spell one option two ways or take a spelling of the core's (`taken`)."""
    merged: dict[str, Flattened] = {}
    spelled: dict[str, str] = {}
    for name, options in options_of(verb, only).items():
        for field in fields_of(options):
            key = field.option.flags[0]
            entry = merged.setdefault(key, Flattened(field))
            if (entry.field.kind, entry.field.many) != (field.kind, field.many):
                raise TypeError(f"{verb} {key}: {name} takes another type than the others")
            for flag in field.option.flags:
                if flag in taken or spelled.setdefault(flag, key) != key:
                    raise TypeError(f"{verb} {flag}: {name} spells another option so")
            entry.owners[name] = field.name
            entry.helps.setdefault(field.option.help, []).append(title(name))
    return list(merged.values())


def attach(command: Command, verb: str, pinned: str | None = None) -> Command:
    """`command` (the core's `verb`) with the formats' options added (only `pinned`'s for a
    format's group): its callback records what was given, then runs the verb."""
    taken = frozenset(f for p in command.params for f in (*p.opts, *p.secondary_opts))
    extras = {entry.name: entry for entry in flattened(verb, pinned, taken)}
    command.params.extend(_click_options(list(extras.values())))
    original = command.callback

    @functools.wraps(original)
    def callback(**kwargs: object) -> object:
        ctx = click.globals.get_current_context()
        given: dict[str, object] = {}
        for name in extras:
            value = kwargs.pop(name, None)
            source = ctx.get_parameter_source(name)
            if source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT"):
                given[name] = value
        ctx.meta[_GIVEN] = (given, extras, pinned)
        return original(**kwargs)

    command.callback = callback
    return command


def format_of(path: Path) -> str | None:
    """The name of the format of `path`'s recording (its converter), None for a plain
    archive or what no converter takes (the verb then says what is wrong).

    Asked twice a command (routing it, then running the verb), and an archive's answer
    costs opening it (~45 ms CPU for a 1 GB one, of `nanorec view`'s first paint): a
    file's is kept as long as the file is as it was (its size, time and inode)."""
    try:
        known = path.stat()
    except OSError:
        return None
    if not stat.S_ISREG(known.st_mode):  # a folder (a ROS 2 bag's): sniffed, not opened
        return _format_of.__wrapped__(str(path), 0, 0, 0)
    return _format_of(str(path.resolve()), known.st_size, known.st_mtime_ns, known.st_ino)


@functools.lru_cache(maxsize=8)
def _format_of(path: str, size: int, mtime_ns: int, inode: int) -> str | None:
    """`format_of` the file at `path` as its stat says it is."""
    from nanorec import registry
    from nanorec.archive.reader import ArchiveReader

    try:
        head = registry.read_head(Path(path))
        if registry.is_archive(head):
            # its description says: the index is not read (~0.5 GB at 10 M messages)
            with ArchiveReader(path, paged_index=True) as reader:
                converter = registry.for_archive(reader)
        else:
            converter = registry.for_native(Path(path), head)
    except (NanorecError, OSError, TypeError):
        return None
    return None if converter is None else converter.name


def _what(path: Path, name: str | None) -> str:
    from nanorec import registry

    if name is None:
        if registry.is_archive(registry.read_head(path)):
            return f"{path} is a plain archive"
        registry.for_native(path)  # says what the file is not
        return f"{path} is not a recording nanorec knows"
    return f"{path} is a {title(name)} file"


def _extra(
    verb: str,
    name: str | None,
    path: Path,
    given: Mapping[str, object],
    extras: Mapping[str, Flattened],
) -> object:
    """The input's format's options dataclass of `verb` from what was given (None: the
    format has none); a `UsageError` for an option of another format."""
    for key in given:
        entry = extras[key]
        if name not in entry.owners:
            owners = " and ".join(f"{title(owner)} files" for owner in entry.owners)
            raise UsageError(f"{entry.flag} is an option of {owners}; {_what(path, name)}")
    options = options_of(verb, name).get(name) if name is not None else None
    if options is None or name is None:
        return None
    values = {
        extras[key].owners[name]: _listed(value) if extras[key].field.many else value
        for key, value in given.items()
    }
    return options(**values)


def _listed(value: object) -> object:
    """A repeatable option's values (click gives a tuple) as the dataclass's list."""
    return list(value) if isinstance(value, (tuple, list)) else value


def given_extra(verb: str, path: Path, name: str | None) -> object:
    """The options dataclass of format `name` for `verb` from what the command line gave
    (None: it has none; `UsageError` for another format's option)."""
    given, extras, _ = click.globals.get_current_context().meta.get(_GIVEN, ({}, {}, None))
    return _extra(verb, name, path, given, extras)


def given_by_field() -> dict[str, object]:
    """Every format option the command line gave, by its field name (many inputs, of any
    format: each converter takes its own)."""
    given, extras, _ = click.globals.get_current_context().meta.get(_GIVEN, ({}, {}, None))
    return {
        field: _listed(value) if extras[key].field.many else value
        for key, value in given.items()
        for field in set(extras[key].owners.values())
    }


def pinned_format() -> str | None:
    """The format a format's group pins the running verb to (`nanorec carla convert`)."""
    return click.globals.get_current_context().meta.get(_GIVEN, ({}, {}, None))[2]  # type: ignore[no-any-return]


def _respelled(
    given: Mapping[str, object],
    extras: Mapping[str, Flattened],
    selection: SelectionOptions,
    pace: Pace,
) -> tuple[SelectionOptions, Pace]:
    """The common options with a format's respellings of them given (`option(same_as=)`):
    a list adds to the common one, another value stands in for it when it is not given."""
    for key, value in given.items():
        same = extras[key].field.option.same_as
        if same == "kinds":
            more = [str(kind) for kind in value] if isinstance(value, (list, tuple)) else []
            selection = dataclasses.replace(selection, kinds=[*(selection.kinds or ()), *more])
        elif same is not None and hasattr(selection, same) and getattr(selection, same) is None:
            selection = _standing_in(selection, same, value)
        elif same is not None and hasattr(pace, same) and value and not getattr(pace, same):
            pace = _pace_with(pace, same, value)
    return selection, pace


def _standing_in(selection: SelectionOptions, same: str, value: object) -> SelectionOptions:
    """`selection` with a format's `value` for its option `same` (not given itself)."""
    if same == "messages":
        return dataclasses.replace(selection, messages=None if value is None else str(value))
    seconds = _seconds(value)
    if same == "start":
        return dataclasses.replace(selection, start=seconds)
    if same == "end":
        return dataclasses.replace(selection, end=seconds)
    return dataclasses.replace(selection, duration=seconds)


def _seconds(value: object) -> float | None:
    """A number the command line gave (a float option: click converted it) as seconds."""
    return float(value) if isinstance(value, (int, float)) else None


def _pace_with(pace: Pace, same: str, value: object) -> Pace:
    """`pace` with a format's `value` for play's option `same` (not given itself)."""
    if same == "rate":
        rate = _seconds(value)
        return pace if rate is None else dataclasses.replace(pace, rate=rate)
    if same == "loop":
        return dataclasses.replace(pace, loop=bool(value))
    if same == "immediate":
        return dataclasses.replace(pace, immediate=bool(value))
    return dataclasses.replace(pace, pause=bool(value))


def hook_of(name: str | None, verb: str) -> Hook | None:
    """Format `name`'s hook of `verb` (importing its commands), or None."""
    from nanorec import registry

    converter = registry.named(name) if name else None
    app = converter.commands() if converter is not None else None
    found = hooks_of(app).get(verb) if app is not None else None
    return None if found is None else found[0]


_STILL = Pace()


def run_verb(
    verb: str,
    typed: str,
    generic: Callable[[VerbCall[object]], int | None],
    *,
    selection: SelectionOptions | None = None,
    output: Path | None = None,
    force: bool = False,
    form: str | None = None,
    as_json: bool = False,
    storage: str | None = None,
    pace: Pace = _STILL,
    show_conversion: bool = False,
) -> int:
    """Run `verb` on the input `typed`: its format's hook, else `generic` (see the module
    docstring); returns the exit status."""
    from nanorec.archive.urls import is_url
    from nanorec.cli.inputs import check_input, input_path, staged_output

    given, extras, pinned = click.globals.get_current_context().meta.get(_GIVEN, ({}, {}, None))
    source = input_path(typed)
    check_input(source)
    opener = Opener(source, show_conversion)
    try:
        if pinned:  # a format's group: its answer, whatever the file
            name: str | None = pinned
        elif is_url(source):  # opened once: an archive's format is in its description
            name = opener.archive_format()
        else:
            name = format_of(source)
        extra = _extra(verb, name, source, given, extras)
        if selection is not None:
            selection, pace = _respelled(given, extras, selection, pace)
        chosen = selection.selection() if selection is not None else None
        kinds = tuple(selection.kinds or ()) if selection is not None else ()
        call = VerbCall(
            source, typed, chosen, output, force, form, as_json, extra, storage, pace, opener, kinds
        )
        hook = hook_of(name, verb)
        with staged_output(output, force) as written:  # by URL: written here, then uploaded
            call = dataclasses.replace(call, output=written)
            result = call_hook(hook, call) if hook is not None else None
            if result is None:
                result = generic(call)
    finally:
        opener.close()
    return result or 0


def hooked_verbs(name: str) -> list[str]:
    """The verbs format `name` has hooks or options for (its commands imported)."""
    from nanorec import registry

    converter = registry.named(name)
    app = converter.commands() if converter is not None else None
    hooked = list(hooks_of(app)) if app is not None else []
    return hooked + [v for v in declared_options().get(name, {}) if v not in hooked]


def hook_help(name: str, verb: str) -> str | None:
    """What format `name`'s hook of `verb` says of itself (its group's command help)."""
    hook = hook_of(name, verb)
    return None if hook is None else inspect.getdoc(hook)
