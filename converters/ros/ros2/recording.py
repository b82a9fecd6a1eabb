"""`Ros2Recording`: a converted ROS 2 bag as a `nanorec.contract.Recording`.

Message kinds are topics; `message(n).value` is the decoded message (a dict, numeric arrays
as numpy arrays), decoded from the definitions the bag carries, or for a bag without them
from `.msg` files found under `msg_path`, else from the definitions nanorec bundles for the
bag's distro (or `distro`: see `bundle.py`); a message that cannot be decoded comes out as
its bytes (`on_undecodable` is told). `raw(n)` gives the data exactly as stored.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from nanorec.archive.reader import ArchiveReader
from nanorec.errors import FormatError, NanorecError, UsageError
from nanorec.recording import ArchiveRecording, stamped_rows
from nanorec.selection import Selection
from nanorec.untyped import Payload

from .bundle import DISTROS, bundled, check_distro, distro_of, resolve
from .datas import data_of
from .extras import extra
from .meta import Ros2Meta
from .pieces import file_pieces
from .ros1_encoded import Ros1Decoders, is_ros1
from .storage import ZSTD_MAGIC
from .zstd_bound import inflate_message

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from nanorec.contract import PlayOptions
    from nanorec.outputs.mcap import McapRecord, Progress

    from ..common.view import RosView
    from .cdr import Decoder
    from .play import Ros2Player


class Ros2Recording(ArchiveRecording):
    format = "ros2"

    def __init__(
        self, reader: ArchiveReader, msg_path: Sequence[Path] = (), distro: str | None = None
    ) -> None:
        super().__init__(reader)
        self.meta = Ros2Meta(reader)
        self.msg_path = list(msg_path)
        #: Whose bundled definitions serve types the bag has none of (None: the bag's
        #: `ros_distro`, else Humble). Setting it or `msg_path` resolves definitions anew.
        self.distro = None if distro is None else check_distro(distro)
        #: Told of each message that does not decode, which then comes out as its bytes
        #: (`cat` and `play` warn and go on); None: `decode` raises the `FormatError`.
        self.on_undecodable: Callable[[FormatError], None] | None = None
        self._checked: dict[str, bool] = {}

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("msg_path", "distro"):  # what `definitions` was resolved from
            for cached in ("definitions", "decoder", "_trial", "viewer"):
                self.__dict__.pop(cached, None)
            self.__dict__.get("_checked", {}).clear()
        super().__setattr__(name, value)

    def close(self) -> None:
        for cached in ("time", "file", "rank"):  # views of the mapping
            self.meta.__dict__.pop(cached, None)
        super().close()

    def check_members(self) -> None:
        """Read each side member once and join each bag file as export does, writing
        nothing (`nanorec verify`: an archive it passes exports): NanorecError for a bad
        one (a missing skeleton or zstd member, one that is damaged or a bomb)."""
        self.meta.check()
        if self.meta.adopted:  # no skeletons: export writes a new bag of the messages
            return
        for index in range(len(self.meta.files)):
            for _ in file_pieces(self.reader, self.meta, index):
                pass

    # -- messages ------------------------------------------------------------------------

    def time_ns(self, number: int) -> int:
        """The message's receive time, in integer nanoseconds since the Unix epoch."""
        return int(self.meta.time[self.reader.index.normalize(number)])

    def raw(self, number: int) -> bytes:
        """The message's data exactly as the bag stores it."""
        return bytes(data_of(self.reader, number))

    def serialized(self, number: int) -> bytes:
        """The message's CDR bytes (inflated when the bag compresses each message)."""
        data = self.raw(number)
        if self.ros1_types and self.type_of(self.kind_of(number)) in self.ros1_types:
            return data  # a ROS1 payload (`ros1_encoded.py`): never compressed, any first bytes
        # MESSAGE mode says so in metadata.yaml; a bag without it (crashed, reindexed) still
        # shows it by the zstd frame's magic, which no CDR payload starts with
        if self.meta.compression[1].upper() == "MESSAGE" or data[:4] == ZSTD_MAGIC:
            return inflate_message(extra("zstandard"), data, number)
        return data

    def type_of(self, topic: str) -> str:
        return self.meta.types.get(topic, "")

    @cached_property
    def definitions(self) -> dict[str, tuple[str, str]]:
        """Type -> (encoding, text) for every type of the bag that has a definition: the
        bag's own, else from `msg_path`, else bundled (`bundle.resolve`). Everything that
        reads messages (decoding, tables, MCAP and ROS1 export) takes them from here."""
        from .cdr import Decoder

        stored = {t: (d.encoding, d.text) for t, d in self.meta.definitions.items()}
        ros1 = {t: stored.pop(t) for t in self.ros1_types}  # ROS1's own: nothing to resolve
        self._trial = Decoder(stored)
        notes: list[str] = []
        types = [t for t in self.meta.types.values() if t not in ros1]
        found = resolve(types, stored, self.msg_path, self.bundle_distro, self._fits, notes)
        for note in notes:
            warnings.warn(note, UserWarning, stacklevel=2)
        return {**found, **ros1}

    def _fits(self, type_name: str, definition: tuple[str, str]) -> bool:
        """Whether `definition` decodes the first message of a topic of `type_name`."""
        from .cdr import Decoder

        trial = self._trial
        if trial.definitions.get(type_name) != definition:
            trial = Decoder({type_name: definition})
        number = self._first_of_type.get(type_name)
        if number is None:
            return True
        try:
            trial.decode(type_name, self.serialized(number))
        except NanorecError:  # truncated, XCDR2...: decoding says so, message by message
            return False
        return True

    @cached_property
    def _first_of_type(self) -> dict[str, int]:
        """Type -> the number of its first message (one pass over the index's codes)."""
        codes = self.reader.index.types_code
        _, firsts = np.unique(codes, return_index=True)
        found: dict[str, int] = {}
        for number in sorted(firsts.tolist()):
            found.setdefault(self.type_of(self.kind_of(number)), number)
        return found

    @property
    def bundle_distro(self) -> str:
        """Whose bundled definitions serve this bag: `distro`, else the bag's own."""
        return self.distro or distro_of(self.meta.ros_distro)

    def sources(self) -> dict[str, str]:
        """Type -> where its definition comes from, for each the bag carries none of."""
        found: dict[str, str] = {}
        for type_name in sorted(self.definitions.keys() - self.meta.definitions.keys()):
            if self.definitions[type_name] == bundled(self.bundle_distro, type_name):
                found[type_name] = f"ROS 2 {self.bundle_distro}'s, bundled with nanorec"
            else:
                found[type_name] = "from the .msg files under --msg-path"
        return found

    @cached_property
    def decoder(self) -> Decoder:
        definitions = self.definitions  # the functions generated to check them are kept
        return self._trial.with_definitions(definitions)

    @cached_property
    def ros1_types(self) -> frozenset[str]:
        """The types whose messages are ROS1-serialized (a `ros1msg` definition: an MCAP
        written from a ROS1 bag, see `ros1_encoded.py`)."""
        return frozenset(t for t, d in self.meta.definitions.items() if is_ros1(d))

    @cached_property
    def ros1_decoders(self) -> Ros1Decoders:
        return Ros1Decoders(self.meta.definitions)

    def decoder_of(self, type_name: str) -> Decoder | Ros1Decoders:
        """The decoder of `type_name`'s messages, by the encoding of its definition."""
        return self.ros1_decoders if type_name in self.ros1_types else self.decoder

    def undefined(self, type_name: str) -> bool:
        """Whether no definition of `type_name` is known (its messages stay bytes)."""
        if type_name not in self._checked:
            try:
                self.decoder_of(type_name).types(type_name)
                self._checked[type_name] = False
            except FormatError as error:
                self._checked[type_name] = True
                elsewhere = [d for d in DISTROS if bundled(d, type_name) is not None]
                hint = f"--distro {elsewhere[-1]}" if elsewhere else "--msg-path"
                note = f"{error.message}: its messages come out as bytes (try {hint})"
                if self.on_undecodable is not None:
                    self.on_undecodable(FormatError(note))
                else:
                    warnings.warn(note, UserWarning, stacklevel=3)
        return self._checked[type_name]

    def decode(self, number: int) -> Any:
        topic = self.kind_of(number)
        # definitions resolved first: resolving may decode (and inflate) this very message
        # as a trial, which must not live beside this one's (twice a 512 MiB image)
        undefined = self.undefined(self.type_of(topic))
        data = self.serialized(number)
        if undefined:
            return data
        try:
            return self.decoder_of(self.type_of(topic)).decode(self.type_of(topic), data)
        except FormatError as error:
            where = "" if error.offset is None else f" at byte {error.offset} of its data"
            problem = FormatError(f"message {number} ({topic}): {error.message}{where}")
            if self.on_undecodable is None:
                raise problem from None
            self.on_undecodable(problem)
            return data

    def decoded(self, number: int) -> dict[str, Any]:
        """`{"topic", "type", "time", "message"}`: time in ns, the message decoded."""
        topic = self.kind_of(number)
        return {
            "topic": topic,
            "type": self.type_of(topic),
            "time": self.time_ns(number),
            "message": self.decode(number),
        }

    # -- tables --------------------------------------------------------------------------

    @cached_property
    def topics(self) -> list[str]:
        return sorted(self.meta.types)

    def table_kinds(self) -> list[str]:
        return self.topics

    def rows(self, kind: str, selection: Selection | None = None) -> Iterator[dict[str, Payload]]:
        """One row per message of topic `kind`: number, time (s from the start), time_ns,
        time_s (Unix seconds), then the message's fields flattened; of a tf topic, one row
        per transform (`item`: its place in the message, then its fields)."""
        if kind not in self.topics:
            raise UsageError(f"no topic {kind!r} (topics: {', '.join(self.topics) or 'none'})")
        from ..common.table_runs import items
        from .columnar import items_field

        index = self.reader.index
        numbers = (selection or Selection()).numbers(index)
        numbers = numbers[index.has_type(kind)[numbers]]
        rows = stamped_rows(self, numbers.tolist())
        field = items_field(self, kind)
        yield from rows if field is None else items(rows, field)

    def table_columns(
        self,
        kinds: list[str],
        selection: Selection | None = None,
        progress: Progress | None = None,
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """`rows` of `kinds` as columns in runs, for `nanorec.outputs.arrow` (`columnar.py`: a
        type of scalars, strings and numeric arrays decoded a run at once)."""
        from .columnar import table_columns

        return table_columns(self, kinds, selection, progress)

    def at(self, t: float) -> dict[str, Any]:
        """The latest message of every topic at `t` seconds from the start, decoded."""
        last = self.number_at(t)
        codes = self.reader.index.types_code[: last + 1]
        latest: dict[str, Any] = {}
        for code in np.unique(codes).tolist():
            number = int(np.flatnonzero(codes == code)[-1])
            latest[self.kind_of(number)] = self.decode(number)
        return latest

    def play(self, **options: Unpack[PlayOptions]) -> Ros2Player:
        """A `Ros2Player`: `ros2 bag play`'s semantics (see `play.py`)."""
        from .play import Ros2Player

        return Ros2Player(self, **options)

    def mcap_messages(
        self, selection: Selection | None = None, progress: Progress | None = None
    ) -> Iterator[McapRecord]:
        """For `nanorec.outputs.mcap.export_mcap`: CDR as rosbag2's MCAP storage writes it."""
        from .mcap import mcap_messages

        return mcap_messages(self, selection, progress)

    @cached_property
    def viewer(self) -> RosView:
        """What `nanorec view` draws of the bag (`common/view.py`), cached per recording."""
        from ..common.view import RosView

        return RosView(self)

    def view_overview(self) -> dict[str, Any]:
        """The paths of every pose-like topic and tf frame, and their bounds."""
        return self.viewer.overview

    def view_scene(self, number: int) -> dict[str, Any]:
        """Each path's latest position at message `number` and the latest images."""
        return self.viewer.scene(number)

    def summary(self) -> dict[str, Any]:
        from .facts import facts_of_archive

        base = super().summary()
        base.update(facts_of_archive(self))
        return base
