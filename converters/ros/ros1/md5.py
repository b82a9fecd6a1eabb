"""ROS1 md5sums and full definitions, computed as genmsg (`gentools.py`) computes them.

A ROS1 connection header carries `md5sum` and `message_definition`; a subscriber refuses a
publisher whose md5sum differs from its own, so a bag written from another format (a ROS 2
bag, for one) must carry the md5sum ROS would give the type, and the full text ROS would
write. Both come from each type's own `.msg` text:

- `md5sum`: the md5 of the type's "md5 text": its constants first ("type NAME=value", the
  value as written), then its fields, "type name" for builtins (the type as written, with
  its brackets) and "<md5 of the type> name" for message types; comments and blank lines
  dropped, lines joined with "\\n".
- `full_text`: the type's text, then each type it depends on (depth first, each once) after
  a line of 80 `=` and a line `MSG: pkg/Type` (genmsg's `compute_full_text`).

The parsing follows genmsg's `msg_loader` quirks (fields split on spaces, a string
constant's value is the raw rest of its line, comments included) so the md5s agree with ROS.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from nanorec.errors import FormatError

from ..common.depth import check_depth

SEPARATOR: Final = "=" * 80
#: genmsg's BUILTIN_TYPES: what md5 texts write as they are.
BUILTINS: Final = frozenset(
    {"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float32"}
    | {"float64", "string", "bool", "char", "byte", "time", "duration"}
)
_RULE: Final = re.compile(r"^=+$")


@dataclass(frozen=True)
class Spec:
    """One type's `.msg` text as genmsg reads it."""

    constants: tuple[str, ...]  # "type NAME=value", as md5 texts write them
    fields: tuple[tuple[str, str], ...]  # (type as written, name)


def parse(text: str) -> Spec:
    """genmsg's `load_msg_from_string`, keeping what md5 and dependency order need."""
    constants: list[str] = []
    fields: list[tuple[str, str]] = []
    for line in text.split("\n"):
        clean = line.split("#", 1)[0].strip()
        if not clean:
            continue
        tokens = [s for s in (x.strip() for x in clean.split(" ")) if s]
        if "=" in clean:
            kind = tokens[0]
            if kind == "string":  # the rest of the raw line, '#' and all
                at = line.find("=")
                name, value = line[line.find(" ") + 1 : at], line[at + 1 :]
            else:
                parts = " ".join(tokens[1:]).split("=")
                if len(parts) != 2:
                    raise FormatError(f"invalid constant declaration {line.strip()!r}")
                name, value = parts
            constants.append(f"{kind} {name.strip()}={value.strip()}")
        elif len(tokens) == 2:
            fields.append((tokens[0], tokens[1]))
        else:
            raise FormatError(f"invalid declaration {line.strip()!r}")
    return Spec(tuple(constants), tuple(fields))


def split(type_name: str, text: str) -> dict[str, str]:
    """Each type's own text in a `message_definition`: `{type_name: root text, "pkg/Type":
    text, ...}` (exactly what `full_text` joins again, for a genmsg-written definition)."""
    lines = text.split("\n")
    sections: list[tuple[str, list[str]]] = [(type_name, [])]
    i = 0
    while i < len(lines):
        line = lines[i]
        following = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if len(line.strip()) >= 3 and _RULE.match(line.strip()) and following.startswith("MSG:"):
            sections.append((following[4:].strip(), []))
            i += 2
            continue
        sections[-1][1].append(line)
        i += 1
    texts: dict[str, str] = {}
    for name, body in sections:
        texts.setdefault(name, "\n".join(body))
    return texts


def _bare(field_type: str) -> str:
    return field_type.split("[", 1)[0]


def _resolve(bare: str, package: str, known: Mapping[str, object]) -> str:
    """The full name of message type `bare` used in `package` (genmsg's `resolve_type`);
    when the definition lacks that name, the one type it holds of that short name."""
    if bare == "Header":
        full = "std_msgs/Header"
    elif "/" in bare or not package:
        full = bare
    else:
        full = f"{package}/{bare}"
    if full in known:
        return full
    short = full.rsplit("/", 1)[-1]
    matches = [k for k in known if k.rsplit("/", 1)[-1] == short]
    return matches[0] if len(matches) == 1 else full


class _Types:
    """The specs of a set of types, with their md5s and dependencies worked out on demand."""

    def __init__(self, texts: Mapping[str, str]) -> None:
        self.texts = texts
        self.specs: dict[str, Spec] = {}
        self.md5s: dict[str, str] = {}

    def spec(self, type_name: str) -> Spec:
        if type_name not in self.specs:
            if type_name not in self.texts:
                raise FormatError(f"the definition has no type {type_name!r}")
            self.specs[type_name] = parse(self.texts[type_name])
        return self.specs[type_name]

    def uses(self, type_name: str) -> list[tuple[str, str, str | None]]:
        """(type as written, name, the type's full name or None for a builtin) per field."""
        package = type_name.split("/", 1)[0] if "/" in type_name else ""
        out: list[tuple[str, str, str | None]] = []
        for field_type, name in self.spec(type_name).fields:
            bare = _bare(field_type)
            full = None if bare in BUILTINS else _resolve(bare, package, self.texts)
            out.append((field_type, name, full))
        return out

    def md5(self, type_name: str, within: frozenset[str] = frozenset()) -> str:
        if type_name in self.md5s:
            return self.md5s[type_name]
        if type_name in within:
            raise FormatError(f"{type_name} contains itself: ROS gives it no md5sum")
        lines = list(self.spec(type_name).constants)
        for field_type, name, full in self.uses(type_name):
            word = field_type if full is None else self.md5(full, within | {type_name})
            lines.append(f"{word} {name}")
        digest = hashlib.md5("\n".join(lines).encode(), usedforsecurity=False).hexdigest()
        self.md5s[type_name] = digest
        return digest

    def depends(self, type_name: str, seen: list[str]) -> None:
        """genmsg's `get_all_depends` order (depth first), each type once, into `seen`."""
        for _, _, full in self.uses(type_name):
            if full is not None and full not in seen:
                seen.append(full)
                self.depends(full, seen)


def _bounded(types: _Types, root: str) -> _Types:
    """`types`, once `root`'s types are known to hold each other at most `MAX_DEPTH` deep
    (md5 and depends recurse a level a frame: #34 item 5); FormatError otherwise."""

    def children(name: str) -> list[str]:
        if name not in types.texts:
            return []
        return [full for _, _, full in types.uses(name) if full is not None and full in types.texts]

    check_depth(root, children)
    return types


def md5sum(type_name: str, full_text: str) -> str:
    """The md5sum ROS gives `type_name`, from its connection's `message_definition`."""
    return _bounded(_Types(split(type_name, full_text)), type_name).md5(type_name)


def full_text(type_name: str, texts: Mapping[str, str]) -> str:
    """The `message_definition` genmsg writes for `type_name`, from each type's own `.msg`
    text (`texts` must hold `type_name` and every type it depends on: `FormatError`)."""
    types = _bounded(_Types(texts), type_name)
    order: list[str] = []
    types.depends(type_name, order)
    parts = [types.texts[type_name] + "\n"]
    for name in order:
        parts.append(f"{SEPARATOR}\nMSG: {name}\n{texts[name]}\n")
    return "".join(parts)[:-1]
