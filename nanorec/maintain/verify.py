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

The checks live by layer: `verify_zip` (structure, member CRCs), `verify_entries` (index,
messages), `verify_description` (`nanorec.msgpack`, source damage); `verify_findings` holds
what they find. This module runs them in order.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable
from pathlib import Path

from nanorec.archive.describe import MEMBER_NAME as DESCRIPTION_MEMBER
from nanorec.archive.members import open_members
from nanorec.archive.remote import RemoteSource
from nanorec.archive.source import RangeBuffer
from nanorec.archive.urls import is_url, url_path
from nanorec.archive.writer import INDEX_MEMBER, MESSAGES_MEMBER
from nanorec.errors import NanorecError

from .verify_description import check_description
from .verify_entries import check_index, check_messages
from .verify_findings import Findings, Problem, VerifyReport, problem_from
from .verify_zip import check_local_headers, check_member_crc, check_overlaps


def _run(found: Findings, progress: Callable[[int, int], None] | None) -> VerifyReport:
    """Every check, layer by layer; a layer that cannot be read stops the ones above it."""
    try:
        _, members = open_members(found.mm)
    except NanorecError as error:
        found.add(problem_from(error, "zip"))
        return found.report()
    found.members = members
    check_local_headers(found, members)
    check_overlaps(found, members)
    for member in members.values():
        check_member_crc(found, member)
    missing = [name for name in (MESSAGES_MEMBER, INDEX_MEMBER) if name not in members]
    for name in missing:
        found.add(Problem("missing-member", f"the archive has no {name}", member=name))
    if missing:
        return found.report(members=members)
    index = check_index(found, members)
    if index is not None:
        check_messages(found, members[MESSAGES_MEMBER], index, progress)
        if DESCRIPTION_MEMBER in members:
            check_description(found, members, index)
    return found.report(members=members, count=None if index is None else len(index))


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
            return _run(Findings(where, buffer), progress)
        finally:
            source.close()
    target = Path(path)
    with open(target, "rb") as file:
        if os.fstat(file.fileno()).st_size == 0:
            return VerifyReport(
                path=target, problems=(Problem("truncated", "the file is empty", offset=0),)
            )
        with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            return _run(Findings(target, mm), progress)


__all__ = ["Problem", "VerifyReport", "verify"]
