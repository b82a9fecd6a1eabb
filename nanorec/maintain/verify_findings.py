"""What `verify` found: one `Problem` per finding, the `VerifyReport`, and `Findings`, the
archive's bytes and members with the problems collected so far, which every check module
shares (problems are collected, not raised: see `nanorec.maintain.verify`)."""

from __future__ import annotations

import mmap
from dataclasses import dataclass, field
from pathlib import Path

from nanorec.archive.describe import MEMBER_NAME as DESCRIPTION_MEMBER
from nanorec.archive.members import Member, iter_member_data
from nanorec.archive.source import RangeBuffer
from nanorec.errors import NanorecError, TruncatedError


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


def problem_from(error: NanorecError, kind: str, member: str | None = None) -> Problem:
    """The problem `error` stands for: of `kind`, or `truncated` when the bytes ran out."""
    return Problem(
        kind="truncated" if isinstance(error, TruncatedError) else kind,
        message=error.message,
        offset=error.offset,
        member=member,
    )


class Findings:
    """The archive being checked (its bytes, its members once the zip opened) and the
    problems found so far, in the order found, each once."""

    def __init__(self, path: Path, mm: mmap.mmap | RangeBuffer) -> None:
        self.path = path
        self.mm = mm
        self.members: dict[str, Member] = {}
        self.problems: list[Problem] = []

    def add(self, problem: Problem) -> None:
        if problem not in self.problems:  # a damaged description is met twice (blocks, columns)
            self.problems.append(problem)

    def member_bytes(self, member: Member) -> bytes:
        if member.stored:
            return self.mm[member.data_start : member.data_start + member.size]
        return b"".join(iter_member_data(self.mm, member))

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


__all__ = ["Findings", "Problem", "VerifyReport", "problem_from"]
