"""Values -> ROS 2 CDR payloads by generated code: the fast twin of `cdr_encode.Encoder`.

The plain `Encoder` walks the type model for every message: a dict lookup, a `struct.pack`
and an alignment computation per field. Writing a recording's standard messages as a bag
(`nanorec export run.log --format ros2`) encodes millions of them, so here, as `cdr.Decoder`
does for reading, one Python function is generated per (type, alignment known on entry) from
the type model: alignment is followed while the code is written, so most padding is constant
and lands inside one `struct.pack` with the fixed-size fields around it (a `Header`'s stamp,
a whole `Pose`: one call), nested messages are inlined, and arrays of messages are loops
whose body is generated for the alignment every iteration starts at (a fixed point).

The bytes are the plain encoder's, always: numeric arrays follow the same rules (a numpy
array is cast to the field's type and copied whole, a list packed element by element, an
empty array is not aligned), and a value the generated code cannot take (a missing field, a
number out of range) is handed to the plain encoder, which then gives its bytes or its error.
`tests/converters/ros2/test_cdr_pack.py` checks both against each other and `rosbags`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from typing import Any, Final

import numpy as np

from nanorec.errors import UsageError
from nanorec.untyped import Namespace, Payload

from .cdr import State, after, join_states
from .cdr_encode import Encoder
from .msgdef import EMPTY_FIELD, SIZES, MsgType, canonical, load

_CODES: Final = {
    "bool": "?", "byte": "B", "char": "B", "int8": "b", "uint8": "B", "int16": "h",
    "uint16": "H", "wchar": "H", "int32": "i", "uint32": "I", "float32": "f", "int64": "q",
    "uint64": "Q", "float64": "d",
}  # fmt: skip
_DTYPES: Final = {
    "int8": "i1", "uint8": "u1", "byte": "u1", "char": "u1", "int16": "i2", "uint16": "u2",
    "int32": "i4", "uint32": "u4", "int64": "i8", "uint64": "u8", "float32": "f4",
    "float64": "f8",
}  # fmt: skip
#: Problems the generated code may meet in a value; the plain encoder then decides.
_VALUE_ERRORS: Final = (KeyError, TypeError, ValueError, AttributeError, IndexError, struct.error)

Pack = Callable[[Payload, bytearray], None]


def _numbers(items: Any, type_name: str, order: str) -> bytes:
    """An array's elements' bytes, as the plain encoder makes them."""
    if isinstance(items, np.ndarray) and type_name in _DTYPES:
        return np.ascontiguousarray(items, dtype=np.dtype(order + _DTYPES[type_name])).tobytes()
    code = order + _CODES[type_name] * len(items)
    return struct.pack(code, *(x.item() if hasattr(x, "item") else x for x in items))


def _wrong_length(where: str, n: int, size: int) -> None:
    raise UsageError(f"{where}: {n} elements, the array has {size}")


class _Generator:
    """Generates the functions encoding one root type in one byte order."""

    def __init__(self, root: str, types: dict[str, MsgType], order: str) -> None:
        self.root, self.types, self.order = root, types, order
        self.lines: list[str] = []
        self.names: dict[tuple[str, State], str] = {}
        self.exits: dict[tuple[str, State], State] = {}
        self.namespace: Namespace = {
            "P32": struct.Struct(order + "I").pack,
            "Z": [bytes(n) for n in range(8)],
            "numbers": _numbers,
            "wrong_length": _wrong_length,
            "ndarray": np.ndarray,
        }
        self.count = 0

    def compile(self) -> Pack:
        name, _ = self.function(self.root, (8, 0))
        exec("\n".join(self.lines), self.namespace)
        return self.namespace[name]  # type: ignore[no-any-return]

    def fresh(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def function(self, name: str, state: State) -> tuple[str, State]:
        """The function encoding `name` entered at `state`, and the state it leaves."""
        key = (name, state)
        if key in self.exits:
            return self.names[key], self.exits[key]
        if key in self.names:  # being generated (a type within itself): assume nothing
            if state == (1, 0):
                return self.names[key], (1, 0)
            return self.function(name, (1, 0))[0], (1, 0)
        if name not in self.types:
            raise UsageError(f"{self.root}: the definition has no type {name}")
        function = self.names[key] = f"e{len(self.names)}"
        body: list[str] = []
        run = _Run(self, body)
        state = self.struct(name, "v", state, run, "    ", frozenset({name}))
        run.flush("    ")
        self.lines += [f"def {function}(v, o):", *(body or ["    pass"])]
        self.exits[key] = state
        return function, state

    def struct(
        self, name: str, value: str, state: State, run: _Run, ind: str, within: frozenset[str]
    ) -> State:
        """Lines encoding the message `value` (an expression) of type `name`."""
        msg = self.types[name]
        for f in msg.fields:
            item = (
                f"{value}.get({f.name!r}, 0)" if f.name == EMPTY_FIELD else f"{value}[{f.name!r}]"
            )
            if f.array is None and f.type in SIZES:
                state = run.scalar(f.type, item, state)
            elif f.array is None and f.type in ("string", "wstring"):
                run.flush(ind)
                state = self.string(f.type, item, state, run.body, ind)
            elif f.array is None and f.type in self.types and f.type not in within:
                state = self.struct(f.type, self.bind(item, run, ind), state, run, ind,
                                    within | {f.type})  # fmt: skip
            elif f.array is None:
                run.flush(ind)
                function, state = self.function(f.type, state)
                run.body.append(f"{ind}{function}({item}, o)")
            else:
                run.flush(ind)
                state = self.array(f.type, f.array, item, state, run.body, ind, f"{name}.{f.name}")
        return state

    def bind(self, item: str, run: _Run, ind: str) -> str:
        """A local holding `item` (a nested message read once, whatever its fields)."""
        local = self.fresh("m")
        run.body.append(f"{ind}{local} = {item}")
        return local

    def align(self, state: State, k: int, body: list[str], ind: str) -> State:
        """Lines aligning the output to `k`: constant padding where `state` says enough."""
        m, r = state
        if k == 1:
            return state
        if m >= k:
            pad = -r % k
            if pad:
                body.append(f"{ind}o += Z[{pad}]")
            return m, (r + pad) % m
        # the origin (4 bytes in) is a multiple of k <= 4, not of 8
        body.append(f"{ind}o += Z[-(len(o) - 4) % 8]" if k == 8 else f"{ind}o += Z[-len(o) % {k}]")
        return k, 0

    def string(self, kind: str, item: str, state: State, body: list[str], ind: str) -> State:
        state = self.align(state, 4, body, ind)
        s = self.fresh("s")
        if kind == "string":
            body += [
                f"{ind}{s} = {item}",
                f"{ind}{s} = {s}.encode() if isinstance({s}, str) else bytes({s})",
                f"{ind}o += P32(len({s}) + 1)",
                f"{ind}o += {s}",
                f"{ind}o.append(0)",
            ]
            return 1, 0
        codec = "utf-16-le" if self.order == "<" else "utf-16-be"
        body += [
            f"{ind}{s} = {item}.encode({codec!r})",
            f"{ind}o += P32(len({s}) // 2)",
            f"{ind}o += {s}",
        ]
        return 2, 0

    def array(self, name: str, size: int, item: str, state: State, body: list[str], ind: str,
              where: str) -> State:  # fmt: skip
        """Lines encoding a fixed array (`size` > 0) or a sequence (-1) of `name`."""
        a = self.fresh("a")
        body += [
            f"{ind}{a} = {item}",
            f"{ind}if not isinstance({a}, ndarray): {a} = list({a})",
        ]
        if size > 0:
            body.append(f"{ind}if len({a}) != {size}: wrong_length({where!r}, len({a}), {size})")
        else:
            state = self.align(state, 4, body, ind)
            body.append(f"{ind}o += P32(len({a}))")
            state = after(state, 4)
        if name in SIZES:
            k = SIZES[name]
            if size > 0:  # never empty: constant padding where known
                state = self.align(state, k, body, ind)
                body.append(f"{ind}o += numbers({a}, {name!r}, {self.order!r})")
                return after(state, size * k)
            lines: list[str] = []
            aligned = self.align(state, k, lines, ind + "    ")
            body.append(f"{ind}if len({a}):")
            body += lines
            body.append(f"{ind}    o += numbers({a}, {name!r}, {self.order!r})")
            return join_states(state, (k, 0) if aligned[0] >= k else aligned)
        if name in ("string", "wstring"):
            e = self.fresh("x")
            body.append(f"{ind}for {e} in {a}:")
            state = self.loop(lambda s, lines: self.string(name, e, s, lines, ind + "    "),
                              state, body)  # fmt: skip
            return state
        e = self.fresh("x")
        body.append(f"{ind}for {e} in {a}:")

        def one(s: State, lines: list[str]) -> State:
            function, after = self.function(name, s)
            lines.append(f"{ind}    {function}({e}, o)")
            return after

        return self.loop(one, state, body)

    def loop(
        self, one: Callable[[State, list[str]], State], state: State, body: list[str]
    ) -> State:
        """A loop's body for the state every iteration starts at (a fixed point), appended;
        the state after the loop (none or some iterations)."""
        while True:
            lines: list[str] = []
            after = one(state, lines)
            joined = join_states(state, after)
            if joined == state:
                body += lines or ["        pass"]
                return state
            state = joined


class _Run:
    """Fixed-size scalars (and constant padding) waiting to become one `struct.pack`."""

    def __init__(self, generator: _Generator, body: list[str]) -> None:
        self.generator, self.body = generator, body
        self.codes: list[str] = []
        self.items: list[str] = []

    def scalar(self, type_name: str, item: str, state: State) -> State:
        k = SIZES[type_name]
        m, r = state
        if k > m:  # padding unknown here: write what waits, then align at run time
            self.flush("    ")
            state = self.generator.align(state, k, self.body, "    ")
        elif -r % k:
            self.codes.append(f"{-r % k}x")
            state = after(state, -r % k)
        self.codes.append(_CODES[type_name])
        self.items.append(item)
        return after(state, k)

    def flush(self, ind: str) -> None:
        if not self.codes:
            return
        fmt = self.generator.order + "".join(self.codes)
        pack = self.generator.fresh("S")
        self.generator.namespace[pack] = struct.Struct(fmt).pack
        self.body.append(f"{ind}o += {pack}({', '.join(self.items)})")
        self.codes, self.items = [], []


class Packer:
    """Encode values (dicts, as `Decoder` gives them) of the types `definitions` define,
    by generated code; the same bytes as `Encoder.encode`."""

    def __init__(self, definitions: Mapping[str, tuple[str, str]]) -> None:
        self.definitions = dict(definitions)
        self.reference = Encoder(self.definitions)
        self._packs: dict[tuple[str, str], Pack] = {}

    def function(self, type_name: str, order: str = "<") -> Pack:
        """The generated function appending a `type_name` message to a payload that holds
        its 4-byte header so far."""
        root = canonical(type_name)
        key = (root, order)
        if key not in self._packs:
            types = load(self.definitions, root)
            self._packs[key] = _Generator(root, types, order).compile()
        return self._packs[key]

    def encode(
        self, type_name: str, value: Mapping[str, Any], *, big_endian: bool = False
    ) -> bytes:
        """The payload (4-byte header, then the message) of `value` as `type_name`."""
        out = bytearray(b"\x00\x00\x00\x00" if big_endian else b"\x00\x01\x00\x00")
        try:
            self.function(type_name, ">" if big_endian else "<")(value, out)
        except _VALUE_ERRORS:
            return self.reference.encode(type_name, value, big_endian=big_endian)
        return bytes(out)
