"""ROS1 payloads <-> CDR payloads, byte to byte, by generated code.

The two wire formats carry the same values in the same order: ROS1 packs them little-endian
with no padding (strings as a uint32 length and the bytes, sequences as a uint32 count and the
elements); CDR puts a 4-byte encapsulation header first (`00 01 00 00`: little-endian), aligns
each primitive to its size (8-byte ones to 8) counting from the byte after the header, ends
strings with a NUL that their length counts, and gives a struct without fields one byte. So a
payload can be converted without decoding it: copy runs of fixed-size fields as slices, put in
(or skip) padding, rewrite string lengths, and treat the few fields the mapping changes.

As `ros2/cdr.py` does, the generator follows the CDR position modulo 8 while it writes the code,
so most padding is a constant known once per type and consecutive fixed-size fields (a `Pose`,
a covariance, a whole `Header` stamp) become one slice and one bounds check. Nested messages
are inlined into one function per root type (no calls); arrays of messages are loops whose body
is generated for the alignment every iteration starts at (a fixed point).

Each type is given as a `Plan` (`types.py` builds them): per ROS1 type name, its fields in
wire order as `Slot`s, each saying whether it exists in ROS 2 (`Header.seq` does not: skipped
into CDR, zero out of it) and whether it is a `rosgraph_msgs/Log` level (mapped on the way).

A payload never makes the code read past its end or allocate more than it can hold: every
slice is checked against the length first, and an array of `n` elements needs `n` times its
element's least size in the bytes left (elements without bytes, `std_msgs/Empty[]`, are capped
per message). Every problem is a `FormatError`; big-endian CDR is refused (`UnsupportedError`).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from nanorec.errors import FormatError, NanorecError, UnsupportedError
from nanorec.untyped import Namespace

from ..ros2.cdr import State, after, join_states

#: Wire size and CDR alignment of the fixed-size ROS1/ROS 2 primitives (time and duration are
#: two 4-byte integers on both sides: ROS1 secs/nsecs, builtin_interfaces sec/nanosec).
SIZE: Final = {
    "bool": 1, "int8": 1, "byte": 1, "uint8": 1, "char": 1, "int16": 2, "uint16": 2,
    "int32": 4, "uint32": 4, "float32": 4, "int64": 8, "uint64": 8, "float64": 8,
    "time": 8, "duration": 8,
}  # fmt: skip
ALIGN: Final = {**SIZE, "time": 4, "duration": 4}
#: ROS1 rosgraph_msgs/Log levels (bits) -> ROS 2 rcl_interfaces/msg/Log levels (tens).
LEVELS_TO_ROS2: Final = {1: 10, 2: 20, 4: 30, 8: 40, 16: 50}
LEVELS_TO_ROS1: Final = {v: k for k, v in LEVELS_TO_ROS2.items()}
#: Elements without bytes (in ROS1) one message may hold: no byte count bounds them.
MAX_EMPTY: Final = 1 << 16
CDR_LE: Final = b"\x00\x01\x00\x00"

Transcode = Callable[[bytes | memoryview], bytes | bytearray]


@dataclass(frozen=True)
class Slot:
    """One field of a plan type, in ROS1 wire order."""

    type: str  # a key of SIZE, "string", or a plan type (a ROS1 "pkg/Type")
    name: str  # for messages and generated comments only
    array: int | None = None  # None: one value; -1: a sequence; n: a fixed array of n
    ros2: bool = True  # False: ROS1 only (skipped into CDR, zero or empty out of it)
    level: bool = False  # a Log severity (one byte), mapped between the two scales


Plan = Mapping[str, tuple[Slot, ...]]


@dataclass(frozen=True)
class _Leaf:
    """A field of the flattened type: single messages are inlined, arrays stay."""

    kind: str  # "prim", "string", "dummy" (the byte of a CDR struct without fields),
    # "seq" (of a primitive), "loop" (an array of strings or messages)
    type: str = ""
    count: int = 1  # prim: elements; loop: -1 for a sequence, else the fixed count
    ros2: bool = True
    level: bool = False
    body: tuple[_Leaf, ...] = ()  # loop: one element
    least: int = 0  # loop: the fewest input bytes of one element


class _Generator:
    def __init__(self, plan: Plan, root: str, to_cdr: bool) -> None:
        self.plan, self.root, self.to_cdr = plan, root, to_cdr
        self.least: dict[tuple[str, bool], int] = {}

    # -- the model ----------------------------------------------------------------------------

    def slots(self, name: str) -> tuple[Slot, ...]:
        if name not in self.plan:
            raise FormatError(f"{self.root}: the plan has no type {name}")
        return self.plan[name]

    def empty_in_cdr(self, name: str) -> bool:
        return not any(s.ros2 for s in self.slots(name))

    def least_size(self, name: str, cdr: bool, within: frozenset[str] = frozenset()) -> int:
        """The fewest bytes a value of `name` takes in ROS1 or (padding aside) in CDR."""
        if name in SIZE:
            return SIZE[name]
        if name == "string":
            return 4
        key = (name, cdr)
        if key not in self.least:
            if name in within:
                raise FormatError(f"{name} contains itself, which ROS 2 cannot express")
            size = 0
            for s in self.slots(name):
                if cdr and not s.ros2:
                    continue
                if s.array is None or s.array > 0:
                    size += (s.array or 1) * self.least_size(s.type, cdr, within | {name})
                else:
                    size += 4
            if cdr and self.empty_in_cdr(name):
                size = 1
            self.least[key] = size
        return self.least[key]

    def flatten(self, name: str, ros2: bool, within: frozenset[str] = frozenset()) -> list[_Leaf]:
        if name in within:
            raise FormatError(f"{name} contains itself, which ROS 2 cannot express")
        inner = within | {name}
        leaves: list[_Leaf] = []
        for s in self.slots(name):
            keep = ros2 and s.ros2
            if s.type in SIZE:
                if s.array is not None and s.array < 0:
                    leaves.append(_Leaf("seq", s.type, -1, keep))
                else:
                    leaves.append(_Leaf("prim", s.type, s.array or 1, keep, s.level))
                continue
            one = (
                [_Leaf("string", "string", 1, keep)]
                if s.type == "string"
                else self.flatten(s.type, keep, inner)
            )
            if s.array is None:
                leaves += one
            else:
                least = self.least_size(s.type, not self.to_cdr, inner)
                leaves.append(_Leaf("loop", s.type, s.array, keep, body=tuple(one), least=least))
        if ros2 and self.empty_in_cdr(name):
            leaves.append(_Leaf("dummy"))
        return leaves

    # -- the code -----------------------------------------------------------------------------

    def compile(self) -> Callable[[bytes | memoryview], tuple[bytearray, int]]:
        leaves = self.flatten(self.root, True)
        body: list[str] = []
        if self.to_cdr:
            self.ros1_to_cdr(leaves, (8, 0), body, "    ")
            head = ["def transcode(b):", "    L = len(b)", "    o = bytearray(HEADER)", "    p = 0"]
        else:
            self.cdr_to_ros1(leaves, (8, 0), body, "    ")
            head = ["def transcode(b):", "    L = len(b)", "    o = bytearray()", "    p = 4"]
        head.append(f"    E = {MAX_EMPTY}")
        source = "\n".join([*head, *body, "    return o, p"])
        namespace: Namespace = {
            "HEADER": CDR_LE,
            "U32": struct.Struct("<I").unpack_from,
            "P32": struct.Struct("<I").pack,
            "Z": [bytes(n) for n in range(8)],
            "LV": LEVELS_TO_ROS2 if self.to_cdr else LEVELS_TO_ROS1,
            "short": _short,
            "many": _many,
            "bad_string": _bad_string,
        }
        try:
            exec(compile(source, f"<bridge {self.root}>", "exec"), namespace)
        except (SyntaxError, RecursionError, MemoryError) as error:
            raise FormatError(f"{self.root} nests too deep to transcode: {error}") from None
        return namespace["transcode"]  # type: ignore[no-any-return]

    def ros1_to_cdr(self, leaves: list[_Leaf], state: State, body: list[str], ind: str) -> State:
        """Lines reading ROS1 at `p` and appending CDR to `o` (state: of `len(o) - 4`)."""
        run = _Run(body, ind)
        for leaf in leaves:
            if leaf.kind == "prim":
                size = SIZE[leaf.type] * leaf.count
                if not leaf.ros2:
                    run.skip(size)
                    continue
                state = self.pad_out(state, ALIGN[leaf.type], run.code)
                if leaf.level:
                    run.code(f"o.append(LV.get(b[p + {run.off}], b[p + {run.off}]))")
                    run.skip(1)
                else:
                    run.copy(size)
                state = after(state, size)
            elif leaf.kind == "dummy":
                run.code("o.append(0)")
                state = after(state, 1)
            elif leaf.kind == "string":
                run.flush()
                body.append(f"{ind}n, = U32(b, p)")
                if leaf.ros2:
                    state = self.pad_out(state, 4, _adder(body, ind))
                    body += [
                        f"{ind}q = p + 4 + n",
                        f"{ind}if q > L: short(p, 4 + n, L)",
                        f"{ind}o += P32(n + 1)",
                        f"{ind}o += b[p + 4 : q]",
                        f"{ind}o.append(0)",
                        f"{ind}p = q",
                    ]
                    state = (1, 0)
                else:
                    body += [f"{ind}p += 4 + n", f"{ind}if p > L: short(p - 4 - n, 4 + n, L)"]
            else:  # "seq" or "loop": a count first (none for a fixed array)
                run.flush()
                state = self.array_to_cdr(leaf, state, body, ind)
        run.flush()
        return state

    def array_to_cdr(self, leaf: _Leaf, state: State, body: list[str], ind: str) -> State:
        if leaf.count >= 0:  # a fixed array of strings or messages
            body.append(f"{ind}for _ in range({leaf.count}):")
            return self.loop(leaf, state, body, ind, self.ros1_to_cdr)
        body += [f"{ind}n, = U32(b, p)", f"{ind}p += 4"]
        size = SIZE[leaf.type] if leaf.kind == "seq" else leaf.least
        if size:
            body.append(f"{ind}if n * {size} > L - p: many(n, {size}, L - p, p)")
        else:
            body += [f"{ind}E -= n", f"{ind}if E < 0: many(n, 0, L - p, p)"]
        if leaf.ros2:
            state = self.pad_out(state, 4, _adder(body, ind))
            body.append(f"{ind}o += P32(n)")
            state = after(state, 4)
        if leaf.kind == "seq":
            align = ALIGN[leaf.type]
            if leaf.ros2:
                if align == 8:
                    lines: list[str] = []
                    self.pad_out(state, 8, _adder(lines, ind + "    "))
                    if lines:
                        body += [f"{ind}if n:", *lines]
                body.append(f"{ind}o += b[p : p + n * {size}]")
            body.append(f"{ind}p += n * {size}")
            return (min(align, 4), 0) if leaf.ros2 else state
        body.append(f"{ind}for _ in range(n):")
        return self.loop(leaf, state, body, ind, self.ros1_to_cdr)

    def cdr_to_ros1(self, leaves: list[_Leaf], state: State, body: list[str], ind: str) -> State:
        """Lines reading CDR at `p` (state: of `p - 4`) and appending ROS1 to `o`."""
        run = _Run(body, ind)
        for leaf in leaves:
            if leaf.kind == "prim":
                size = SIZE[leaf.type] * leaf.count
                if not leaf.ros2:
                    run.code(f"o += {bytes(size)!r}")
                    continue
                state = self.pad_in(state, ALIGN[leaf.type], run)
                if leaf.level:
                    run.code(f"o.append(LV.get(b[p + {run.off}], b[p + {run.off}]))")
                    run.skip(1)
                else:
                    run.copy(size)
                state = after(state, size)
            elif leaf.kind == "dummy":
                run.skip(1)
                state = after(state, 1)
            elif not leaf.ros2:  # a string or an array ROS 2 does not have: empty in ROS1
                if leaf.kind == "loop" and leaf.count >= 0:
                    run.flush()
                    body.append(f"{ind}for _ in range({leaf.count}):")
                    self.cdr_to_ros1(list(leaf.body), state, body, ind + "    ")
                else:
                    run.code("o += b'\\x00\\x00\\x00\\x00'")
            elif leaf.kind == "string":
                state = self.pad_in(state, 4, run)
                run.flush()
                body += [
                    f"{ind}n, = U32(b, p)",
                    f"{ind}q = p + 4 + n",
                    f"{ind}if q > L or (n and b[q - 1]): bad_string(b, p, n)",
                    f"{ind}o += P32(n - 1 if n else 0)",
                    f"{ind}o += b[p + 4 : q - 1]",
                    f"{ind}p = q",
                ]
                state = (1, 0)
            elif leaf.count >= 0:  # a fixed array of strings or messages
                run.flush()
                body.append(f"{ind}for _ in range({leaf.count}):")
                state = self.loop(leaf, state, body, ind, self.cdr_to_ros1)
            else:
                state = self.pad_in(state, 4, run)
                run.flush()
                body += [f"{ind}n, = U32(b, p)", f"{ind}p += 4", f"{ind}o += P32(n)"]
                state = after(state, 4)
                if leaf.kind == "loop":
                    body += [
                        f"{ind}if n * {leaf.least} > L - p: many(n, {leaf.least}, L - p, p)",
                        f"{ind}for _ in range(n):",
                    ]
                    state = self.loop(leaf, state, body, ind, self.cdr_to_ros1)
                    continue
                size, align = SIZE[leaf.type], ALIGN[leaf.type]
                if align == 8:
                    lines: list[str] = []
                    pad = _Run(lines, ind + "    ")
                    self.pad_in(state, 8, pad)
                    pad.flush()
                    if lines:
                        body += [f"{ind}if n:", *lines]
                body += [
                    f"{ind}if n * {size} > L - p: many(n, {size}, L - p, p)",
                    f"{ind}o += b[p : p + n * {size}]",
                    f"{ind}p += n * {size}",
                ]
                state = (min(align, 4), 0)
        run.flush()
        return state

    def loop(
        self,
        leaf: _Leaf,
        state: State,
        body: list[str],
        ind: str,
        generate: Callable[[list[_Leaf], State, list[str], str], State],
    ) -> State:
        """The loop body of `leaf`, generated for the state every iteration starts at."""
        while True:
            lines: list[str] = []
            after = generate(list(leaf.body), state, lines, ind + "    ")
            joined = join_states(state, after)
            if joined == state:
                body += lines or [f"{ind}    pass"]
                return state
            state = joined

    @staticmethod
    def pad_out(state: State, k: int, code: Callable[[str], None]) -> State:
        """Code padding the CDR output to `k` (a constant where `state` tells enough)."""
        m, r = state
        if k == 1:
            return state
        if m >= k:
            pad = -r % k
            if pad:
                code(f"o += {bytes(pad)!r}")
            return m, (r + pad) % m
        code("o += Z[(4 - len(o)) & 7]" if k == 8 else f"o += Z[-len(o) & {k - 1}]")
        return k, 0

    @staticmethod
    def pad_in(state: State, k: int, run: _Run) -> State:
        """Skip the CDR input's padding to `k` (a constant where `state` tells enough)."""
        m, r = state
        if k == 1:
            return state
        if m >= k:
            pad = -r % k
            run.skip(pad)
            return m, (r + pad) % m
        run.flush()
        run.body.append(
            f"{run.ind}p = ((p + 3) & -8) | 4" if k == 8 else f"{run.ind}p = (p + {k - 1}) & -{k}"
        )
        return k, 0


