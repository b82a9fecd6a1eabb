"""ROS1 message definitions -> decoders, without ROS.

A connection's `message_definition` is the `.msg` text of its type followed by each nested
type's text after a line of `=` and a line `MSG: pkg/Type`. `Decoder` parses it once and
generates one Python function per type (as genpy does), grouping runs of fixed-size scalars
into a single `struct.unpack_from`; numeric arrays come out as numpy arrays (zero-copy
views of the payload), strings as `str` (as `bytes` when not UTF-8), time and duration as
`{"secs", "nsecs"}`. Field names only ever appear in the generated code as string literals.

A payload never makes the decoder allocate more than it holds: an array of `n` elements needs
`n` times its element's least size in the bytes left, and elements of a zero-size type (as
`std_msgs/Empty`) are capped per message (`MAX_EMPTY`), since no byte count bounds them. A
type that contains itself other than through a variable-length array is refused: its
messages would never end.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from nanorec.errors import FormatError
from nanorec.untyped import Namespace, Payload

from ..common.depth import check_depth

#: Builtin scalar -> (struct code, numpy dtype).
SCALARS: Final = {
    "bool": ("?", "?"),
    "int8": ("b", "i1"),
    "byte": ("b", "i1"),
    "uint8": ("B", "u1"),
    "char": ("B", "u1"),
    "int16": ("h", "<i2"),
    "uint16": ("H", "<u2"),
    "int32": ("i", "<i4"),
    "uint32": ("I", "<u4"),
    "int64": ("q", "<i8"),
    "uint64": ("Q", "<u8"),
    "float32": ("f", "<f4"),
    "float64": ("d", "<f8"),
}
_SIZES: Final = {name: struct.calcsize("<" + code) for name, (code, _) in SCALARS.items()}
_FIELD: Final = re.compile(r"^\s*([A-Za-z][\w/]*)\s*(\[(\d*)\])?\s+([A-Za-z]\w*)\s*(=.*)?$")
_SEPARATOR: Final = re.compile(r"^=+$")
#: Elements of zero-size types one message may hold (they take no bytes to bound them).
MAX_EMPTY: Final = 1 << 16

#: A generated function: (payload, position, [zero-size elements left]) -> (value, end).
Decode = Callable[[bytes, int, list[int]], tuple[Payload, int]]


@dataclass(frozen=True)
class Field:
    type: str  # builtin name or a full "pkg/Type"
    name: str
    array: int | None  # None: not an array; -1: variable length; n: fixed length n


def parse_definition(type_name: str, text: str) -> dict[str, list[Field]]:
    """Every type of a connection's definition: `{"pkg/Type": [Field, ...]}`."""
    sections: list[tuple[str, list[str]]] = [(type_name, [])]
    for line in text.splitlines():
        stripped = line.strip()
        if _SEPARATOR.match(stripped) and len(stripped) >= 3:
            sections.append(("", []))
        elif stripped.startswith("MSG:") and not sections[-1][0] and not sections[-1][1]:
            sections[-1] = (stripped[4:].strip(), [])
        else:
            sections[-1][1].append(line)
    known = {name for name, _ in sections if name}
    types: dict[str, list[Field]] = {}
    for name, lines in sections:
        if not name:
            continue
        package = name.split("/")[0] if "/" in name else ""
        fields = []
        for line in lines:
            code = line.split("#", 1)[0].strip()
            if not code or "=" in code:
                continue  # a comment, or a constant (no bytes; a string one may hold '#')
            match = _FIELD.match(code)
            if match is None:
                raise FormatError(f"cannot parse line {line.strip()!r} of {name}")
            base, bracket, count, field_name, _ = match.groups()
            array = None if bracket is None else (int(count) if count else -1)
            fields.append(Field(_resolve(base, package, known), field_name, array))
        types[name] = fields
    check_depth(type_name, lambda name: [f.type for f in types.get(name, ()) if f.type in types])
    return types


def _resolve(base: str, package: str, known: set[str]) -> str:
    if base in SCALARS or base in ("string", "time", "duration"):
        return base
    if "/" in base:
        return base
    if base == "Header":
        return "std_msgs/Header"
    if f"{package}/{base}" in known or package:
        candidate = f"{package}/{base}"
        if candidate in known:
            return candidate
    matches = [k for k in known if k.rsplit("/", 1)[-1] == base]
    return matches[0] if matches else f"{package}/{base}"


def _short(n: int, name: str, size: int, left: int, at: int) -> None:
    raise FormatError(
        f"an array of {n} {name} needs at least {n * size} bytes, {left} are left", offset=at
    )


def _many(n: int, name: str, at: int) -> None:
    raise FormatError(
        f"an array of {n} {name} (zero bytes each) exceeds the {MAX_EMPTY} such elements "
        "nanorec decodes per message",
        offset=at,
    )


def _text(data: bytes) -> str | bytes:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data


