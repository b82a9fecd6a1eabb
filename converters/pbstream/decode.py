"""Protobuf payload -> plain dict, driven by the field tables of `schema.py`.

Singular fields: the last occurrence wins; repeated messages become lists; packed scalars
become numpy arrays (also accepted unpacked). Absent fields are absent (proto3: read them
as zero). Fields the tables do not know, or whose wire type does not match, are kept under
`_unknown` as `[number, wire type, value]`, so nothing in the bytes is lost from view. With
`packed=False` packed fields are left out (flat tables, which hold none of those arrays, skip
the varint unpacking that is most of a node's or submap's decoding).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nanorec.errors import FormatError
from nanorec.untyped import Payload

from .schema import KIND_MESSAGES, SCHEMA
from .stream import entry_payload
from .wire import (
    FIXED32,
    FIXED64,
    LEN,
    VARINT,
    as_int32,
    as_sint32,
    double_at,
    float_at,
    iter_fields,
    signed32,
    signed64,
    unpack_varints,
)

_WIRE = {
    "int32": VARINT,
    "int64": VARINT,
    "uint32": VARINT,
    "bool": VARINT,
    "enum": VARINT,
    "double": FIXED64,
    "float": FIXED32,
    "string": LEN,
    "bytes": LEN,
}


def _scalar(kind: str, buf: bytes, a: int) -> int | bool | float:
    if kind in ("int32", "enum"):
        return signed32(a)
    if kind == "int64":
        return signed64(a)
    if kind == "uint32":
        return a & 0xFFFF_FFFF
    if kind == "bool":
        return a != 0
    if kind == "double":
        return double_at(buf, a)
    return float_at(buf, a)


def _packed(kind: str, buf: bytes, a: int, b: int, base: int) -> np.ndarray[Any, Any]:
    view = memoryview(buf)[a:b]
    if kind == "packed_float":
        if (b - a) % 4:
            raise FormatError("a packed float field is not a multiple of 4 bytes", offset=base + a)
        return np.frombuffer(view, "<f4")
    values = unpack_varints(view, base + a)
    return as_sint32(values) if kind == "packed_sint32" else as_int32(values)


def decode_message(
    buf: bytes,
    message: str,
    start: int = 0,
    end: int | None = None,
    base: int = 0,
    *,
    packed: bool = True,
) -> dict[str, Any]:
    """The message of type `message` in `buf[start:end]` as a dict (see the module doc)."""
    spec = SCHEMA[message]
    out: dict[str, Any] = {}
    packed_parts: dict[str, list[np.ndarray[Any, Any]]] = {}
    for number, wire, a, b in iter_fields(buf, start, end, base):
        known = spec.get(number)
        if known is None:
            out.setdefault("_unknown", []).append(_unknown(buf, number, wire, a, b))
            continue
        name, kind, repeated = known
        if kind.startswith("packed_"):
            if not packed:
                continue
            if wire == LEN:
                packed_parts.setdefault(name, []).append(_packed(kind, buf, a, b, base))
                continue
            if kind == "packed_float" and wire == FIXED32:
                packed_parts.setdefault(name, []).append(np.frombuffer(buf[a:b], "<f4"))
                continue
            if kind != "packed_float" and wire == VARINT:
                scalar = np.array([a & 0xFFFF_FFFF_FFFF_FFFF], np.uint64)
                converted = as_sint32(scalar) if kind == "packed_sint32" else as_int32(scalar)
                packed_parts.setdefault(name, []).append(converted)
                continue
        elif kind in _WIRE:
            if wire == _WIRE[kind]:
                if wire == LEN:
                    value: Payload = buf[a:b]
                    if kind == "string":
                        value = value.decode("utf-8", "surrogateescape")
                else:
                    value = _scalar(kind, buf, a)
                _store(out, name, value, repeated)
                continue
        elif wire == LEN:
            _store(out, name, decode_message(buf, kind, a, b, base, packed=packed), repeated)
            continue
        out.setdefault("_unknown", []).append(_unknown(buf, number, wire, a, b))
    for name, parts in packed_parts.items():
        out[name] = parts[0] if len(parts) == 1 else np.concatenate(parts)
    return out


def _store(out: dict[str, Payload], name: str, value: Payload, repeated: bool) -> None:
    if repeated:
        out.setdefault(name, []).append(value)
    else:
        out[name] = value


def _unknown(buf: bytes, number: int, wire: int, a: int, b: int) -> list[Any]:
    if wire == VARINT:
        return [number, wire, a]
    return [number, wire, buf[a:b]]


def decode_record(kind: str, entry: dict[str, Any], *, packed: bool = True) -> dict[str, Any]:
    """The decoded body of an archive record entry (its inner message), or the raw payload
    for unknown and damaged records; `packed=False` leaves packed fields out."""
    message = KIND_MESSAGES.get(kind)
    payload = None if message is None else entry_payload(entry)
    if payload is None or message is None:
        return {}
    if kind == "header" or entry.get("bare"):
        return decode_message(payload, message, packed=packed)
    fields = list(iter_fields(payload))
    if len(fields) != 1 or fields[0][1] != LEN:
        raise FormatError(f"a {kind} record is not one SerializedData field")
    _, _, start, end = fields[0]
    return decode_message(payload, message, start, end, packed=packed)


__all__ = ["decode_message", "decode_record"]
