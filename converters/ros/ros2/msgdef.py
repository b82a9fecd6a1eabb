"""ROS 2 message definitions -> types, without ROS.

rosbag2 stores, per topic type, the `.msg` text of the type followed by each nested type
after a line of 80 `=` and a line `MSG: pkg/Type` (`IDL: pkg/msg/Type` before an `.idl`
file when a type has no `.msg`; `SRV: pkg/srv/Foo` before a `.srv`). Older writers store a
service event type (`pkg/srv/Foo_Event`) as the bare `.srv` text. This module reads all of
them into one model, `MsgType` (fields in wire order, constants apart), so the CDR decoder
never needs to know which spelling a bag used. Names are normalized to `pkg/msg/Type`
(services keep `pkg/srv/Foo_Request`, `_Response`, `_Event`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from nanorec.errors import FormatError, UsageError

from ..common.depth import MAX_DEPTH, check_depth

#: Wire size of every fixed-size builtin (`wchar` is one UTF-16 code unit, as Fast-CDR 2 has it).
SIZES: Final = {
    "bool": 1, "byte": 1, "char": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2,
    "wchar": 2, "int32": 4, "uint32": 4, "float32": 4, "int64": 8, "uint64": 8, "float64": 8,
}  # fmt: skip
STRINGS: Final = frozenset({"string", "wstring"})
SEPARATOR: Final = "=" * 80
#: What rosidl adds to a struct without fields (CDR cannot encode nothing).
EMPTY_FIELD: Final = "structure_needs_at_least_one_member"
_IDL_BASES: Final = {
    "boolean": "bool", "octet": "byte", "char": "char", "wchar": "wchar", "float": "float32",
    "double": "float64", "short": "int16", "unsigned short": "uint16", "long": "int32",
    "unsigned long": "uint32", "long long": "int64", "unsigned long long": "uint64",
    "int8": "int8", "uint8": "uint8", "int16": "int16", "uint16": "uint16", "int32": "int32",
    "uint32": "uint32", "int64": "int64", "uint64": "uint64", "string": "string",
    "wstring": "wstring",
}  # fmt: skip


@dataclass(frozen=True)
class Field:
    type: str  # a builtin ("int32", "string") or a full "pkg/msg/Type"
    name: str
    array: int | None = None  # None: one value; -1: a sequence; n: a fixed array of n
    bound: int = 0  # the most elements of a bounded sequence (`T[<=N]`); 0: unbounded
    #: The most characters of a bounded string (`string<=N`, IDL `string<N>`); 0: unbounded.
    #: Not on the wire (CDR writes the length either way): type hashes count it.
    string_bound: int = 0


@dataclass(frozen=True)
class Constant:
    type: str
    name: str
    value: str  # as written (constants take no bytes on the wire)


@dataclass(frozen=True)
class MsgType:
    name: str
    fields: tuple[Field, ...]
    constants: tuple[Constant, ...] = ()
    #: Read from an `.idl`, where `char` is IDL's char; rosidl hashes a `.msg` char as uint8.
    from_idl: bool = False


def _msg(name: str, *fields: tuple[str, str]) -> MsgType:
    return MsgType(name, tuple(Field(t, n) for t, n in fields))


#: Types every ROS 2 system has, used when a bag's definition leaves them out (service event
#: infos are never written down by the writers of these bags).
BUILTINS: Final = {
    t.name: t
    for t in (
        _msg("builtin_interfaces/msg/Time", ("int32", "sec"), ("uint32", "nanosec")),
        _msg("builtin_interfaces/msg/Duration", ("int32", "sec"), ("uint32", "nanosec")),
        _msg(
            "std_msgs/msg/Header", ("builtin_interfaces/msg/Time", "stamp"), ("string", "frame_id")
        ),
        MsgType(
            "service_msgs/msg/ServiceEventInfo",
            (
                Field("uint8", "event_type"),
                Field("builtin_interfaces/msg/Time", "stamp"),
                Field("char", "client_gid", 16),
                Field("int64", "sequence_number"),
            ),
        ),
    )
}


def canonical(name: str, package: str = "") -> str:
    """`pkg/Type`, `pkg/msg/Type`, bare `Type` (in `package`), `Header` -> `pkg/msg/Type`."""
    parts = name.strip().strip("/").replace("::", "/").split("/")
    if len(parts) == 1:
        if parts[0] in ("time", "duration"):
            return f"builtin_interfaces/msg/{parts[0].capitalize()}"
        if parts[0] == "Header" and package != "std_msgs":
            return "std_msgs/msg/Header"
        return f"{package}/msg/{parts[0]}"
    if len(parts) == 2:
        return f"{parts[0]}/msg/{parts[1]}"
    return "/".join(parts)


def service_of(type_name: str) -> str | None:
    """`pkg/srv/Foo` for `pkg/srv/Foo`, `Foo_Event`, `Foo_Request`, `Foo_Response`."""
    if "/srv/" not in type_name:
        return None
    return re.sub(r"_(Event|Request|Response)$", "", type_name)


_TYPE: Final = re.compile(r"^([A-Za-z][\w/]*)(?:<=(\d+))?(?:\[(<=)?(\d*)\])?$")
_LINE: Final = re.compile(r"^(\S+)\s+([A-Za-z]\w*)\s*(.*)$")


def parse_msg(name: str, text: str) -> MsgType:
    """One `.msg` text (no separators) as the type `name` ("pkg/msg/Type")."""
    package = name.split("/")[0]
    fields: list[Field] = []
    constants: list[Constant] = []
    for number, line in enumerate(text.splitlines(), 1):
        code = line.strip()
        if not code or code.startswith("#"):
            continue
        match = _LINE.match(code)
        kind = None if match is None else _TYPE.match(match.group(1))
        if match is None or kind is None:
            raise FormatError(f"line {number} of {name} is not a field: {code!r}")
        base, string_bound, bounded, count = kind.groups()
        rest = match.group(3)
        field_type = base if base in SIZES or base in STRINGS else canonical(base, package)
        if rest.startswith("="):  # a constant: a string one may hold '#'
            value = rest[1:].strip()
            if base not in STRINGS:
                value = value.split("#", 1)[0].strip()
            constants.append(Constant(field_type, match.group(2), value))
            continue
        if "[" not in match.group(1):
            array, bound = None, 0
        elif bounded:
            array, bound = -1, int(count or 0)
        else:
            array, bound = (int(count) if count else -1), 0
        if array == 0:
            raise FormatError(f"line {number} of {name}: a fixed array of 0 elements")
        fields.append(Field(field_type, match.group(2), array, bound, int(string_bound or 0)))
    if not fields:
        fields.append(Field("uint8", EMPTY_FIELD))
    return MsgType(name, tuple(fields), tuple(constants))


def parse_srv(service: str, text: str) -> dict[str, MsgType]:
    """A `.srv` text as its `_Request`, `_Response` and `_Event` types."""
    lines = text.splitlines()
    cut = next((i for i, line in enumerate(lines) if line.strip() == "---"), len(lines))
    request = parse_msg(f"{service}_Request", "\n".join(lines[:cut]))
    response = parse_msg(f"{service}_Response", "\n".join(lines[cut + 1 :]))
    event = MsgType(
        f"{service}_Event",
        (
            Field("service_msgs/msg/ServiceEventInfo", "info"),
            Field(request.name, "request", -1, 1),
            Field(response.name, "response", -1, 1),
        ),
    )
    return {t.name: t for t in (request, response, event)}


def parse_definition(type_name: str, encoding: str, text: str) -> dict[str, MsgType]:
    """Every type of a definition as rosbag2 stores it (`encoding` "ros2msg" or "ros2idl")."""
    if encoding not in ("ros2msg", "ros2idl"):
        raise FormatError(f"definition of {type_name} has unknown encoding {encoding!r}")
    root = canonical(type_name)
    kind = "SRV" if service_of(root) else ("IDL" if encoding == "ros2idl" else "MSG")
    sections: list[tuple[str, str, list[str]]] = [(kind, root, [])]
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        header = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if line.strip() == SEPARATOR and re.match(r"^(MSG|IDL|SRV):\s*\S", header):
            sections.append((header[:3], header[4:].strip(), []))
            i += 2
            continue
        sections[-1][2].append(line)
        i += 1
    if len(sections) > 1 and not "".join(sections[0][2]).strip():
        named = {canonical(n) for _, n, _ in sections[1:]}
        if root in named or service_of(root) in named or kind == "IDL":
            sections.pop(0)  # the root is written out after a separator of its own
    types: dict[str, MsgType] = {}
    for section_kind, name, body in sections:
        chunk = "\n".join(body)
        if section_kind == "IDL":
            found = parse_idl(chunk)
        elif section_kind == "SRV":
            found = parse_srv(service_of(canonical(name)) or canonical(name), chunk)
        else:
            msg = parse_msg(canonical(name), chunk)
            found = {msg.name: msg}
        for key, value in found.items():
            types.setdefault(key, value)
    check_depth(root, lambda name: dependencies(types[name]) if name in types else ())
    return types


_IDL_TOKEN: Final = re.compile(
    r"""\s+|//[^\n]*|/\*.*?\*/|\#[^\n]*
    |(?P<str>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*')
    |(?P<word>(?:::)?[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*)
    |(?P<num>[-+]?(?:0[xX][0-9a-fA-F]+|\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?))
    |(?P<op>\S)""",
    re.S | re.X,
)


class _Idl:
    """A recursive-descent reader of the OMG IDL subset rosidl writes (modules, structs,
    typedefs, constants, sequences, arrays, bounded strings, annotations)."""

    def __init__(self, text: str) -> None:
        self.tokens = [m.group() for m in _IDL_TOKEN.finditer(text) if m.lastgroup]
        self.i = 0
        self.types: dict[str, MsgType] = {}
        self.typedefs: dict[str, Field] = {}
        self.constants: dict[str, list[Constant]] = {}

    def peek(self) -> str:
        return self.tokens[self.i] if self.i < len(self.tokens) else ""

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if not token or (expected is not None and token != expected):
            want = repr(expected) if expected else "more"
            raise FormatError(f"IDL: expected {want} at token {self.i}, found {token!r}")
        self.i += 1
        return token

    def number(self) -> int:
        token = self.take()
        try:
            return int(token, 0)
        except ValueError:
            where = f"token {self.i - 1}"
            raise FormatError(f"IDL: expected a number at {where}, found {token!r}") from None

    def annotations(self) -> None:
        while self.peek() == "@":
            self.take()
            self.take()
            if self.peek() == "(":
                depth = 0
                while True:
                    token = self.take()
                    depth += {"(": 1, ")": -1}.get(token, 0)
                    if depth == 0:
                        break

    def definitions(self, scope: list[str]) -> None:
        while self.peek() and self.peek() != "}":
            self.annotations()
            keyword = self.take()
            if keyword == "module":
                name = self.take()
                if len(scope) >= MAX_DEPTH:
                    where = f"token {self.i - 1}"
                    raise FormatError(f"IDL: modules nest more than {MAX_DEPTH} deep at {where}")
                self.take("{")
                self.definitions([*scope, name])
                self.take("}")
            elif keyword == "struct":
                name = self.take()
                if self.peek() == "{":
                    self.struct("/".join([*scope, name]), scope)
            elif keyword == "typedef":
                field = self.declarator(self.type_spec(scope), "/".join(scope))
                self.typedefs["/".join([*scope, field.name])] = field
            elif keyword == "const":
                base = self.type_spec(scope)
                name = self.take()
                self.take("=")
                value = []
                while self.peek() not in (";", ""):
                    value.append(self.take())
                owner = "/".join([*scope[:-1], scope[-1].removesuffix("_Constants")])
                self.constants.setdefault(owner, []).append(
                    Constant(base.type, name, " ".join(value))
                )
            else:
                raise FormatError(f"IDL: unsupported {keyword!r} at token {self.i - 1}")
            self.take(";")

    def struct(self, name: str, scope: list[str]) -> None:
        self.take("{")
        fields: list[Field] = []
        while self.peek() != "}":
            self.annotations()
            base = self.type_spec(scope)
            while True:
                fields.append(self.declarator(base, name))
                if self.peek() != ",":
                    break
                self.take()
            self.take(";")
        self.take("}")
        self.types[name] = MsgType(name, tuple(fields) or (Field("uint8", EMPTY_FIELD),))

    def type_spec(self, scope: list[str], within: bool = False) -> Field:
        word = self.take()
        if word == "sequence":
            if within:  # refused before reading it: a chain of them would recurse
                raise FormatError(f"IDL: a sequence of sequences at token {self.i - 1}")
            self.take("<")
            inner = self.type_spec(scope, True)
            bound = 0
            if self.peek() == ",":
                self.take()
                bound = self.number()
            self.take(">")
            if inner.array is not None:
                raise FormatError(f"IDL: a sequence of arrays at token {self.i}")
            return Field(inner.type, "", -1, bound, inner.string_bound)
        if word in ("unsigned", "long") and self.peek() in ("short", "long", "double"):
            word += " " + self.take()
            if word == "unsigned long" and self.peek() == "long":
                word += " " + self.take()
        if word in _IDL_BASES:
            string_bound = 0
            if word in STRINGS and self.peek() == "<":
                self.take()
                string_bound = self.number()
                self.take(">")
            return Field(_IDL_BASES[word], "", string_bound=string_bound)
        if word == "long double":
            raise FormatError("IDL: long double (float128) is not supported")
        name = word.removeprefix("::").replace("::", "/")
        for depth in range(len(scope), -1, -1):  # innermost scope first
            typedef = self.typedefs.get("/".join([*scope[:depth], name]))
            if typedef is not None:
                return typedef
        return Field(name if "/" in name else "/".join([*scope, name]), "")

    def declarator(self, base: Field, owner: str) -> Field:
        name = self.take()
        count = 1
        while self.peek() == "[":
            self.take()
            count *= int(self.take(), 0)
            self.take("]")
        if count < 1:
            raise FormatError(f"IDL: {owner}.{name} is an array of no elements")
        if count == 1 and self.tokens[self.i - 1] != "]":
            return Field(base.type, name, base.array, base.bound, base.string_bound)
        if base.array is not None:
            raise FormatError(f"IDL: {owner}.{name} is an array of arrays or sequences")
        return Field(base.type, name, count, string_bound=base.string_bound)


def parse_idl(text: str) -> dict[str, MsgType]:
    """Every struct of one or more `.idl` files, with the constants of its `_Constants`."""
    reader = _Idl(text)
    reader.definitions([])
    if reader.peek():
        raise FormatError(f"IDL: unexpected {reader.peek()!r} at token {reader.i}")
    return {
        name: MsgType(name, t.fields, tuple(reader.constants.get(name, ())), from_idl=True)
        for name, t in reader.types.items()
    }


def dependencies(msg: MsgType) -> list[str]:
    """The named types `msg`'s fields use, in field order, each once."""
    return list(dict.fromkeys(f.type for f in msg.fields if "/" in f.type))


def from_msg_path(
    folders: Iterable[str | Path], type_name: str, known: Mapping[str, str] | None = None
) -> tuple[str, str]:
    """A definition for `type_name` written as rosbag2 writes one ("ros2msg", text), from
    `.msg`/`.srv` files laid out `<folder>/<pkg>/msg/<Type>.msg` (as a ROS `share/` folder
    is) or `<folder>/msg/<Type>.msg` in a folder named after the package: for bags that
    carry no definitions. A nested type the folders lack is taken from `known`
    (`pkg/msg/Type` -> its `.msg` text) when there."""
    roots = [Path(f) for f in folders]

    def find(name: str, suffix: str) -> str:
        package, sub, stem = name.split("/")
        for root in roots:
            paths = [root / package / sub / (stem + suffix)]
            if root.name == package:
                paths.append(root / sub / (stem + suffix))
            for path in paths:
                if path.is_file():
                    return path.read_text(encoding="utf-8")
        raise UsageError(
            f"no {package}/{sub}/{stem}{suffix} under the message folders "
            f"{', '.join(map(str, roots)) or '(none)'}"
        )

    root = canonical(type_name)
    service = service_of(root)
    if service is not None:
        text = find(service, ".srv")
        parts = parse_srv(service, text)
        pending = [d for t in parts.values() for d in dependencies(t) if d not in parts]
        out = [f"{SEPARATOR}\nSRV: {service}\n{text}"]
    else:
        text = find(root, ".msg")
        pending = dependencies(parse_msg(root, text))
        out = [text]
    seen = {root}
    while pending:
        name = pending.pop(0)
        if name in seen or (name == "service_msgs/msg/ServiceEventInfo" and service):
            continue
        seen.add(name)
        try:
            text = find(name, ".msg")
        except UsageError:
            if known and name in known:
                text = known[name]
            elif name in BUILTINS:
                continue
            else:
                raise
        package, _, stem = name.split("/")
        out.append(f"\n{SEPARATOR}\nMSG: {package}/{stem}\n{text}")
        pending += dependencies(parse_msg(name, text))
    return "ros2msg", "".join(out)


def load(definitions: Mapping[str, tuple[str, str]], type_name: str) -> dict[str, MsgType]:
    """The types `type_name`'s definition names (looked up as given, canonical, or as its
    service), with `BUILTINS` for what it leaves out."""
    root = canonical(type_name)
    keys = {canonical(k): k for k in definitions}
    key = keys.get(root) or keys.get(service_of(root) or "")
    if key is None:
        raise FormatError(f"no definition for {type_name}")
    encoding, text = definitions[key]
    types = parse_definition(key, encoding, text)
    return {**BUILTINS, **types}