class Decoder:
    """Decode payloads of one connection's type (see the module docstring)."""

    def __init__(self, type_name: str, definition: str) -> None:
        self.type_name = type_name
        self.types = parse_definition(type_name, definition)
        self._sizes: dict[str, int] = {}
        self._names: dict[str, str] = {}
        self._lines: list[str] = []
        self._generate(type_name)
        namespace: Namespace = {
            "unpack": struct.unpack_from,
            "frombuffer": np.frombuffer,
            "text": _text,
            "U32": struct.Struct("<I").unpack_from,
            "Bad": FormatError,
            "short": _short,
            "many": _many,
        }
        exec("\n".join(self._lines), namespace)
        self._decode: Decode = namespace[self._names[type_name]]

    def decode(self, data: bytes) -> dict[str, Any]:
        """The message in `data` as a dict; `FormatError` when it does not fit the type."""
        try:
            value, end = self._decode(data, 0, [MAX_EMPTY])
        except FormatError as error:
            raise FormatError(
                f"payload does not match {self.type_name}: {error.message}", offset=error.offset
            ) from None
        except (struct.error, ValueError, IndexError, TypeError, RecursionError):
            raise FormatError(  # a field or an array's length runs past the payload's end
                f"payload of {len(data)} bytes ends inside a {self.type_name}"
            ) from None
        if end != len(data):
            raise FormatError(
                f"payload of {len(data)} bytes, {self.type_name} reads {end}", offset=end
            )
        return value  # type: ignore[no-any-return]

    def least_size(self, type_name: str, within: frozenset[str] = frozenset()) -> int:
        """The fewest bytes a value of `type_name` takes; `FormatError` for a type that
        contains itself other than through a variable-length array."""
        if type_name in _SIZES:
            return _SIZES[type_name]
        if type_name in ("string", "time", "duration"):
            return 4 if type_name == "string" else 8
        if type_name in self._sizes:
            return self._sizes[type_name]
        if type_name in within:
            raise FormatError(f"{type_name} contains itself: its messages would never end")
        if type_name not in self.types:
            raise FormatError(f"the definition has no type {type_name!r}")
        inner = within | {type_name}
        size = 0
        for f in self.types[type_name]:
            if f.array is None or f.array > 0:
                size += (f.array or 1) * self.least_size(f.type, inner)
            else:
                size += 4 if f.array < 0 else 0
        self._sizes[type_name] = size
        return size

    def _generate(self, type_name: str) -> str:
        if type_name in self._names:
            return self._names[type_name]
        self.least_size(type_name)
        function = f"decode_{len(self._names)}"
        self._names[type_name] = function
        body = [f"def {function}(b, p, c):", "    m = {}"]
        run: list[Field] = []

        def flush() -> None:
            if not run:
                return
            fmt = "<" + "".join(SCALARS[f.type][0] for f in run)
            size = struct.calcsize(fmt)
            targets = ", ".join(f"m[{f.name!r}]" for f in run)
            body.append(f"    {targets}, = unpack({fmt!r}, b, p)")
            body.append(f"    p += {size}")
            run.clear()

        for f in self.types[type_name]:
            if f.array is None and f.type in SCALARS:
                run.append(f)
                continue
            flush()
            key = repr(f.name)
            if f.array is None:
                body += self._single(f.type, f"m[{key}]")
            else:
                count = "n"
                if f.array < 0:
                    body += ["    n, = U32(b, p)", "    p += 4"]
                else:
                    body.append(f"    n = {f.array}")
                if f.type in SCALARS:
                    dtype = SCALARS[f.type][1]
                    body += [
                        f"    m[{key}] = frombuffer(b, {dtype!r}, {count}, p)",
                        f"    p += {count} * {_SIZES[f.type]}",
                    ]
                else:
                    size = self.least_size(f.type)
                    if size:
                        body.append(
                            f"    if n * {size} > len(b) - p: "
                            f"short(n, {f.type!r}, {size}, len(b) - p, p)"
                        )
                    else:
                        body += ["    c[0] -= n", f"    if c[0] < 0: many(n, {f.type!r}, p)"]
                    body += ["    a = []", "    for _ in range(n):"]
                    body += ["    " + line for line in self._single(f.type, "v")]
                    body += ["        a.append(v)", f"    m[{key}] = a"]
        flush()
        body.append("    return m, p")
        self._lines += body
        return function

    def _single(self, type_name: str, target: str) -> list[str]:
        """Lines decoding one value of `type_name` into `target`."""
        if type_name in SCALARS:
            code = SCALARS[type_name][0]
            return [
                f"    {target}, = unpack('<{code}', b, p)",
                f"    p += {_SIZES[type_name]}",
            ]
        if type_name == "string":
            return [
                "    s, = U32(b, p)",
                "    if p + 4 + s > len(b): raise Bad(f'a string of {s} bytes runs past the "
                "payload', offset=p)",
                f"    {target} = text(bytes(b[p + 4 : p + 4 + s]))",
                "    p += 4 + s",
            ]
        if type_name in ("time", "duration"):
            code = "I" if type_name == "time" else "i"
            return [
                f"    t = unpack('<{code}{code}', b, p)",
                f"    {target} = {{'secs': t[0], 'nsecs': t[1]}}",
                "    p += 8",
            ]
        function = self._generate(type_name)
        return [f"    {target}, p = {function}(b, p, c)"]
