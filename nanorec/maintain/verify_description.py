"""`verify` against `nanorec.msgpack`: the description's columns (read from its pages when it
is paged) agree with the index, and the damage its `source` map records is reported as
`source-damage`; its block table also lets the message check inflate one block at a time."""

from __future__ import annotations

import numpy as np

from nanorec.archive.blockread import BlockReader
from nanorec.archive.describe import MEMBER_NAME as DESCRIPTION_MEMBER
from nanorec.archive.describe import Description, parse_description
from nanorec.archive.index import Index
from nanorec.archive.members import Member
from nanorec.archive.pages import MEMBER_NAME as PAGES_MEMBER
from nanorec.archive.pagetable import table_of
from nanorec.archive.writer import INDEX_MEMBER, MESSAGES_MEMBER
from nanorec.errors import NanorecError
from nanorec.untyped import Payload

from .verify_findings import Findings, Problem


def block_reader(found: Findings, messages: Member) -> BlockReader | None:
    """The compact layout's block table, when the description has a usable one."""
    member = found.members.get(DESCRIPTION_MEMBER)
    if member is None:
        return None
    try:
        description, rows = described(found, member)
        if rows is not None:  # paged: the block table is in the pages
            offsets, starts = rows
            if not offsets or messages.stored:
                return None
            return BlockReader.from_rows(
                found.mm,
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
            found.mm,
            table,
            data_start=messages.data_start,
            data_size=messages.size,
            messages_size=messages.header.uncompressed_size,
        )
    except NanorecError as error:
        found.add(Problem("description", error.message, member=DESCRIPTION_MEMBER))
        return None


def described(
    found: Findings, member: Member
) -> tuple[Description, tuple[list[int], list[int]] | None]:
    """The description in `member`, its columns read from its pages when it is paged
    (`nanorec.archive.pages`, then also the block rows), else None. Raises `NanorecError`
    (a damaged page names the page and its byte offset)."""
    description = parse_description(found.member_bytes(member))
    if description.fields.get("pages") is None:
        return description, None
    table = table_of(description.fields, found.members)
    pages = found.members[PAGES_MEMBER]
    base = pages.data_start if pages.stored else 0
    columns, rows_offsets, rows_starts = table.whole(found.member_bytes(pages), base)
    offsets, starts = rows_offsets.tolist(), rows_starts.tolist()
    if not table.blocks_fit:
        offsets = starts = []  # the block rows describe another stream
    return Description(description.fields, columns), (offsets, starts)


def check_description(found: Findings, members: dict[str, Member], index: Index) -> None:
    member = members[DESCRIPTION_MEMBER]
    try:
        description, _ = described(found, member)
        columnar = description.to_index(members[MESSAGES_MEMBER].header.uncompressed_size)
    except NanorecError as error:
        found.add(Problem("description", error.message, member=DESCRIPTION_MEMBER))
        return
    fields = description.fields
    check_source(found, fields.get("source"))
    index_member = members[INDEX_MEMBER].header
    for key, actual in (
        ("index_size", index_member.uncompressed_size),
        ("index_crc32", index_member.crc32),
    ):
        if fields[key] != actual:
            found.add(
                Problem(
                    "description",
                    f"records {key} {fields[key]} but the archive has {actual}",
                    member=DESCRIPTION_MEMBER,
                )
            )
    if len(columnar) != len(index):
        found.add(
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
            found.add(
                Problem(
                    "description",
                    f"column {name!r} disagrees with index.msgpack",
                    entry=first,
                    member=DESCRIPTION_MEMBER,
                )
            )


def check_source(found: Findings, source: Payload) -> None:
    """The messages the converter could not read from its input: a converter that read a
    damaged input records `messages_lost` (a lower bound) and `damaged` (one line per region)
    in the description's `source` map, so `verify` never says OK of such an archive."""
    if type(source) is not dict or "messages_lost" not in source:
        return
    lost = source["messages_lost"]
    regions = source.get("damaged")
    if type(lost) is not int or type(regions) is not list:
        found.add(Problem("description", "source damage not recorded as expected"))
        return
    count = f"at least {lost}" if lost else "an unknown number of"
    count += " message" if lost == 1 else " messages"
    found.add(
        Problem(
            "source-damage",
            f"the input it was converted from was damaged, {count} lost: "
            + "; ".join(map(str, regions)),
            member=DESCRIPTION_MEMBER,
        )
    )


__all__ = ["block_reader", "check_description", "check_source", "described"]
