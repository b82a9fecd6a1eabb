"""The converter contract: what a native format provides to plug into nanorec.

A converter is an object registered under the entry-point group `nanorec.converters` (see
`nanorec.registry`); nanorec never imports one by name. It says which files it takes
(`suffixes`, `sniff`), turns a native file into an archive (`convert`) and an archive back
into the native file or a valid cut of it (`export`), and wraps an archive it wrote in a
`Recording` (`open_archive`). A format's own commands (CARLA's `collisions`, a bag's
`info --freq`) live in the typer app returned by `commands()`: the generic verb of the same
name hands the whole command line to it (`nanorec info x.bag --freq` runs the rosbag `info`).

Everything here is format-neutral: times are seconds from the recording's first message
(`Selection`), reports are plain dataclasses whose `to_json()` is JSON-serialisable.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Protocol, TypedDict, runtime_checkable

from nanorec.requests import (
    BytesDone,
    ConvertRequest,
    ExportRequest,
    NoOptions,
    Progress,
    convert_request,
    option_names,
    parse_options,
)
from nanorec.untyped import JsonObject, Payload

if TYPE_CHECKING:
    from collections.abc import Callable

    import typer
    from typing_extensions import Unpack

    from nanorec.archive.reader import ArchiveReader
    from nanorec.outputs.mcap import McapRecord
    from nanorec.selection import Selection


#: How many leading bytes of a file `sniff` is given.
SNIFF_BYTES = 4096


@dataclass(frozen=True)
class Region:
    """A byte range of the native input that did not become messages, and why.

    The bytes are kept verbatim in the archive, so `export` still writes the input back.
    """

    offset: int
    length: int
    reason: str

    def __str__(self) -> str:
        return f"{self.length} bytes at byte {self.offset}: {self.reason}"


@dataclass
class ConvertReport:
    """What `Converter.convert` did.

    `cut` is the tail of a truncated (crashed) input after its last complete unit;
    `damaged` are regions inside the input that could not be read and were skipped (the
    converter resynchronised after them). A damaged input makes the CLI exit non-zero; a cut
    one does not (crashed recordings are normal), but both are reported.
    """

    source: Path
    output: Path
    format: str
    messages: int
    source_size: int
    archive_size: int
    sha256: str
    cut: Region | None = None
    damaged: list[Region] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: Format-specific facts (release family, compression, kept chunks...), JSON-able.
    details: JsonObject = field(default_factory=dict)

    @property
    def clean(self) -> bool:
        """No damage and no warning (a cut tail alone still counts as clean)."""
        return not self.damaged and not self.warnings

    def to_json(self) -> JsonObject:
        data = asdict(self)
        data["source"], data["output"] = str(self.source), str(self.output)
        return data


@dataclass
class ExportReport:
    """What `Converter.export` wrote: `identical` compares with the source's recorded sha256
    (None for a cut or when no hash was recorded)."""

    output: Path
    size: int
    sha256: str
    messages: int
    identical: bool | None = None
    details: JsonObject = field(default_factory=dict)

    def to_json(self) -> JsonObject:
        data = asdict(self)
        data["output"] = str(self.output)
        return data


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a recording in time order: its number in the archive, its time in
    seconds from the recording's first message, its kind (record kind or topic) and its value
    (decoded the format's way)."""

    number: int
    time: float
    kind: str
    value: Payload


class PlayOptions(TypedDict, total=False):
    """What every recording's `play` takes (`nanorec.player.Player`'s options)."""

    rate: float
    start: float | None
    end: float | None
    duration: float | None
    kinds: Iterable[str] | None
    selection: Selection | None
    loop: bool
    immediate: bool
    paused: bool
    clock: Callable[[], float]
    sleep: Callable[[float], None]
    keys: Callable[[float], str | None] | None
    poll_s: float
    delay: float
    on_clock: Callable[[float], None] | None
    hz: float


