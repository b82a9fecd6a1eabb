"""`verify`: check every layer of an archive and name the first thing that is wrong.

NanoVer checks one CRC-32 per member, and only at the end of a full sequential pass; a flipped
byte is handed out silently by random access. `verify` checks, in order: the zip structure
(end records, central directory, local headers agreeing with it, members not overlapping), each
member's CRC-32, that `messages.msgpack` and `index.msgpack` exist, that the index parses the
way NanoVer needs it (exactly `offset`/`length`/`metadata`, a timestamp for every entry), that
entries are contiguous and inside the messages member, that each entry decodes to exactly one
msgpack map whose keys match its `types` and whose `"nanorec.t"` matches its timestamp, each
message's CRC-32, and that `nanorec.msgpack` agrees with the index. Problems are collected, not
raised: a report lists the first bad entry of each kind by number.

An archive can be whole and still miss messages: a converter that read a damaged input (a
chunk or pages cut by a crash) records in the description's `source` map `messages_lost` (a
lower bound) and `damaged` (one line per region). `verify` reports them as `source-damage`,
so it never says OK of an archive whose source dropped messages.
"""

from __future__ import annotations

import itertools
import mmap
import os
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import msgpack
import numpy as np

from nanorec.archive.archive_file import MSGPACK_ERRORS
from nanorec.archive.blockread import BlockReader
from nanorec.archive.describe import MEMBER_NAME as DESCRIPTION_MEMBER
from nanorec.archive.describe import Description, parse_description
from nanorec.archive.index import Index
from nanorec.archive.index_parse import parse_entries
from nanorec.archive.members import Member, iter_member_data, open_members
from nanorec.archive.pages import MEMBER_NAME as PAGES_MEMBER
from nanorec.archive.pagetable import table_of
from nanorec.archive.remote import RemoteSource
from nanorec.archive.source import RangeBuffer
from nanorec.archive.urls import is_url, url_path
from nanorec.archive.wire import TIMESTAMP_KEY
from nanorec.archive.writer import INDEX_MEMBER, MESSAGES_MEMBER
from nanorec.archive.zipfile64 import FLAG_DATA_DESCRIPTOR, LocalHeader
from nanorec.errors import NanorecError, TruncatedError
from nanorec.untyped import Payload

_CRC_CHUNK: Final = 16 << 20
_PROGRESS_EVERY: Final = 65536
#: Stands for "no types in the index entry" (allowed by NanoVer): nothing to compare.
_UNKNOWN_TYPES: Final = ("\x00types not recorded",)


@dataclass(frozen=True)
class Problem:
    """One thing `verify` found wrong.

    `kind` is a short slug: truncated, zip, missing-member, member-crc, index, index-range,
    not-contiguous, message, types, timestamp, checksum, description, source-damage.
    """

    kind: str
    message: str
    entry: int | None = None
    offset: int | None = None
    member: str | None = None

    def __str__(self) -> str:
        where = []
        if self.member is not None:
            where.append(self.member)
        if self.entry is not None:
            where.append(f"entry {self.entry}")
        if self.offset is not None:
            where.append(f"byte {self.offset}")
        prefix = f"[{self.kind}] " + (", ".join(where) + ": " if where else "")
        return prefix + self.message


@dataclass(frozen=True)
class VerifyReport:
    """What `verify` found. `ok` when there is no problem."""

    path: Path
    problems: tuple[Problem, ...] = ()
    message_count: int | None = None
    has_description: bool = False
    members: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def first(self) -> Problem | None:
        return self.problems[0] if self.problems else None


def _problem_from(error: NanorecError, kind: str, member: str | None = None) -> Problem:
    return Problem(
        kind="truncated" if isinstance(error, TruncatedError) else kind,
        message=error.message,
        offset=error.offset,
        member=member,
    )


