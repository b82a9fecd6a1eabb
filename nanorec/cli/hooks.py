"""What a format adds to a verb the core parses: its options, as a frozen dataclass, and a
hook the core calls with one `VerbCall` (issue 35 item 1).

A format declares, in a light module (no numpy, no decoder: the core reads it to build
the verb's command line),

    @dataclass(frozen=True)
    class Ros1InfoOptions:
        freq: Annotated[bool, option("--freq", help="Topic frequencies.")] = False

declares `VERB_OPTIONS = {"info": Ros1InfoOptions}` there, under the entry-point group
`nanorec.verbs` (`dispatch.VERBS_GROUP`), then in its commands module

    @verb_hook(app, "info", options=Ros1InfoOptions)
    def info(call: VerbCall[Ros1InfoOptions]) -> int | None: ...

The core opens the input (at most once, when `call.recording` is first read), resolves the
`Selection`, checks that every format option given is the input's format's, and calls the
hook; a hook returning None (or no hook) leaves the verb to the generic body. Options are
generated from the dataclass as rosbags generates argparse from `Annotated`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import types
import typing
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar, cast

if TYPE_CHECKING:  # numpy: imported when a verb runs, not to build its command line
    from typing_extensions import Never

    from nanorec.contract import Recording
    from nanorec.selection import Selection

#: A verb's options dataclass (covariant: a `VerbCall[Ros1InfoOptions]` is a
#: `VerbCall[object]`, what a generic body takes).
OptionsT = TypeVar("OptionsT", covariant=True)
#: A format's hook of a verb, whatever its options: it takes a `VerbCall` of *its* options
#: (`VerbCall[Never]` is every one of them); `call_hook` calls it.
Hook = Callable[["VerbCall[Never]"], "int | None"]


@dataclasses.dataclass(frozen=True)
class Option:
    """How an options dataclass field is spelled on the command line."""

    flags: tuple[str, ...]
    help: str
    metavar: str | None = None
    same_as: str | None = None


#: What a format's spelling of a common option may stand for (`option(same_as=...)`).
SAME_AS = ("start", "end", "duration", "messages", "kinds", "rate", "loop", "immediate", "pause")


def option(
    *flags: str, help: str, metavar: str | None = None, same_as: str | None = None
) -> Option:
    """The command-line spelling of a format option (`Annotated[bool, option("--freq",
    help=...)]`); the first flag is its name, the field's default its default. `same_as`
    names the common option it respells (ros2 bag play's `--start-offset` is `--start`):
    given, it counts as that one when the common one is not given (`--topics` adds to
    `--topic`)."""
    if not flags or not all(flag.startswith("-") for flag in flags):
        raise TypeError(f"option flags start with '-': {flags!r}")
    if same_as is not None and same_as not in SAME_AS:
        raise TypeError(f"{flags[0]}: same_as takes one of {', '.join(SAME_AS)}")
    return Option(tuple(flags), help, metavar, same_as)


@dataclasses.dataclass(frozen=True)
class Field:
    """One field of an options dataclass as the command line takes it."""

    name: str
    option: Option
    kind: type  # bool, int, float, str or Path
    many: bool  # repeatable: a list


def fields_of(options: type) -> Iterator[Field]:
    """The command-line fields of an options dataclass (a `TypeError` for one that is not
    spelled with `option(...)` or whose type the command line cannot give)."""
    hints = typing.get_type_hints(options, include_extras=True)
    for field in dataclasses.fields(options):
        hint = hints[field.name]
        spelled = [m for m in getattr(hint, "__metadata__", ()) if isinstance(m, Option)]
        if not spelled:
            raise TypeError(f"{options.__qualname__}.{field.name} has no option(...)")
        kind, many = _kind(typing.get_args(hint)[0], f"{options.__qualname__}.{field.name}")
        yield Field(field.name, spelled[0], kind, many)


def _kind(hint: object, where: str) -> tuple[type, bool]:
    """(element type, repeatable) of `T`, `T | None`, `list[T] | None`."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        if len(args) != 1:
            raise TypeError(f"{where}: one type or None, not {hint}")
        hint = args[0]
    if typing.get_origin(hint) is list:
        return _kind(typing.get_args(hint)[0], where)[0], True
    if hint not in (bool, int, float, str, Path):
        raise TypeError(f"{where}: the command line gives bool, int, float, str or Path")
    return hint, False


@dataclasses.dataclass(frozen=True)
class Pace:
    """play's common options."""

    rate: float = 1.0
    loop: bool = False
    immediate: bool = False
    pause: bool = False


@dataclasses.dataclass(frozen=True)
class SelectionOptions:
    """The selection's common options as the command line gave them (`Selection.make`
    checks and combines them)."""

    start: float | None = None
    end: float | None = None
    duration: float | None = None
    messages: str | None = None
    kinds: list[str] | None = None

    def selection(self) -> Selection:
        from nanorec.selection import Selection  # numpy: when a verb runs

        return Selection.make(
            start=self.start,
            end=self.end,
            duration=self.duration,
            messages=self.messages,
            kinds=self.kinds,
        )


class Opener:
    """The verb's input opened as a recording when first asked, once (`inputs.opened`): a
    format that reads its own file (a bag's index, metadata.yaml) never converts it."""

    def __init__(self, source: Path, show_conversion: bool = False) -> None:
        self.source = source
        self.show_conversion = show_conversion
        self._stack: contextlib.ExitStack | None = None
        self._recording: Recording | None = None

    def recording(self) -> Recording:
        if self._recording is None:
            from nanorec.cli.inputs import opened

            stack = contextlib.ExitStack()
            self._recording = stack.enter_context(
                opened(self.source, show_conversion=self.show_conversion)
            )
            self._stack = stack
        return self._recording

    def archive_format(self) -> str | None:
        """The format of the input, an archive (read by URL): its converter's name, None
        for a plain archive."""
        from nanorec import registry

        reader = getattr(self.recording(), "reader", None)
        converter = None if reader is None else registry.for_archive(reader)
        return None if converter is None else converter.name

    def close(self) -> None:
        if self._stack is not None:
            self._stack.close()
        self._stack = self._recording = None


@dataclasses.dataclass(frozen=True)
class VerbCall(Generic[OptionsT]):
    """One verb on one input, as the core parsed it: what a format's hook receives."""

    source: Path  # the input
    typed: str  # the input as typed (a storage file's `Files:` line)
    selection: Selection | None  # None for a verb without one (info)
    output: Path | None
    force: bool
    form: str | None  # --format
    as_json: bool
    extra: OptionsT  # the format's own options for this verb
    storage: str | None = None
    pace: Pace = Pace()
    opener: Opener | None = None
    kinds: tuple[str, ...] = ()  # --type as given, in order (the selection's are a set)

    def selecting(self, kinds: Iterable[str] | None) -> Selection:
        """The call's selection keeping `kinds` instead (None: every kind)."""
        assert self.selection is not None
        wanted = frozenset(kinds) if kinds else None
        return dataclasses.replace(self.selection, kinds=wanted)

    @property
    def recording(self) -> Recording:
        """The input opened (a native file converted first), once."""
        if self.opener is None:
            raise RuntimeError("this call has no input to open")
        return self.opener.recording()


_HOOKS: dict[int, dict[str, tuple[Hook, type | None]]] = {}


def verb_hook(app: object, verb: str, *, options: type | None = None) -> Callable[[Hook], Hook]:
    """Register `func` as the hook of `verb` for the format whose commands are `app`."""

    def register(func: Hook) -> Hook:
        if options is not None:
            list(fields_of(options))  # refused at import when not spelled right
        _HOOKS.setdefault(id(app), {})[verb] = (func, options)
        return func

    return register


def hooks_of(app: object) -> dict[str, tuple[Hook, type | None]]:
    """The hooks registered on a format's `app`, by verb."""
    return _HOOKS.get(id(app), {})


def call_hook(hook: Hook, call: VerbCall[object]) -> int | None:
    """Run `hook` on `call`, whose `extra` the core built from the options class the hook
    was registered with (`verb_hook`): the one place that holds for the type checker."""
    return cast("Callable[[VerbCall[object]], int | None]", hook)(call)
