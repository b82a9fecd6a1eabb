"""ROS 2 CDR payloads -> dicts, without ROS.

A payload is a 4-byte encapsulation header (`00 01` little-endian CDR, `00 00` big-endian,
then 2 option bytes) and the message in XCDR1 as the ROS 2 middlewares write it: each
primitive aligned to its size (8-byte ones to 8) counting from the byte after the header;
strings as a uint32 length that counts a NUL, the bytes and the NUL; wstrings as a uint32
count of UTF-16 code units and the units (no NUL); sequences as a uint32 count and the
elements; fixed arrays as the elements alone.

`Decoder` generates one Python function per (type, byte order, alignment known on entry), as
the ROS 1 decoder does: alignment is tracked while generating, so padding is a constant
where it can be, runs of fixed-size scalars are one `struct` unpack, and numeric arrays come
out as numpy views of the payload (read-only; dtype in the payload's byte order). Strings are
`str` (`bytes` when not UTF-8), times `{"sec", "nanosec"}` dicts, like any nested message.

A payload never makes the decoder allocate more than it holds: a sequence of `n` elements
needs `n` times its element's least size in the bytes left. Every problem is a `FormatError`
or `TruncatedError` naming the type, the field and the byte offset; to name the field of a
failed fixed-size read, the payload is decoded again by a traced variant (errors only).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from typing import Any, Final

import numpy as np

from nanorec.errors import FormatError, NanorecError, TruncatedError, UnsupportedError
from nanorec.untyped import Namespace, Payload

from .msgdef import SIZES, STRINGS, MsgType, canonical, load

_CODES: Final = {
    "bool": "?", "byte": "B", "char": "B", "int8": "b", "uint8": "B", "int16": "h",
    "uint16": "H", "wchar": "H", "int32": "i", "uint32": "I", "float32": "f", "int64": "q",
    "uint64": "Q", "float64": "d",
}  # fmt: skip
DTYPES: Final = {
    "bool": "?", "byte": "u1", "char": "u1", "int8": "i1", "uint8": "u1", "int16": "i2",
    "uint16": "u2", "wchar": "u2", "int32": "i4", "uint32": "u4", "float32": "f4", "int64": "i8",
    "uint64": "u8", "float64": "f8",
}  # fmt: skip
#: Trailing bytes a payload may have after its message (writers pad to 4).
PADDING: Final = 3

State = tuple[int, int]  # (m, r): the position minus the origin is r modulo m
#: A field's path and the offset it starts at, kept up to date by a traced decode.
Trace = list[str | int]
#: A generated decoder: (payload, position, trace or None) -> (value, end).
Decode = Callable[[bytes | memoryview, int, Trace | None], tuple[Payload, int]]
#: A payload's message as a dict, or None where the plain path does not take it.
PlainDecoder = Callable[[bytes | memoryview], dict[str, Payload] | None]


def join_states(a: State, b: State) -> State:
    """What is known of the position when it is either `a` or `b` (the generated decoders,
    `cdr_pack`'s encoders and the ROS1 transcoder all track alignment this way)."""
    m = min(a[0], b[0])
    while a[1] % m != b[1] % m:
        m //= 2
    return m, a[1] % m


def after(state: State, size: int) -> State:
    """What is known of the position `size` bytes further on."""
    return state[0], (state[1] + size) % state[0]


def _short(n: int, what: str, size: int, left: int, at: int, where: str) -> None:
    raise TruncatedError(
        f"{where}: a sequence of {n} {what} needs at least {n * size} bytes, {left} are left",
        offset=at,
    )


def _bad_string(b: bytes | memoryview, p: int, n: int, where: str) -> None:
    if p + 4 + n > len(b):
        raise TruncatedError(f"{where}: a string of {n} bytes runs past the payload", offset=p)
    raise FormatError(f"{where}: a string of {n} bytes does not end in NUL", offset=p)


def _over(n: int, bound: int, at: int, where: str) -> None:
    raise FormatError(f"{where}: {n} elements in a sequence bounded to {bound}", offset=at)


def _wtext(data: bytes, codec: str) -> str | bytes:
    try:
        return data.decode(codec)
    except UnicodeDecodeError:
        return data


class _Generator:
    """Generates the functions decoding one root type in one byte order."""

    def __init__(
        self, root: str, types: dict[str, MsgType], order: str, trace: bool, plain: bool = False
    ) -> None:
        self.root, self.types, self.order, self.trace = root, types, order, trace
        #: Numeric arrays as lists (`plain`: values JSON takes as they are), else numpy views.
        self.tolist = ".tolist()" if plain else ""
        self.lines: list[str] = []
        self.names: dict[tuple[str, State], str] = {}
        self.exits: dict[tuple[str, State], State] = {}
        self.least: dict[str, int] = {}
        self.namespace: Namespace = {
            "U32": struct.Struct(order + "I").unpack_from,
            "frombuffer": np.frombuffer,
            "short": _short,
            "bad_string": _bad_string,
            "over": _over,
            "wtext": _wtext,
            "UnicodeDecodeError": UnicodeDecodeError,
        }
        for name, code in DTYPES.items():
            self.namespace[f"D_{name}"] = np.dtype(
                code if code in ("?", "u1", "i1") else order + code
            )

    def compile(self) -> Decode:
        name, _ = self.function(self.root, (8, 0))
        exec("\n".join(self.lines), self.namespace)
        return self.namespace[name]  # type: ignore[no-any-return]

    def msg(self, name: str, user: str) -> MsgType:
        if name not in self.types:
            raise FormatError(f"{self.root}: the definition has no type {name} ({user} uses it)")
        return self.types[name]

    def least_size(self, name: str, within: frozenset[str] = frozenset()) -> int:
        """The fewest bytes a value of `name` takes (padding aside)."""
        if name in SIZES:
            return SIZES[name]
        if name in STRINGS:
            return 4
        if name in self.least:
            return self.least[name]
        if name in within:
            raise FormatError(f"{name} contains itself: its messages would never end")
        size = 0
        for f in self.msg(name, self.root).fields:
            if f.array is None or f.array > 0:
                size += (f.array or 1) * self.least_size(f.type, within | {name})
            else:
                size += 4
        self.least[name] = size
        return size

    def align(self, state: State, k: int, body: list[str], indent: str) -> State:
        """Lines aligning `p` to `k`: a constant step where `state` says enough."""
        m, r = state
        if k == 1:
            return state
        if m >= k:
            pad = -r % k
            if pad:
                body.append(f"{indent}p += {pad}")
            return m, (r + pad) % m
        body.append(
            f"{indent}p = ((p + 3) & -8) | 4" if k == 8 else f"{indent}p = (p + {k - 1}) & -{k}"
        )
        return k, 0

    def function(self, name: str, state: State) -> tuple[str, State]:
        """The function decoding `name` entered at `state`, and the state it leaves."""
        key = (name, state)
        if key in self.exits:
            return self.names[key], self.exits[key]
        if key in self.names:  # being generated: use the variant that assumes nothing
            if state == (1, 0):
                return self.names[key], (1, 0)
            return self.function(name, (1, 0))[0], (1, 0)
        self.msg(name, self.root)
        self.least_size(name)
        function = f"d{len(self.names)}"
        self.names[key] = function
        body = [f"def {function}(b, p, c):", "    L = len(b)"]
        run: list[tuple[str, str]] = []  # (struct code, variable) of the pending scalars

        def flush() -> None:
            if run:
                fmt = self.order + "".join(code for code, _ in run)
                self.namespace[f"S{function}_{len(body)}"] = struct.Struct(fmt).unpack_from
                targets = "".join(f"{v}, " for _, v in run if v)
                body.append(f"    {targets}= S{function}_{len(body)}(b, p)")
                body.append(f"    p += {struct.calcsize(fmt)}")
                run.clear()

        expression, state = self.fields(name, state, "v", body, run, flush, frozenset({name}))
        flush()
        body.append(f"    return {expression}, p")
        self.lines += body
        self.exits[key] = state
        return function, state

    def fields(self, name: str, state: State, prefix: str, body: list[str],
               run: list[tuple[str, str]], flush: Callable[[], None],
               within: frozenset[str]) -> tuple[str, State]:  # fmt: skip
        """Lines decoding the fields of `name` into variables named from `prefix`, and the
        expression of its dict. A nested message (not one within itself) is inlined, as
        `cdr_pack` does: its fixed-size fields join the struct run around them (a whole
        Pose is one unpack), and no call is paid per nested message."""
        msg = self.msg(name, self.root)
        self.least_size(name)
        items: list[str] = []
        for i, f in enumerate(msg.fields):
            where = f"{name}.{f.name}"
            target = f"{prefix}_{i}"
            items.append(f"{f.name!r}: {target}")
            if self.trace:
                flush()
                body.append(f"    c[:] = [{where!r}, p]")
            if f.array is None and f.type in SIZES:
                k = SIZES[f.type]
                m, r = state
                if k > 1 and m < k:
                    flush()
                    state = self.align(state, k, body, "    ")
                elif k > 1:
                    run.extend([("x", "")] * (-r % k))
                    state = (m, (r + -r % k) % m)
                run.append((_CODES[f.type], target))
                state = (state[0], (state[1] + k) % state[0])
                continue
            if (
                f.array is None
                and not self.trace
                and f.type in self.types
                and f.type not in STRINGS
                and f.type not in within
            ):
                expression, state = self.fields(
                    f.type, state, target, body, run, flush, within | {f.type}
                )
                items[-1] = f"{f.name!r}: {expression}"
                continue
            flush()
            if f.array is None:
                state = self.single(f.type, state, target, body, "    ", where)
            elif f.array > 0:
                state = self.fixed(f.type, f.array, state, target, body, where)
            else:
                state = self.sequence(f.type, f.bound, state, target, body, where)
        return "{" + ", ".join(items) + "}", state

    def single(self, name: str, state: State, target: str, body: list[str], indent: str,
               where: str) -> State:  # fmt: skip
        """Lines decoding one value of `name` into `target`."""
        if name in SIZES:
            state = self.align(state, SIZES[name], body, indent)
            unpack = f"U_{name}"
            self.namespace[unpack] = struct.Struct(self.order + _CODES[name]).unpack_from
            body += [f"{indent}{target}, = {unpack}(b, p)", f"{indent}p += {SIZES[name]}"]
            return state[0], (state[1] + SIZES[name]) % state[0]
        if name == "string":
            self.align(state, 4, body, indent)
            body += [
                f"{indent}n, = U32(b, p)",
                f"{indent}q = p + 4 + n",
                f"{indent}if q > L or (n and b[q - 1]): bad_string(b, p, n, {where!r})",
                f"{indent}try: {target} = str(b[p + 4 : q - 1], 'utf-8')",
                f"{indent}except UnicodeDecodeError: {target} = bytes(b[p + 4 : q - 1])",
                f"{indent}p = q",
            ]
            return 1, 0
        if name == "wstring":
            codec = "utf-16-le" if self.order == "<" else "utf-16-be"
            self.align(state, 4, body, indent)
            body += [
                f"{indent}n, = U32(b, p)",
                f"{indent}q = p + 4 + 2 * n",
                f"{indent}if q > L: short(n, 'UTF-16 units', 2, L - p - 4, p, {where!r})",
                f"{indent}{target} = wtext(bytes(b[p + 4 : q]), {codec!r})",
                f"{indent}p = q",
            ]
            return 2, 0
        function, state = self.function(name, state)
        body.append(f"{indent}{target}, p = {function}(b, p, c)")
        return state

    def loop(self, name: str, state: State, body: list[str], where: str) -> State:
        """Lines appending values of `name` to `a` in a loop body; the loop's state."""
        while True:  # the state every iteration starts at: a fixed point
            lines: list[str] = []
            after = self.single(name, state, "v", lines, "        ", where)
            joined = join_states(state, after)
            if joined == state:
                body += [*lines, "        a.append(v)"]
                return state
            state = joined

    def fixed(self, name: str, n: int, state: State, target: str, body: list[str],
              where: str) -> State:  # fmt: skip
        if name in SIZES:
            k = SIZES[name]
            state = self.align(state, k, body, "    ")
            body += [f"    {target} = frombuffer(b, D_{name}, {n}, p){self.tolist}",
                     f"    p += {n * k}"]  # fmt: skip
            return state[0], (state[1] + n * k) % state[0]
        body += ["    a = []", f"    for _ in range({n}):"]
        state = self.loop(name, state, body, where)
        body.append(f"    {target} = a")
        return state

    def sequence(self, name: str, bound: int, state: State, target: str, body: list[str],
                 where: str) -> State:  # fmt: skip
        state = self.align(state, 4, body, "    ")
        body += ["    n, = U32(b, p)", "    p += 4"]
        state = (state[0], (state[1] + 4) % state[0])
        if bound:
            body.append(f"    if n > {bound}: over(n, {bound}, p - 4, {where!r})")
        if name in SIZES:
            k = SIZES[name]
            if k > 4:
                lines: list[str] = []
                self.align(state, k, lines, "        ")
                if lines:
                    body += ["    if n:", *lines]
            body += [
                f"    if n * {k} > L - p: short(n, {name!r}, {k}, L - p, p, {where!r})",
                f"    {target} = frombuffer(b, D_{name}, n, p){self.tolist}",
                f"    p += n * {k}",
            ]
            return min(k, 4), 0
        size = self.least_size(name)
        body += [
            f"    if n * {size} > L - p: short(n, {name!r}, {size}, L - p, p, {where!r})",
            "    a = []",
            "    for _ in range(n):",
        ]
        state = self.loop(name, state, body, where)
        body.append(f"    {target} = a")
        return state


class Decoder:
    """Decode CDR payloads of the types `definitions` ({type: (encoding, text)}, as a bag
    stores them) define; see the module docstring."""

    def __init__(self, definitions: Mapping[str, tuple[str, str]]) -> None:
        self.definitions = dict(definitions)
        self._types: dict[str, dict[str, MsgType]] = {}
        self._decoders: dict[tuple[str, str, bool, bool], Decode] = {}

    def with_definitions(self, definitions: Mapping[str, tuple[str, str]]) -> Decoder:
        """A decoder of `definitions` keeping this one's generated functions for the types
        whose definition is the same (a root's definition holds its nested types)."""
        decoder = Decoder(definitions)
        mine = {canonical(k): v for k, v in self.definitions.items()}
        same = {canonical(k) for k, v in definitions.items() if mine.get(canonical(k)) == v}
        decoder._types = {root: t for root, t in self._types.items() if root in same}
        decoder._decoders = {key: f for key, f in self._decoders.items() if key[0] in same}
        return decoder

    def types(self, type_name: str) -> dict[str, MsgType]:
        """Every type `type_name`'s definition holds (with the builtins)."""
        root = canonical(type_name)
        if root not in self._types:
            self._types[root] = load(self.definitions, root)
        return self._types[root]

    def function(
        self, type_name: str, order: str = "<", trace: bool = False, plain: bool = False
    ) -> Decode:
        """The generated function for `type_name` (`order` "<" or ">"); `plain`: numeric
        arrays come out as lists, not numpy views (`plain_decode`)."""
        root = canonical(type_name)
        key = (root, order, trace, plain)
        if key not in self._decoders:
            generator = _Generator(root, self.types(root), order, trace, plain)
            self._decoders[key] = generator.compile()
        return self._decoders[key]

    def plain_decode(self, type_name: str, data: bytes | memoryview) -> dict[str, Any] | None:
        """The message in `data` as `decode` gives it, numeric arrays as lists (what `cat`
        prints, without a pass over the values to make them JSON's); None when `decode`
        would not give it plainly (an error to report, another encapsulation)."""
        value: dict[str, Any] | None = self.plain_decoder(type_name)(data)
        return value

    def plain_decoder(self, type_name: str) -> PlainDecoder:
        """`plain_decode` of `type_name` as one function (its generated code looked up
        once, not per message)."""
        little = self.function(type_name, "<", plain=True)
        big: list[Decode] = []

        def plain(data: bytes | memoryview) -> dict[str, Payload] | None:
            if len(data) < 4 or data[0] or data[1] > 1:
                return None
            if not data[1] and not big:
                big.append(self.function(type_name, ">", plain=True))
            try:
                value, end = (little if data[1] else big[0])(data, 4, None)
            except Exception:
                return None
            return value if len(data) - end <= PADDING else None

        return plain

    def decode(self, type_name: str, data: bytes | memoryview) -> dict[str, Any]:
        """The message of type `type_name` in `data` as a dict."""
        if len(data) < 4:
            raise TruncatedError(f"{type_name}: a CDR payload of {len(data)} bytes has no header")
        kind = data[0] << 8 | data[1]
        if kind > 1:
            error = UnsupportedError if kind <= 0x0B else FormatError  # XCDR2, parameter lists
            raise error(
                f"{type_name}: encapsulation 0x{kind:04x}, nanorec reads CDR (0x0000, 0x0001)",
                offset=0,
            )
        order = "<" if kind else ">"
        try:
            value, end = self.function(type_name, order)(data, 4, None)
        except NanorecError:
            raise
        except (struct.error, ValueError, IndexError, TypeError, OverflowError):
            raise self._where(type_name, order, data) from None
        except RecursionError:
            raise FormatError(f"{type_name}: the payload nests too deep") from None
        if len(data) - end > PADDING:
            raise FormatError(
                f"{type_name}: {len(data) - end} bytes follow the message in a payload of "
                f"{len(data)} bytes",
                offset=end,
            )
        return value  # type: ignore[no-any-return]

    def _where(self, type_name: str, order: str, data: bytes | memoryview) -> NanorecError:
        """The error of a failed fixed-size read, naming its field (by a traced decode)."""
        trace: Trace = [type_name, 4]
        try:
            self.function(type_name, order, trace=True)(data, 4, trace)
        except NanorecError as error:
            return error
        except Exception:
            pass
        return TruncatedError(
            f"{trace[0]}: the payload of {len(data)} bytes ends inside the field",
            offset=int(trace[1]),
        )
