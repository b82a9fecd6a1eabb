"""The one exception family of nanorec.

Every problem with the *content* of an input (a recording, an archive) is a
`NanorecError` subclass named after what went wrong. Each carries the byte
`offset` where it was found and, where it makes sense, what was `expected` and
what was `actual`, so a message can point at the exact byte. Operating-system
errors (missing file, permission denied) pass through as `OSError`.
"""

from __future__ import annotations


class NanorecError(Exception):
    """Base class: bad or unsupported input, with the byte offset where it was found."""

    def __init__(
        self,
        message: str,
        *,
        offset: int | None = None,
        expected: object = None,
        actual: object = None,
    ) -> None:
        self.message = message
        self.offset = offset
        self.expected = expected
        self.actual = actual
        super().__init__(str(self))

    def __str__(self) -> str:
        text = self.message
        if self.offset is not None:
            text += f" (at byte offset {self.offset})"
        return text


class TruncatedError(NanorecError):
    """The data ends before a structure it announces is complete."""


class BadMagicError(NanorecError):
    """The file does not start with the signature of the expected format."""


class FormatError(NanorecError):
    """A structure has a value its format does not allow (absurd count, bad size...)."""


class UnsupportedError(NanorecError):
    """Valid input that nanorec cannot handle (an unknown release, a compression method...)."""


class ArchiveError(NanorecError):
    """A nanorec/NanoVer archive is damaged: zip structure, members, or index."""


class IndexMismatchError(ArchiveError):
    """The index disagrees with the messages it describes."""


class ChecksumError(ArchiveError):
    """Stored bytes do not match their recorded checksum."""


class PageError(ArchiveError, FormatError):
    """A page of a paged archive's index (or its page table) is damaged or disagrees with the
    table: named with the page and its byte offset (an `ArchiveError` like every damage to
    an archive, and a `FormatError`: a value the format does not allow)."""


class OutputExistsError(NanorecError):
    """Refusing to overwrite an existing file without `force`/`overwrite`."""


class UsageError(NanorecError, ValueError):
    """An argument the caller gave has a value nanorec cannot use (a NaN time, an empty
    range, an unknown kind)."""


class EmptySelectionError(UsageError):
    """A selection (a time range, message numbers, kinds) that selects nothing: one rule for
    every verb and format, saying which option selected nothing and what there is."""


class OutOfRangeError(UsageError, IndexError):
    """A message or frame number outside the recording (an `IndexError` too, as sequences
    raise)."""


class UnknownNameError(UsageError, KeyError):
    """A name nanorec does not know (a release family, a record kind), listing the known
    ones (a `KeyError` too, as mappings raise)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return NanorecError.__str__(self)


class DamagedError(NanorecError):
    """Input was damaged inside (not merely cut short): some of it could not be read."""


__all__ = [
    "ArchiveError",
    "BadMagicError",
    "ChecksumError",
    "DamagedError",
    "EmptySelectionError",
    "FormatError",
    "IndexMismatchError",
    "NanorecError",
    "OutOfRangeError",
    "OutputExistsError",
    "PageError",
    "TruncatedError",
    "UnknownNameError",
    "UnsupportedError",
    "UsageError",
]
