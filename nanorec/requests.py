"""What a caller asks of a converter: `ConvertRequest`, `ExportRequest`, and each format's own
options as a frozen dataclass, built from `-O key=value` strings by one parser.

Why typed: options once travelled as `Mapping[str, Any]`, each converter reading them its
own way (`options.get("family")`), so a misspelt key passed silently and mypy saw nothing.
A converter now declares `convert_options` and `export_options` (dataclass types; `NoOptions`
for none); `parse_options` turns strings into one of them, typed from its fields, and refuses
a key it does not have, naming the ones it has. `nanorec.contract` re-exports all of it."""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

from nanorec.errors import UsageError

if TYPE_CHECKING:
    from nanorec.selection import Selection

#: `progress(done, total)`: bytes of the input handled so far, out of `total` (an export's
#: outputs count messages instead).
Progress = Callable[[int, int], None]
#: `progress(done)`: what a converter calls, bytes of its source done so far (monotonic, the
#: last call with the source's size); the core knows the total and draws the bar.
BytesDone = Callable[[int], None]

OptionsT = TypeVar("OptionsT")


@dataclass(frozen=True)
class NoOptions:
    """The options of a format that takes none (the default of every request)."""


def _options_as(given: object, kind: type[OptionsT]) -> OptionsT:
    if isinstance(given, kind):
        return given
    if isinstance(given, NoOptions):
        return kind()  # every field of an options class has a default
    raise UsageError(f"options {type(given).__name__} given where {kind.__name__} is taken")


@dataclass(frozen=True)
class ConvertRequest:
    """What every `Converter.convert` takes: `options` is the converter's `convert_options`
    (read with `options_as`)."""

    overwrite: bool = False
    progress: Progress | None = None
    options: object = NoOptions()

    def options_as(self, kind: type[OptionsT]) -> OptionsT:
        """`options` as `kind` (its defaults when none were given); `UsageError` for
        another format's options."""
        return _options_as(self.options, kind)

    def progress_in_bytes(self, source: Path) -> BytesDone | None:
        """What a converter reports its progress to, in bytes of `source` (the one place
        the total is taken: `source_size`), or None when nobody asked."""
        progress = self.progress
        if progress is None:
            return None
        total = source_size(source)
        return lambda done: progress(done, total)


@dataclass(frozen=True)
class ExportRequest:
    """What every `Converter.export` takes: the `selection` (None: everything, the exact
    file), the `--format` form ("native" or one of the converter's `export_formats`), the
    `--storage` of a format offering several (None: the default), and `options`, the
    converter's `export_options`."""

    selection: Selection | None = None
    overwrite: bool = False
    progress: Progress | None = None
    form: str = "native"
    storage: str | None = None
    options: object = NoOptions()

    def options_as(self, kind: type[OptionsT]) -> OptionsT:
        """As `ConvertRequest.options_as`."""
        return _options_as(self.options, kind)

    @property
    def everything(self) -> bool:
        """No selection, or one that selects every message: the exact file is asked for."""
        return self.selection is None or self.selection.everything


def source_size(path: Path) -> int:
    """A recording's bytes: a file's size, or the files directly in a recording folder (as
    rosbag2 counts a bag)."""
    if path.is_dir():
        return sum(p.stat().st_size for p in path.iterdir() if p.is_file())
    return path.stat().st_size


class TakesOptions(Protocol):
    """A converter, as far as its options go (`nanorec.contract.Converter`)."""

    @property
    def convert_options(self) -> type[object]: ...

    @property
    def export_options(self) -> type[object]: ...


def convert_request(
    converter: TakesOptions,
    options: Mapping[str, object] | None = None,
    *,
    overwrite: bool = False,
    progress: Progress | None = None,
) -> ConvertRequest:
    """The request for `converter.convert` with `-O` strings (or values a format's own
    option gave typed) parsed into its options."""
    parsed = parse_options(converter.convert_options, options or {})
    return ConvertRequest(overwrite=overwrite, progress=progress, options=parsed)


def option_names(kind: type[object]) -> tuple[str, ...]:
    """The keys `-O` takes for options class `kind`."""
    if not dataclasses.is_dataclass(kind):
        return ()
    return tuple(f.name for f in dataclasses.fields(kind))


def parse_options(kind: type[OptionsT], pairs: Mapping[str, object]) -> OptionsT:
    """`kind` built from `-O KEY=VALUE` strings, each converted to its field's type (str, int,
    float, bool, X | None, tuple[X, ...] as comma-separated values). `UsageError` for a key
    `kind` lacks (naming those it has) or a value that is not of its type."""
    known = option_names(kind)
    unknown = sorted(set(pairs) - set(known))
    if unknown:
        takes = f"it takes {', '.join(known)}" if known else "it takes none"
        raise UsageError(f"-O {unknown[0]}: no such option here ({takes})")
    hints = typing.get_type_hints(kind)
    values = {key: _parse(key, hints[key], text) for key, text in pairs.items()}
    return kind(**values)


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def _parse(key: str, hint: object, text: object) -> object:
    """`text` as a value of type `hint` (see `parse_options`); a value given typed (a
    format's own option on the command line: `--family 0.9.15`) is taken as it is."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if not isinstance(text, str):
        return tuple(text) if origin is tuple and isinstance(text, list) else text
    if origin in (typing.Union, types.UnionType):
        if text.lower() in ("", "none") and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _parse(key, inner[0] if inner else str, text)
    if origin is tuple:
        item = args[0] if args else str
        return tuple(_parse(key, item, part.strip()) for part in text.split(",") if part.strip())
    if hint is bool:
        if text.lower() in _TRUE | _FALSE:
            return text.lower() in _TRUE
        raise UsageError(f"-O {key}={text}: not true or false")
    if hint in (int, float):
        try:
            return int(text) if hint is int else float(text)
        except ValueError:
            what = "an integer" if hint is int else "a number"
            raise UsageError(f"-O {key}={text}: not {what}") from None
    return text


__all__ = [
    "BytesDone",
    "ConvertRequest",
    "ExportRequest",
    "NoOptions",
    "Progress",
    "TakesOptions",
    "convert_request",
    "option_names",
    "parse_options",
    "source_size",
]