class _Run:
    """Pending lines that read at `p + offset`: one bounds check and one `p +=` for them all,
    and consecutive copies merged into one slice."""

    def __init__(self, body: list[str], ind: str) -> None:
        self.body, self.ind = body, ind
        self.items: list[tuple[int, int] | str] = []
        self.off = 0

    def code(self, line: str) -> None:
        self.items.append(line)

    def skip(self, size: int) -> None:
        self.off += size

    def copy(self, size: int) -> None:
        last = self.items[-1] if self.items else None
        if isinstance(last, tuple) and last[1] == self.off:
            self.items[-1] = (last[0], self.off + size)
        else:
            self.items.append((self.off, self.off + size))
        self.off += size

    def flush(self) -> None:
        if self.off:
            self.body.append(f"{self.ind}if p + {self.off} > L: short(p, {self.off}, L)")
        for item in self.items:
            if isinstance(item, str):
                self.body.append(self.ind + item)
            else:
                start = f"p + {item[0]}" if item[0] else "p"
                self.body.append(f"{self.ind}o += b[{start} : p + {item[1]}]")
        if self.off:
            self.body.append(f"{self.ind}p += {self.off}")
        self.items.clear()
        self.off = 0


def _adder(body: list[str], ind: str) -> Callable[[str], None]:
    return lambda line: body.append(ind + line)