@runtime_checkable
class Recording(Protocol):
    """The common surface of an opened recording, whatever its format.

    Times are seconds: `start_time` in the format's own clock (Unix time for ROS and
    Cartographer, CARLA's elapsed time), every other time from the first message.
    """

    format: str
    reader: ArchiveReader

    def __len__(self) -> int: ...

    @property
    def start_time(self) -> float: ...

    @property
    def end_time(self) -> float: ...

    @property
    def duration(self) -> float: ...

    def time_of(self, number: int) -> float:
        """Seconds from the first message to message `number`."""
        ...

    def message(self, number: int) -> Message:
        """Message `number` (file order), decoded."""
        ...

    def messages(self, selection: Selection | None = None) -> Iterator[Message]:
        """The selected messages in time order, decoded."""
        ...

    def at(self, t: float) -> object:
        """What plays at `t` seconds from the start (a world state, the latest message...)."""
        ...

    def summary(self) -> JsonObject:
        """Machine-readable facts about the recording, JSON-serialisable."""
        ...

    def table_kinds(self) -> list[str]:
        """The kinds `rows` can tabulate (record kinds, topics)."""
        ...

    def rows(self, kind: str, selection: Selection | None = None) -> Iterator[dict[str, Payload]]:
        """One flat row (column -> value) per record of `kind` in the selection, in time
        order; every row starts with `number` and `time` (seconds from the start) or the
        format's own equivalents. Raises `UsageError` for a kind it cannot tabulate."""
        ...

    def play(self, **options: Unpack[PlayOptions]) -> Iterable[object]:
        """What `decode` gives for each message, at the recorded pace: a
        `nanorec.player.Player` (`PlayOptions`; a format's player may take more)."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> Recording: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None: ...


@runtime_checkable
class Converter(Protocol):
    """A native format. `name` is the registry key and the archive's `source_format`."""

    name: str
    #: A one-line name for humans: "CARLA recorder", "ROS1 bag".
    title: str
    #: File suffixes, lower case with the dot (".log", ".bag.active"); only a hint, `sniff`
    #: decides.
    suffixes: tuple[str, ...]

    def sniff(self, head: bytes) -> bool:
        """Whether a file starting with `head` (up to `SNIFF_BYTES` bytes) is of this format."""
        ...

    #: The dataclass of its `-O` options for convert (`NoOptions`: none); export's.
    @property
    def convert_options(self) -> type[object]: ...

    @property
    def export_options(self) -> type[object]: ...

    def convert(
        self, source: Path, output: Path, request: ConvertRequest = ConvertRequest()
    ) -> ConvertReport:
        """Convert `source` into a new archive at `output` (atomically: a partial file renamed
        at the end), recording `source={"name", "size", "sha256"}` in its description (batch
        resumption and export checks read them). Raises `OutputExistsError` unless
        `request.overwrite`, `NanorecError`s for input that cannot be converted at all; a
        truncated or damaged input converts what is complete and says the rest in the
        report. Progress is reported in bytes of the input."""
        ...

    def export(
        self, reader: ArchiveReader, output: Path, request: ExportRequest = ExportRequest()
    ) -> ExportReport:
        """Write the native file back from an archive this converter wrote: byte for byte
        without a selection, else a valid native file holding the selection (raises
        `UnsupportedError` where the format allows no cut of that kind)."""
        ...

    def open_archive(self, reader: ArchiveReader) -> Recording:
        """Wrap an archive this converter wrote (raises `FormatError` when it is damaged)."""
        ...

    def commands(self) -> typer.Typer | None:
        """The format's own sub-commands (`nanorec NAME ...`), or None."""
        ...


# -- capabilities: optional, each a protocol a converter (or recording) may also satisfy,
# found with isinstance (why: a misspelt hook was once a silent getattr default) ----------


@runtime_checkable
class Adopting(Protocol):
    """A converter that can take back an archive rebuilt by `nanorec recover` (a killed
    writer's messages, without the members written at close): `adopt` returns those members
    rebuilt from the messages if they are this format's, else None (`nanorec.maintain.adopt`)."""

    def adopt(self, reader: ArchiveReader) -> dict[str, bytes] | None: ...


@runtime_checkable
class DirectoryFormat(Protocol):
    """A converter whose recordings may be folders (a ROS 2 bag: `metadata.yaml` and its
    storage files). Such a folder is an input like a file: `convert`, every verb and a batch
    take it whole, and its export is a folder again."""

    def sniff_directory(self, path: Path) -> bool:
        """Whether the folder `path` is one recording of this format."""
        ...


@runtime_checkable
class ExtraExportForms(Protocol):
    """A converter whose `export` takes `--format` values beyond native, parquet and mcap
    (a bag's "indexed"), each with a line of help; `nanorec export` refuses every other
    value and lists these in its help."""

    export_formats: Mapping[str, str]


