"""`verify`'s entry layer: the index parses the way NanoVer needs it and its entries tile the
messages member; each entry decodes to one msgpack map whose keys, `"nanorec.t"` and CRC-32
match the index. Only the first bad entry of each kind is named, with a count of all."""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any, Final

import msgpack
import numpy as np

from nanorec.archive.archive_file import MSGPACK_ERRORS
from nanorec.archive.index import Index
from nanorec.archive.index_parse import parse_entries
from nanorec.archive.members import Member
from nanorec.archive.wire import TIMESTAMP_KEY
from nanorec.archive.writer import INDEX_MEMBER, MESSAGES_MEMBER
from nanorec.errors import NanorecError

from .verify_description import block_reader
from .verify_findings import Findings, Problem, problem_from

_PROGRESS_EVERY: Final = 65536
#: Stands for "no types in the index entry" (allowed by NanoVer): nothing to compare.
_UNKNOWN_TYPES: Final = ("\x00types not recorded",)


def check_index(found: Findings, members: dict[str, Member]) -> Index | None:
    messages = members[MESSAGES_MEMBER]
    try:
        data = found.member_bytes(members[INDEX_MEMBER])
    except NanorecError as error:
        found.add(problem_from(error, "index", INDEX_MEMBER))
        return None
    try:
        parsed = parse_entries(data, types_of=lambda offset, length: _UNKNOWN_TYPES)
    except NanorecError as error:
        found.add(problem_from(error, "index", INDEX_MEMBER))
        return None
    index = parsed.index
    if parsed.unknown_timestamps:
        found.add(
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
        found.add(
            Problem("index-range", error.message, entry=int(np.argmax(bad)), member=INDEX_MEMBER)
        )
        return None
    expected = np.cumsum(index.length) - index.length
    gaps = np.flatnonzero(index.offset != expected)
    if len(gaps):
        first = int(gaps[0])
        found.add(
            Problem(
                "not-contiguous",
                f"entry starts at {int(index.offset[first])}, the previous entry ends at "
                f"{int(expected[first])}",
                entry=first,
                member=INDEX_MEMBER,
            )
        )
    elif int(index.length.sum()) != size:
        found.add(
            Problem(
                "not-contiguous",
                f"entries cover {int(index.length.sum())} of the {size} message bytes",
                entry=len(index) - 1 if len(index) else None,
                member=INDEX_MEMBER,
            )
        )
    return index


def check_messages(
    found: Findings,
    messages: Member,
    index: Index,
    progress: Callable[[int, int], None] | None,
) -> None:
    if messages.stored:
        base = messages.data_start
        mm = found.mm

        def data_of(offset: int, length: int) -> bytes:
            return mm[base + offset : base + offset + length]

    elif (blocks := block_reader(found, messages)) is not None:
        data_of = blocks.read  # compact: one block at a time, each inflated once
    else:
        try:
            content = found.member_bytes(messages)
        except NanorecError:
            return  # already reported by the member CRC check

        def data_of(offset: int, length: int) -> bytes:
            return content[offset : offset + length]

    firsts: dict[str, Problem] = {}
    counts: dict[str, int] = {}

    def bad(kind: str, number: int, text: str, offset: int) -> None:
        counts[kind] = counts.get(kind, 0) + 1
        if kind not in firsts:
            firsts[kind] = Problem(kind, text, entry=number, offset=offset, member=MESSAGES_MEMBER)

    offsets = index.offset.tolist()
    lengths = index.length.tolist()
    stamps = index.timestamp_us.tolist()
    crcs = index.crc.tolist()
    known = index.crc_known.tolist()
    codes = index.types_code.tolist()
    table = index.types_table
    total = len(index)
    for number in range(total):
        if progress is not None and number % _PROGRESS_EVERY == 0:
            progress(number, total)
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
            bad("message", number, f"decodes to a {type(message).__name__}, not a map", absolute)
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
    if progress is not None:
        progress(total, total)
    for kind, problem in firsts.items():
        if counts[kind] > 1:
            problem = Problem(
                problem.kind,
                f"{problem.message} ({counts[kind]} bad entries in all)",
                entry=problem.entry,
                offset=problem.offset,
                member=problem.member,
            )
        found.add(problem)


__all__ = ["check_index", "check_messages"]
