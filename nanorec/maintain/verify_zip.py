"""`verify`'s zip layer: local headers agree with the central directory, members do not
overlap, each member's bytes match its CRC-32 and size (a flipped byte shows here first)."""

from __future__ import annotations

import itertools
import zlib

from nanorec.archive.members import Member, iter_member_data
from nanorec.archive.zipfile64 import FLAG_DATA_DESCRIPTOR, LocalHeader
from nanorec.errors import NanorecError

from .verify_findings import Findings, Problem, problem_from


def check_local_headers(found: Findings, members: dict[str, Member]) -> None:
    for member in members.values():
        central = member.header
        try:
            local = LocalHeader.parse(found.mm, central.local_header_offset)
        except NanorecError as error:
            found.add(problem_from(error, "zip", member.name))
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
            found.add(
                Problem(
                    "zip",
                    "local header disagrees with the central directory: " + ", ".join(mismatches),
                    offset=central.local_header_offset,
                    member=member.name,
                )
            )


def check_overlaps(found: Findings, members: dict[str, Member]) -> None:
    ordered = sorted(members.values(), key=lambda m: m.header.local_header_offset)
    for current, following in itertools.pairwise(ordered):
        end = current.data_start + current.size
        if end > following.header.local_header_offset:
            found.add(
                Problem(
                    "zip",
                    f"data runs into the next member {following.name!r}",
                    offset=end,
                    member=current.name,
                )
            )


def check_member_crc(found: Findings, member: Member) -> None:
    crc = 0
    size = 0
    try:
        for chunk in iter_member_data(found.mm, member):
            crc = zlib.crc32(chunk, crc)
            size += len(chunk)
    except NanorecError as error:
        found.add(problem_from(error, "member-crc", member.name))
        return
    if size != member.header.uncompressed_size:
        found.add(
            Problem(
                "member-crc",
                f"holds {size} bytes, the central directory says {member.header.uncompressed_size}",
                member=member.name,
            )
        )
    elif crc != member.header.crc32:
        found.add(
            Problem(
                "member-crc",
                f"CRC-32 is {crc:#010x} but the central directory records "
                f"{member.header.crc32:#010x}",
                offset=member.data_start,
                member=member.name,
            )
        )


__all__ = ["check_local_headers", "check_member_crc", "check_overlaps"]