def _short(at: int, need: int, length: int) -> None:
    raise FormatError(
        f"the payload of {length} bytes ends inside a field ({need} bytes from {at})", offset=at
    )


def _many(n: int, size: int, left: int, at: int) -> None:
    if size == 0:
        raise FormatError(
            f"arrays of elements without bytes exceed the {MAX_EMPTY} the bridge takes per message",
            offset=at,
        )
    raise FormatError(
        f"an array of {n} elements needs at least {n * size} bytes, {left} are left", offset=at
    )


def _bad_string(b: bytes | memoryview, at: int, n: int) -> None:
    if at + 4 + n > len(b):
        raise FormatError(f"a string of {n} bytes runs past the payload", offset=at)
    raise FormatError(f"a string of {n} bytes does not end in NUL", offset=at)


def ros1_to_cdr(plan: Plan, root: str) -> Transcode:
    """A function converting ROS1 payloads of `root` (a plan type) to little-endian CDR."""
    function = _Generator(plan, root, True).compile()

    def transcode(data: bytes | memoryview) -> bytes:
        try:
            out, end = function(data)
        except NanorecError as error:
            raise FormatError(f"{root}: {error.message}", offset=error.offset) from None
        except (struct.error, IndexError, ValueError, TypeError, OverflowError):
            raise FormatError(f"{root}: the ROS1 payload of {len(data)} bytes is cut") from None
        if end != len(data):
            raise FormatError(
                f"{root}: a ROS1 payload of {len(data)} bytes, the message takes {end}",
                offset=end,
            )
        return bytes(out)

    return transcode