class _Verifier:
    def __init__(
        self, path: Path, mm: mmap.mmap | RangeBuffer, progress: Callable[[int, int], None] | None
    ):
        self.path = path
        self.mm = mm
        self.progress = progress
        self.problems: list[Problem] = []

    def add(self, problem: Problem) -> None:
        if problem not in self.problems:  # a damaged description is met twice (blocks, columns)
            self.problems.append(problem)

    def run(self) -> VerifyReport:
        try:
            _, members = open_members(self.mm)
        except NanorecError as error:
            self.add(_problem_from(error, "zip"))
            return self.report()
        self.members = members
        self.check_local_headers(members)
        self.check_overlaps(members)
        for member in members.values():
            self.check_member_crc(member)
        missing = [name for name in (MESSAGES_MEMBER, INDEX_MEMBER) if name not in members]
        for name in missing:
            self.add(Problem("missing-member", f"the archive has no {name}", member=name))
        if missing:
            return self.report(members=members)
        index = self.check_index(members)
        if index is not None:
            self.check_messages(members[MESSAGES_MEMBER], index)
            if DESCRIPTION_MEMBER in members:
                self.check_description(members, index)
        return self.report(members=members, count=None if index is None else len(index))

    def report(
        self, members: dict[str, Member] | None = None, count: int | None = None
    ) -> VerifyReport:
        return VerifyReport(
            path=self.path,
            problems=tuple(self.problems),
            message_count=count,
            has_description=bool(members and DESCRIPTION_MEMBER in members),
            members=tuple(members or ()),
        )

    # -- zip -------------------------------------------------------------------------------

    def check_local_headers(self, members: dict[str, Member]) -> None:
        for member in members.values():
            central = member.header
            try:
                local = LocalHeader.parse(self.mm, central.local_header_offset)
            except NanorecError as error:
                self.add(_problem_from(error, "zip", member.name))
                continue
            mismatches = []
            if local.name != central.name:
                mismatches.append(f"name {local.name!r}")
            if local.method != central.method:
                mismatches.append(f"method {local.method}")
            if not local.flags & FLAG_DATA_DESCRIPTOR:
                if local.crc32 != central.crc32:
                    mismatches.append(f"CRC {local.crc32:#010x} (central {central.crc32:#010x})")
                if local.compressed_size != central.compressed_size:
                    mismatches.append(
                        f"size {local.compressed_size} (central {central.compressed_size})"
                    )
            if mismatches:
                self.add(
                    Problem(
                        "zip",
                        "local header disagrees with the central directory: "
                        + ", ".join(mismatches),
                        offset=central.local_header_offset,
                        member=member.name,
                    )
                )

    def check_overlaps(self, members: dict[str, Member]) -> None:
        ordered = sorted(members.values(), key=lambda m: m.header.local_header_offset)
        for current, following in itertools.pairwise(ordered):
            end = current.data_start + current.size
            if end > following.header.local_header_offset:
                self.add(
                    Problem(
                        "zip",
                        f"data runs into the next member {following.name!r}",
                        offset=end,
                        member=current.name,
                    )
                )

    def check_member_crc(self, member: Member) -> None:
        crc = 0
        size = 0
        try:
            for chunk in iter_member_data(self.mm, member):
                crc = zlib.crc32(chunk, crc)
                size += len(chunk)
        except NanorecError as error:
            self.add(_problem_from(error, "member-crc", member.name))
            return
        if size != member.header.uncompressed_size:
            self.add(
                Problem(
                    "member-crc",
                    f"holds {size} bytes, the central directory says "
                    f"{member.header.uncompressed_size}",
                    member=member.name,
                )
            )
        elif crc != member.header.crc32:
            self.add(
                Problem(
                    "member-crc",
                    f"CRC-32 is {crc:#010x} but the central directory records "
                    f"{member.header.crc32:#010x}",
                    offset=member.data_start,
                    member=member.name,
                )
            )

    def member_bytes(self, member: Member) -> bytes:
        if member.stored:
            return self.mm[member.data_start : member.data_start + member.size]
        return b"".join(iter_member_data(self.mm, member))

    # -- index and messages ----------------------------------------------------------------

    def check_index(self, members: dict[str, Member]) -> Index | None:
        messages = members[MESSAGES_MEMBER]
        try:
            data = self.member_bytes(members[INDEX_MEMBER])
        except NanorecError as error:
            self.add(_problem_from(error, "index", INDEX_MEMBER))
            return None
        try:
            parsed = parse_entries(data, types_of=lambda offset, length: _UNKNOWN_TYPES)
        except NanorecError as error:
            self.add(_problem_from(error, "index", INDEX_MEMBER))
            return None
        index = parsed.index
        if parsed.unknown_timestamps:
            self.add(
                Problem(
                    "index",
                    f"{parsed.unknown_timestamps} entries have no integer timestamp "
                    "(NanoVer's iter_message_events needs one)",
                    member=INDEX_MEMBER,
                )
            )
        size = messages.header.uncompressed_size
        try:
            index.check_bounds(size)
        except NanorecError as error:
            bad = (index.offset < 0) | (index.offset + index.length > size)
            self.add(
                Problem(
                    "index-range", error.message, entry=int(np.argmax(bad)), member=INDEX_MEMBER
                )
            )
            return None
        expected = np.cumsum(index.length) - index.length
        gaps = np.flatnonzero(index.offset != expected)
        if len(gaps):
            first = int(gaps[0])
            self.add(
                Problem(
                    "not-contiguous",
                    f"entry starts at {int(index.offset[first])}, the previous entry ends at "
                    f"{int(expected[first])}",
                    entry=first,
                    member=INDEX_MEMBER,
                )
            )
        elif int(index.length.sum()) != size:
            self.add(
                Problem(
                    "not-contiguous",
                    f"entries cover {int(index.length.sum())} of the {size} message bytes",
                    entry=len(index) - 1 if len(index) else None,
                    member=INDEX_MEMBER,
                )
            )
        return index

    def check_messages(self, messages: Member, index: Index) -> None:
        if messages.stored:
            base = messages.data_start
            mm = self.mm

            def data_of(offset: int, length: int) -> bytes:
                return mm[base + offset : base + offset + length]

        elif (blocks := self.block_reader(messages)) is not None:
            data_of = blocks.read  # compact: one block at a time, each inflated once
        else:
            try:
                content = self.member_bytes(messages)
            except NanorecError:
                return  # already reported by the member CRC check

            def data_of(offset: int, length: int) -> bytes:
                return content[offset : offset + length]

        firsts: dict[str, Problem] = {}
        counts: dict[str, int] = {}

        def bad(kind: str, number: int, text: str, offset: int) -> None:
            counts[kind] = counts.get(kind, 0) + 1
            if kind not in firsts:
                firsts[kind] = Problem(
                    kind, text, entry=number, offset=offset, member=MESSAGES_MEMBER
                )

        offsets = index.offset.tolist()
        lengths = index.length.tolist()
        stamps = index.timestamp_us.tolist()
        crcs = index.crc.tolist()
        known = index.crc_known.tolist()
        codes = index.types_code.tolist()
        table = index.types_table
        total = len(index)
        for number in range(total):
            if self.progress is not None and number % _PROGRESS_EVERY == 0:
                self.progress(number, total)
            offset, length = offsets[number], lengths[number]
            absolute = messages.data_start + offset
            try:
                data = data_of(offset, length)
            except NanorecError as error:
                bad("message", number, f"cannot be read ({error.message})", absolute)
                continue
            if known[number] and zlib.crc32(data) != crcs[number]:
                bad(
                    "checksum",
                    number,
                    f"CRC-32 {zlib.crc32(data):#010x}, index records {crcs[number]:#010x}",
                    absolute,
                )
            try:
                message: Any = msgpack.unpackb(data)
            except MSGPACK_ERRORS as error:
                bad("message", number, f"not exactly one msgpack object ({error})", absolute)
                continue
            if type(message) is not dict:
                bad(
                    "message", number, f"decodes to a {type(message).__name__}, not a map", absolute
                )
                continue
            keys = tuple(key for key in message if key != TIMESTAMP_KEY)
            recorded = table[codes[number]]
            if keys != recorded and recorded != _UNKNOWN_TYPES:
                bad(
                    "types",
                    number,
                    f"index types {list(recorded)} but the message has keys {list(keys)}",
                    absolute,
                )
            embedded = message.get(TIMESTAMP_KEY)
            if embedded is not None and embedded != stamps[number]:
                bad(
                    "timestamp",
                    number,
                    f"message carries {TIMESTAMP_KEY}={embedded!r}, index says {stamps[number]}",
                    absolute,
                )
        if self.progress is not None:
            self.progress(total, total)
        for kind, problem in firsts.items():
            if counts[kind] > 1:
                problem = Problem(
                    problem.kind,
                    f"{problem.message} ({counts[kind]} bad entries in all)",
                    entry=problem.entry,
                    offset=problem.offset,
                    member=problem.member,
                )
            self.add(problem)

    def block_reader(self, messages: Member) -> BlockReader | None:
        """The compact layout's block table, when the description has a usable one."""
        member = self.members.get(DESCRIPTION_MEMBER)
        if member is None:
            return None
        try:
            description, rows = self.described(member)
            if rows is not None:  # paged: the block table is in the pages
                offsets, starts = rows
                if not offsets or messages.stored:
                    return None
                return BlockReader.from_rows(
                    self.mm,
                    offsets,
                    starts,
                    data_start=messages.data_start,
                    data_size=messages.size,
                    messages_size=messages.header.uncompressed_size,
                )
            table = description.fields.get("blocks")
            if type(table) is not dict or table.get("size") != messages.size:
                return None  # none, or one left void by another tool deflating the member again
            return BlockReader(
                self.mm,
                table,
                data_start=messages.data_start,
                data_size=messages.size,
                messages_size=messages.header.uncompressed_size,
            )
        except NanorecError as error:
            self.add(Problem("description", error.message, member=DESCRIPTION_MEMBER))
            return None

    def described(self, member: Member) -> tuple[Description, tuple[list[int], list[int]] | None]:
        """The description in `member`, its columns read from its pages when it is paged
        (`nanorec.archive.pages`, then also the block rows), else None. Raises `NanorecError`
        (a damaged page names the page and its byte offset)."""
        description = parse_description(self.member_bytes(member))
        if description.fields.get("pages") is None:
            return description, None
        table = table_of(description.fields, self.members)
        pages = self.members[PAGES_MEMBER]
        base = pages.data_start if pages.stored else 0
        columns, rows_offsets, rows_starts = table.whole(self.member_bytes(pages), base)
        offsets, starts = rows_offsets.tolist(), rows_starts.tolist()
        if not table.blocks_fit:
            offsets = starts = []  # the block rows describe another stream
        return Description(description.fields, columns), (offsets, starts)

    def check_description(self, members: dict[str, Member], index: Index) -> None:
        member = members[DESCRIPTION_MEMBER]
        try:
            description, _ = self.described(member)
            columnar = description.to_index(members[MESSAGES_MEMBER].header.uncompressed_size)
        except NanorecError as error:
            self.add(Problem("description", error.message, member=DESCRIPTION_MEMBER))
            return
        fields = description.fields
        self.check_source(fields.get("source"))
        index_member = members[INDEX_MEMBER].header
        for key, actual in (
            ("index_size", index_member.uncompressed_size),
            ("index_crc32", index_member.crc32),
        ):
            if fields[key] != actual:
                self.add(
                    Problem(
                        "description",
                        f"records {key} {fields[key]} but the archive has {actual}",
                        member=DESCRIPTION_MEMBER,
                    )
                )
        if len(columnar) != len(index):
            self.add(
                Problem(
                    "description",
                    f"counts {len(columnar)} messages, index.msgpack {len(index)}",
                    member=DESCRIPTION_MEMBER,
                )
            )
            return
        # Compare types through the tables: codes may be numbered differently.
        own = {types: code for code, types in enumerate(index.types_table)}
        mapping = np.array([own.get(types, -1) for types in columnar.types_table], dtype=np.int64)
        columns = {
            "offset": (columnar.offset, index.offset),
            "length": (columnar.length, index.length),
            "timestamp_us": (columnar.timestamp_us, index.timestamp_us),
            "crc": (columnar.crc, np.where(index.crc_known, index.crc, columnar.crc)),
            "flags": (columnar.flags, index.flags),
            "types": (
                mapping[columnar.types_code] if len(mapping) else columnar.types_code,
                index.types_code.astype(np.int64),
            ),
        }
        for name, (theirs, ours) in columns.items():
            differ = np.flatnonzero(np.asarray(theirs) != np.asarray(ours))
            if len(differ):
                first = int(differ[0])
                self.add(
                    Problem(
                        "description",
                        f"column {name!r} disagrees with index.msgpack",
                        entry=first,
                        member=DESCRIPTION_MEMBER,
                    )
                )

    def check_source(self, source: Payload) -> None:
        """The messages the converter could not read from its input (see the docstring)."""
        if type(source) is not dict or "messages_lost" not in source:
            return
        lost = source["messages_lost"]
        regions = source.get("damaged")
        if type(lost) is not int or type(regions) is not list:
            self.add(Problem("description", "source damage not recorded as expected"))
            return
        count = f"at least {lost}" if lost else "an unknown number of"
        count += " message" if lost == 1 else " messages"
        self.add(
            Problem(
                "source-damage",
                f"the input it was converted from was damaged, {count} lost: "
                + "; ".join(map(str, regions)),
                member=DESCRIPTION_MEMBER,
            )
        )


def verify(
    path: str | os.PathLike[str], *, progress: Callable[[int, int], None] | None = None
) -> VerifyReport:
    """Check the archive at `path` and report every problem found (first bad entry per kind).

    `progress(done, total)` is called now and then while messages are checked. Damage is
    reported, not raised; `OSError` (missing or unreadable file) passes through. A URL
    (`nanorec.archive.remote`) is checked in place, every byte of it read once by ranges.
    """
    if is_url(path):
        source = RemoteSource(str(path))
        try:
            buffer = RangeBuffer(source, tail=source.tail)
            buffer.sequential = True  # every member is read through: large ranges
            where: Path = url_path(str(path))  # type: ignore[assignment]  # a Path's surface
            return _Verifier(where, buffer, progress).run()
        finally:
            source.close()
    target = Path(path)
    with open(target, "rb") as file:
        if os.fstat(file.fileno()).st_size == 0:
            return VerifyReport(
                path=target, problems=(Problem("truncated", "the file is empty", offset=0),)
            )
        with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            return _Verifier(target, mm, progress).run()


__all__ = ["Problem", "VerifyReport", "verify"]
