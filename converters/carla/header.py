"""The CARLA recorder file header ("info"): version, magic, date and map name (spec §2).

The header is the only place a CARLA file can be recognised, and it says little about the
release that wrote it (the version is 1 up to 0.9.16 and 2 in the 2026 line, a hint that
`detect.py` weighs), so this module only checks the magic and keeps every byte: the version
is carried as written, the date as the raw signed 64-bit Unix seconds, and the map name
with `surrogateescape` so that a non-UTF-8 name still serializes to the same bytes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from nanorec.buffers import Buffer
from nanorec.errors import BadMagicError, FormatError, TruncatedError

from .ids import HEADER_VERSION, MAGIC

_U16 = struct.Struct("<H")
_I64 = struct.Struct("<q")
_MAGIC_FIELD = _U16.pack(len(MAGIC)) + MAGIC  # the magic as its length-prefixed string


@dataclass(frozen=True)
class Header:
    """A parsed file header.

    `date` is `std::time(0)` at recording start: signed Unix seconds, UTC. `size` is the
    header's length in bytes, i.e. the absolute offset of the first packet.
    """

    version: int
    magic: str
    date: int
    map_name: str
    size: int

    @classmethod
    def parse(cls, buf: Buffer) -> Header:
        """Parse the header at the start of `buf` (a whole file or at least its start).

        Raises `BadMagicError` (offset 2) when the bytes present do not spell the CARLA
        magic, and `TruncatedError` (naming the offset where bytes run out) when `buf`
        ends inside the header.
        """
        view = memoryview(buf).cast("B") if not isinstance(buf, bytes) else buf
        length = len(view)
        # Compare whatever part of the magic is present first: a short file that is
        # clearly something else is "not a CARLA recorder", not "truncated".
        present = bytes(view[2 : 2 + len(_MAGIC_FIELD)])
        if present != _MAGIC_FIELD[: len(present)]:
            raise BadMagicError(
                "file is not a CARLA recorder: the magic string CARLA_RECORDER is missing",
                offset=2,
                expected=_MAGIC_FIELD,
                actual=present,
            )
        magic_end = 2 + len(_MAGIC_FIELD)
        if length < magic_end + _I64.size + _U16.size:
            raise TruncatedError(
                f"CARLA header needs at least {magic_end + _I64.size + _U16.size} bytes, "
                f"the file has {length}",
                offset=length,
                expected=magic_end + _I64.size + _U16.size,
                actual=length,
            )
        (version,) = _U16.unpack_from(view, 0)
        (date,) = _I64.unpack_from(view, magic_end)
        (map_size,) = _U16.unpack_from(view, magic_end + _I64.size)
        map_start = magic_end + _I64.size + _U16.size
        if map_start + map_size > length:
            raise TruncatedError(
                f"CARLA header map name needs {map_size} bytes, "
                f"{length - map_start} left in the file",
                offset=map_start,
                expected=map_size,
                actual=length - map_start,
            )
        map_name = bytes(view[map_start : map_start + map_size]).decode("utf-8", "surrogateescape")
        return cls(version, MAGIC.decode("ascii"), date, map_name, map_start + map_size)

    def serialize(self) -> bytes:
        """The header's bytes; raises `FormatError` if a field does not fit its type."""
        magic = self.magic.encode("utf-8", "surrogateescape")
        map_name = self.map_name.encode("utf-8", "surrogateescape")
        if not 0 <= self.version <= 0xFFFF:
            raise FormatError(f"header version {self.version} does not fit a u16")
        if not -(2**63) <= self.date < 2**63:
            raise FormatError(f"header date {self.date} does not fit an i64")
        if len(magic) > 0xFFFF or len(map_name) > 0xFFFF:
            raise FormatError("header string longer than 65535 bytes")
        return b"".join(
            (
                _U16.pack(self.version),
                _U16.pack(len(magic)),
                magic,
                _I64.pack(self.date),
                _U16.pack(len(map_name)),
                map_name,
            )
        )

    @classmethod
    def new(cls, map_name: str, date: int, *, version: int = HEADER_VERSION) -> Header:
        """A header as CARLA writes it (version 1 unless given, the standard magic); `date`
        in Unix s."""
        size = 2 + len(_MAGIC_FIELD) + 8 + 2 + len(map_name.encode("utf-8", "surrogateescape"))
        return cls(version, MAGIC.decode("ascii"), date, map_name, size)


__all__ = ["Header"]