@runtime_checkable
class ForeignWriter(Protocol):
    """A converter that writes its native format from a recording of *any* format (a ROS 2
    bag from a ROS1 bag or a CARLA recording) under the `--format` values of
    `foreign_formats`. Recordings of other formats offer their content through
    `nanorec.standard`; the report's `details["left_out"]` says what could not be carried
    over and why."""

    foreign_formats: Mapping[str, str]

    def export_from(
        self, recording: Recording, output: Path, request: ExportRequest
    ) -> ExportReport: ...


@runtime_checkable
class StorageChoice(Protocol):
    """A converter whose native output can be stored several ways (a ROS 2 bag: sqlite3,
    mcap), chosen with `--storage`; export refuses `--storage` for a format without them."""

    storages: tuple[str, ...]


@runtime_checkable
class ChecksMembers(Protocol):
    """A recording that can read each of its side members once (`nanorec verify`: a whole
    zip with a short or hostile side member would pass every other check, then fail on first
    read). Raises a `NanorecError` naming the first bad member."""

    def check_members(self) -> None: ...


@runtime_checkable
class ExportsToMcap(Protocol):
    """A recording that gives its own MCAP records (schemas and channels of its format)
    instead of the generic JSON ones (`nanorec.outputs.mcap`)."""

    def mcap_messages(self, selection: Selection | None = None) -> Iterator[McapRecord]: ...


@runtime_checkable
class Viewable(Protocol):
    """A recording that draws what happened in `nanorec view` (CARLA's top-down world, a
    bag's poses and images, a pbstream's map). The page is format-neutral: it draws *layers*,
    each a dict with a `kind` and flat columns (numpy arrays, one value per item, never
    per-item objects), in world metres with x right and y up (a format whose axes differ
    flips them here). Kinds: `boxes` (x, y, yaw in degrees, length, width, class),
    `points` (x, y, class), `lines` (x, y, starts: offsets of each polyline, class),
    `markers` (x, y, label), `image` (mime, data: bytes; with `extent` [x0, y0, x1, y1] it
    lies in the world, e.g. a map, else it is shown beside it, e.g. a camera). Every layer
    has a `name`; `class` columns are indices into the layer's `classes` (names, which pick
    the colours). A scene may name `follow`: [x, y], the point the view centres on."""

    def view_overview(self) -> JsonObject:
        """What does not change with time: {"bounds": [x0, y0, x1, y1], "layers": [...]}
        (a map, whole trajectories)."""
        ...

    def view_scene(self, number: int) -> JsonObject:
        """What message `number` shows: {"layers": [...], "follow": [x, y] (optional)};
        its cost is bounded by what is on screen, not by the recording's length."""
        ...


#: Declared beside the converter's entry point: a format with its own commands names its
#: `title` (a str, in a module importing nothing heavy) under this entry-point group and its
#: converter's name, e.g. `carla = "pkg.about:TITLE"`. `nanorec --help` lists the format's
#: commands from it without loading the format, whose commands are imported only when a
#: command line uses them. A converter not declared here is asked `commands()` (importing
#: them) to learn whether it has any.
COMMANDS_GROUP = "nanorec.commands"


def export_forms(converter: object) -> tuple[str, ...]:
    """The `--format` values `converter`'s export adds (see `ExtraExportForms`)."""
    return tuple(converter.export_formats) if isinstance(converter, ExtraExportForms) else ()


def foreign_forms(converter: object) -> tuple[str, ...]:
    """The `--format` values `converter` writes from any recording (see `ForeignWriter`)."""
    return tuple(converter.foreign_formats) if isinstance(converter, ForeignWriter) else ()


def storages(converter: object) -> tuple[str, ...]:
    """The `--storage` values `converter`'s native output takes (see `StorageChoice`)."""
    return tuple(converter.storages) if isinstance(converter, StorageChoice) else ()


__all__ = [
    "COMMANDS_GROUP",
    "SNIFF_BYTES",
    "Adopting",
    "BytesDone",
    "ChecksMembers",
    "ConvertReport",
    "ConvertRequest",
    "Converter",
    "DirectoryFormat",
    "ExportReport",
    "ExportRequest",
    "ExportsToMcap",
    "ExtraExportForms",
    "ForeignWriter",
    "Message",
    "NoOptions",
    "PlayOptions",
    "Progress",
    "Recording",
    "Region",
    "StorageChoice",
    "Viewable",
    "convert_request",
    "export_forms",
    "foreign_forms",
    "option_names",
    "parse_options",
    "storages",
]