#: Payloads past this size are read through a memoryview and their output given as the
#: bytearray it was built in (why: a 512 MiB image's pixels were otherwise copied twice
#: more, a slice of the payload and `bytes` of the output; smaller ones keep `bytes`
#: slices, the cheapest small pieces Python has).
_BIG: Final = 1 << 20


def _viewed(data: bytes | memoryview) -> bytes | memoryview:
    return memoryview(data) if len(data) > _BIG else data


def _given(out: bytearray) -> bytes | bytearray:
    return out if len(out) > _BIG else bytes(out)


def cdr_to_ros1(plan: Plan, root: str) -> Transcode:
    """A function converting little-endian CDR payloads of `root` (a plan type) to ROS1."""
    function = _Generator(plan, root, False).compile()

    def transcode(data: bytes | memoryview) -> bytes | bytearray:
        if len(data) < 4 or data[0] != 0 or data[1] > 1:
            kind = bytes(data[:2]).hex() if len(data) >= 2 else "missing"
            raise FormatError(f"{root}: not a CDR payload (encapsulation {kind})", offset=0)
        if data[1] == 0:
            raise UnsupportedError(
                f"{root}: big-endian CDR; the bridge converts little-endian CDR only", offset=0
            )
        try:
            out, end = function(_viewed(data))
        except NanorecError as error:
            raise FormatError(f"{root}: {error.message}", offset=error.offset) from None
        except (struct.error, IndexError, ValueError, TypeError, OverflowError):
            raise FormatError(f"{root}: the CDR payload of {len(data)} bytes is cut") from None
        if len(data) - end > 3:
            raise FormatError(
                f"{root}: {len(data) - end} bytes follow the message in a CDR payload of "
                f"{len(data)} bytes",
                offset=end,
            )
        return _given(out)

    return transcode
