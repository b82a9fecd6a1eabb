"""A third-party format, registered the way a plug-in package would: through an entry point.

The format ("FAKELOG"): a line `FAKELOG 1`, then one line per message, `<t_us> <kind>
<text>`. A last line without its newline is a crashed writer's tail: kept verbatim. It is
small on purpose: the contract suite runs on it to prove that nanorec finds and drives a
format it has never imported (see `conftest.py`, which installs the entry point).
"""

from __future__ import annotations

import hashlib
import os
import signal
from pathlib import Path
from typing import Any

from nanorec.archive.atomic import atomic_output
from nanorec.archive.reader import ArchiveReader
from nanorec.archive.writer import ArchiveWriter
from nanorec.contract import (
    ConvertReport,
    ConvertRequest,
    ExportReport,
    ExportRequest,
    NoOptions,
    Region,
)
from nanorec.errors import BadMagicError, FormatError, UsageError
from nanorec.recording import ArchiveRecording
from nanorec.selection import Selection

MAGIC = b"FAKELOG 1\n"


#: The side members: the crashed tail's bytes, and its length (`ArchiveWriter.add_meta`).
TAIL_MEMBER = "fake-tail"
META_MEMBER = "fake.msgpack.zlib"


def read_tail(reader: ArchiveReader) -> bytes:
    """The kept tail, checked against the length recorded beside it (FormatError naming the
    member otherwise: a format's side members are input too)."""
    meta = reader.meta(META_MEMBER)
    size = meta.get("tail") if isinstance(meta, dict) else None
    tail = reader.member(TAIL_MEMBER)
    if not isinstance(size, int) or len(tail) != size:
        raise FormatError(f"{TAIL_MEMBER} holds {len(tail)} bytes, not the {size} recorded")
    return tail


class FakeRecording(ArchiveRecording):
    format = "fake"

    def check_members(self) -> None:
        read_tail(self.reader)

    def kind_of(self, number: int) -> str:
        return str(self.reader.read(number)["line"]["kind"])

    def decode(self, number: int) -> Any:
        return self.reader.read(number)["line"]["text"]


class FakeConverter:
    name = "fake"
    title = "FAKELOG text log"
    suffixes = (".fakelog",)
    convert_options = NoOptions
    export_options = NoOptions

    def sniff(self, head: bytes) -> bool:
        return head.startswith(MAGIC)

    def convert(
        self, source: Path, output: Path, request: ConvertRequest = ConvertRequest()
    ) -> ConvertReport:
        data = source.read_bytes()
        overwrite, progress = request.overwrite, request.progress
        if not data.startswith(MAGIC):
            raise BadMagicError(f"{source} does not start with {MAGIC!r}", offset=0)
        position, count, last, cut = len(MAGIC), 0, 0, None
        with ArchiveWriter(output, overwrite=overwrite, source_format=self.name) as writer:
            digest = hashlib.sha256(data).hexdigest()
            writer.source.update(name=source.name, size=len(data), sha256=digest)
            while position < len(data):
                end = data.find(b"\n", position)
                if end < 0:
                    cut = Region(position, len(data) - position, "a line without its newline")
                    break
                line = data[position:end]
                stamp, _, rest = line.partition(b" ")
                kind, _, text = rest.partition(b" ")
                try:
                    t_us = int(stamp)
                except ValueError:
                    raise FormatError(f"line {count + 2} has no time", offset=position) from None
                if t_us < last:
                    raise FormatError(f"line {count + 2} goes back in time", offset=position)
                if kind == b"die":  # lets the batch tests kill a worker process mid-file
                    os.kill(os.getpid(), signal.SIGKILL)
                message = {"kind": kind.decode("latin-1"), "text": text.decode("latin-1")}
                writer.write({"line": message}, timestamp_us=t_us)
                last, position, count = t_us, end + 1, count + 1
                if progress is not None:
                    progress(position, len(data))
            writer.add_member(TAIL_MEMBER, data[position:])
            writer.add_meta(META_MEMBER, {"tail": len(data) - position})
        if progress is not None:  # a cut line's bytes are done too
            progress(len(data), len(data))
        return ConvertReport(
            source,
            output,
            self.name,
            count,
            len(data),
            output.stat().st_size,
            hashlib.sha256(data).hexdigest(),
            cut=cut,
        )

    def export(
        self, reader: ArchiveReader, output: Path, request: ExportRequest = ExportRequest()
    ) -> ExportReport:
        if request.form != "native":
            raise UsageError(f"fake exports no {request.form!r}")
        selection, overwrite, whole = request.selection, request.overwrite, request.everything
        numbers = (selection or Selection()).numbers(reader.index).tolist()
        digest = hashlib.sha256()
        with atomic_output(output, overwrite=overwrite) as stream:
            for chunk in self._chunks(reader, numbers, whole):
                stream.write(chunk)
                digest.update(chunk)
        expected = (reader.description or {}).get("source", {}).get("sha256")
        sha = digest.hexdigest()
        identical = (sha == expected) if whole and expected else None
        return ExportReport(output, output.stat().st_size, sha, len(numbers), identical)

    def _chunks(self, reader: ArchiveReader, numbers: list[int], whole: bool) -> Any:
        yield MAGIC
        stamps = reader.index.timestamp_us
        for number in numbers:
            line = reader.read(number)["line"]
            text = f"{stamps.item(number)} {line['kind']} {line['text']}\n"
            yield text.encode("latin-1")
        if whole:
            yield read_tail(reader)

    def open_archive(self, reader: ArchiveReader) -> FakeRecording:
        return FakeRecording(reader)

    def commands(self) -> None:
        return None


CONVERTER = FakeConverter()


def sample(path: Path, lines: int = 50, tail: bytes = b"") -> Path:
    """Write a FAKELOG of `lines` messages (kinds a and b) at `path`, plus `tail`."""
    body = b"".join(f"{i * 100_000} {'ab'[i % 2]} message {i}\n".encode() for i in range(lines))
    path.write_bytes(MAGIC + body + tail)
    return path


def install(site: Path) -> Path:
    """Make `site` a folder holding this plug-in's distribution metadata (a `nanorec.converters`
    entry point), put it on `sys.path` and let the registry look again: how the test session
    and the fuzz child find the format without nanorec importing it."""
    import sys

    from nanorec import registry

    info = site / "nanorec_fake_plugin-1.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: nanorec-fake-plugin\nVersion: 1.0\n"
    )
    (info / "entry_points.txt").write_text(
        "[nanorec.converters]\nfake = tests.converters.fake_plugin:CONVERTER\n"
    )
    sys.path.insert(0, str(site))
    registry.converters.cache_clear()
    return site
