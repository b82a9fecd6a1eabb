"""A rosbag2 bag's `metadata.yaml`: read as rosbag2 decodes it, written as rosbag2 emits it.

Reading follows `rosbag2_storage/include/rosbag2_storage/yaml.hpp` (`convert<BagMetadata>::decode`):
which keys are read depends on the file's `version` (compression from 3, QoS profiles from 4 (a
YAML document inside a string until 8, a real list from 9), `files` from 5, `custom_data` from 6,
`type_description_hash` from 7, `ros_distro` from 8); other keys are ignored. Scalars are kept as
the text yaml-cpp would hand to `as<std::string>()` (PyYAML's BaseLoader resolves no types), so
a value like `ros_distro: 1.0` stays "1.0".

Writing follows the C++ writer of the requested version (`MetadataIo::write_metadata`: a
yaml-cpp `Node` streamed out): key order and fields as that era's `encode` wrote them, block
style with 2-space indents, strings plain when yaml-cpp allows it and double-quoted otherwise,
empty sequences `[]`, an empty `custom_data` as `~`, and no newline after the last line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Final, TypeAlias

from nanorec.errors import FormatError, UnsupportedError

from .extras import extra

#: A YAML node as yaml-cpp holds it: every scalar is text.
YamlNode: TypeAlias = "str | list[YamlNode] | dict[str, YamlNode] | None"
#: A document as PyYAML loads it: `YamlNode`s (BaseLoader), or SafeLoader's ints, floats,
#: booleans and dates too (PyYAML is untyped here: its stubs are not installed).
YamlDocument: TypeAlias = Any

#: The version rosbag2's writer stamps now (`bag_metadata.hpp`: `int version = 9`).
CURRENT_VERSION = 9


@dataclass(frozen=True)
class TopicInformation:
    """One `topics_with_message_count` entry (`topic_metadata` flattened + `message_count`).

    `offered_qos_profiles` is the stored YAML text for versions 4-8 ("" before 4) and the
    list of profiles (as YAML nodes) from version 9."""

    name: str
    type: str
    serialization_format: str
    offered_qos_profiles: str | tuple[YamlNode, ...] = ""
    type_description_hash: str = ""
    message_count: int = 0


@dataclass(frozen=True)
class FileInformation:
    """One `files` entry (version 5+): a storage file's own totals."""

    path: str
    starting_time_ns: int
    duration_ns: int
    message_count: int


@dataclass(frozen=True)
class BagMetadata:
    """The content of `metadata.yaml` (`rosbag2_storage::BagMetadata` less `bag_size`, which
    rosbag2 never stores: readers measure it). Times in ns; `custom_data` keeps file order."""

    version: int
    storage_identifier: str
    duration_ns: int
    starting_time_ns: int
    message_count: int
    topics_with_message_count: tuple[TopicInformation, ...] = ()
    compression_format: str = ""
    compression_mode: str = ""
    relative_file_paths: tuple[str, ...] = ()
    files: tuple[FileInformation, ...] = ()
    custom_data: tuple[tuple[str, str], ...] = ()
    ros_distro: str = ""


# ---------------------------------------------------------------------------------------------
# Reading


def _yaml() -> ModuleType:
    """PyYAML (the `ros` extra), imported when reading: writing needs only our emitter."""
    return extra("yaml")


def _get(node: Mapping[str, YamlNode], key: str, where: str) -> YamlNode:
    if key not in node:
        raise FormatError(f"metadata.yaml: {where} has no key {key!r}", expected=key)
    return node[key]


def _map(value: YamlNode, where: str) -> dict[str, YamlNode]:
    if not isinstance(value, dict):
        raise FormatError(f"metadata.yaml: {where} is not a mapping", actual=value)
    return value


def _str(node: Mapping[str, YamlNode], key: str, where: str) -> str:
    value = _get(node, key, where)
    if not isinstance(value, str):
        raise FormatError(f"metadata.yaml: {where}.{key} is not a scalar", actual=value)
    return value


# yaml-cpp reads integers with `stream.unsetf(std::ios::dec); stream >> value`: the base comes
# from the prefix (0x hex, 0 octal), and trailing whitespace is allowed.
_INT = re.compile(r"([-+]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)\s*")


def _int(node: Mapping[str, YamlNode], key: str, where: str, *, unsigned: bool = True) -> int:
    text = _str(node, key, where)
    match = _INT.fullmatch(text)
    if match is None or (unsigned and match.group(1) == "-"):
        raise FormatError(f"metadata.yaml: {where}.{key} is not an integer: {text!r}", actual=text)
    digits = match.group(2)
    if digits[:2] in ("0x", "0X"):
        value = int(digits, 16)
    else:
        value = int(digits, 8 if digits.startswith("0") else 10)
    return -value if match.group(1) == "-" else value


def _seq(value: YamlNode, where: str) -> list[YamlNode]:
    if not isinstance(value, list):
        raise FormatError(f"metadata.yaml: {where} is not a sequence", actual=value)
    return value


def _topic(value: YamlNode, version: int, where: str) -> TopicInformation:
    entry = _map(value, where)
    meta = _map(_get(entry, "topic_metadata", where), where + ".topic_metadata")
    mwhere = where + ".topic_metadata"
    qos: str | tuple[YamlNode, ...] = ""
    if version >= 9:
        qos = tuple(_seq(_get(meta, "offered_qos_profiles", mwhere), mwhere))
    elif version >= 4:
        qos = _str(meta, "offered_qos_profiles", mwhere)
    return TopicInformation(
        name=_str(meta, "name", mwhere),
        type=_str(meta, "type", mwhere),
        serialization_format=_str(meta, "serialization_format", mwhere),
        offered_qos_profiles=qos,
        type_description_hash=_str(meta, "type_description_hash", mwhere) if version >= 7 else "",
        message_count=_int(entry, "message_count", where),
    )


def _file(value: YamlNode, where: str) -> FileInformation:
    entry = _map(value, where)
    return FileInformation(
        path=_str(entry, "path", where),
        starting_time_ns=_int(
            _map(_get(entry, "starting_time", where), where + ".starting_time"),
            "nanoseconds_since_epoch",
            where + ".starting_time",
        ),
        duration_ns=_int(
            _map(_get(entry, "duration", where), where + ".duration"),
            "nanoseconds",
            where + ".duration",
        ),
        message_count=_int(entry, "message_count", where),
    )


#: The deepest YAML nesting read (rosbag2 writes 4 levels): PyYAML's composer takes one
#: Python frame a level, so deeper documents are refused from the parser's events first.
MAX_YAML_DEPTH: Final = 64


def load_yaml(text: str, *, safe: bool = False) -> YamlDocument:
    """`text` as PyYAML's BaseLoader reads it (every scalar text; `safe`: SafeLoader's
    types), libyaml's when installed. Raises FormatError, in one line, for bad YAML or
    nesting deeper than `MAX_YAML_DEPTH` (found without recursion, before loading)."""
    yaml = _yaml()
    base = "SafeLoader" if safe else "BaseLoader"
    loader = getattr(yaml, "C" + base, getattr(yaml, base))
    try:
        depth = 0
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_YAML_DEPTH:
                    line = event.start_mark.line + 1 if event.start_mark else "?"
                    raise FormatError(
                        f"metadata.yaml nests more than {MAX_YAML_DEPTH} levels deep (line {line})"
                    )
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
        return yaml.load(text, Loader=loader)
    except yaml.YAMLError as exc:
        detail = " ".join(str(exc).split())  # PyYAML's problem, context and mark lines
        raise FormatError(f"metadata.yaml is not valid YAML: {detail}") from None


def parse_metadata(text: str, *, stored: bool = False) -> BagMetadata:
    """Decode `metadata.yaml` text as rosbag2's `convert<BagMetadata>::decode` does;
    `stored`: the metadata a storage file keeps (sqlite `metadata` table, MCAP `rosbag2`
    record), the BagMetadata map itself, without metadata.yaml's top key.

    Raises FormatError (naming the key) for bad YAML, a missing key or a value of the wrong
    kind."""
    document = load_yaml(text)
    if not isinstance(document, dict):
        raise FormatError("metadata.yaml: the document is not a mapping", actual=document)
    top = "rosbag2_bagfile_information"
    info = document if stored else _map(_get(document, top, "the document"), top)
    # in decode's order, so an error names the first key rosbag2 itself would miss
    version = _int(info, "version", top, unsigned=False)
    storage_identifier = _str(info, "storage_identifier", top)
    duration_ns = _int(_map(_get(info, "duration", top), top), "nanoseconds", top + ".duration")
    starting_time_ns = _int(
        _map(_get(info, "starting_time", top), top),
        "nanoseconds_since_epoch",
        top + ".starting_time",
    )
    message_count = _int(info, "message_count", top)
    topics = tuple(
        _topic(t, version, f"{top}.topics_with_message_count[{i}]")
        for i, t in enumerate(
            _seq(_get(info, "topics_with_message_count", top), top + ".topics_with_message_count")
        )
    )
    paths = _seq(_get(info, "relative_file_paths", top), top + ".relative_file_paths")
    for path in paths:
        if not isinstance(path, str):
            raise FormatError(f"metadata.yaml: {top}.relative_file_paths holds a non-scalar")
    compression_format = _str(info, "compression_format", top) if version >= 3 else ""
    compression_mode = _str(info, "compression_mode", top) if version >= 3 else ""
    files: tuple[FileInformation, ...] = ()
    if version >= 5:
        files = tuple(
            _file(f, f"{top}.files[{i}]")
            for i, f in enumerate(_seq(_get(info, "files", top), top + ".files"))
        )
    custom: tuple[tuple[str, str], ...] = ()
    if version >= 6:
        value = _get(info, "custom_data", top)
        # yaml-cpp: `~` (and an empty value) is a null node; iterating it yields nothing.
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(item, str):
                    raise FormatError(f"metadata.yaml: {top}.custom_data.{key} is not a scalar")
            custom = tuple((k, v) for k, v in value.items() if isinstance(v, str))
        elif value not in ("~", "", "null", "Null", "NULL", None):
            raise FormatError(f"metadata.yaml: {top}.custom_data is not a mapping", actual=value)
    return BagMetadata(
        version=version,
        storage_identifier=storage_identifier,
        duration_ns=duration_ns,
        starting_time_ns=starting_time_ns,
        message_count=message_count,
        topics_with_message_count=topics,
        compression_format=compression_format,
        compression_mode=compression_mode,
        relative_file_paths=tuple(p for p in paths if isinstance(p, str)),
        files=files,
        custom_data=custom,
        ros_distro=_str(info, "ros_distro", top) if version >= 8 else "",
    )


# ---------------------------------------------------------------------------------------------
# Writing: a small yaml-cpp block emitter (src/emitter.cpp, src/emitterutils.cpp, src/exp.h)

_NULL_WORDS = ("~", "null", "Null", "NULL")
_PLAIN_TERMINATORS = frozenset(",[]{}#&*!|>'\"%@`")
_BLANK_OR_BREAK = frozenset(" \t\r\n")
# exp.h NotPrintable: NUL, \x01-\x06, \a, \b, \v, \f, \x7f, \x0e-\x1f, and U+0080-0084/0086-009F.
_NOT_PRINTABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\x80-\x84\x86-\x9f\ufeff]")


def _plain_ok(text: str) -> bool:
    """yaml-cpp `IsValidPlainScalar` in block context (the only one rosbag2's files use)."""
    if not text or text in _NULL_WORDS:
        return False
    first = text[0]
    if first in _BLANK_OR_BREAK or first in _PLAIN_TERMINATORS:
        return False
    if first in "-?:" and (len(text) == 1 or text[1] in _BLANK_OR_BREAK):
        return False
    if text[-1] == " ":
        return False
    for i, ch in enumerate(text):
        nxt = text[i + 1] if i + 1 < len(text) else ""
        if ch == ":" and (nxt == "" or nxt in _BLANK_OR_BREAK):
            return False  # EndScalar
        if ch in _BLANK_OR_BREAK and nxt == "#":
            return False  # CommentAfterBreak
        if ch in "\t&\r\n":
            return False  # DisallowedBreak / DisallowedWhitespace
    return _NOT_PRINTABLE.search(text) is None


def _double_quoted(text: str) -> str:
    """yaml-cpp `WriteDoubleQuotedString` (no escaping of non-ASCII)."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\b":
            out.append("\\b")
        elif ch == "\f":
            out.append("\\f")
        elif code < 0x20 or 0x80 <= code <= 0xA0:
            out.append(f"\\x{code:02x}")
        elif code == 0xFEFF:
            out.append("\\ufeff")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _scalar(text: str) -> str:
    return text if _plain_ok(text) else _double_quoted(text)


def _inline(node: YamlNode) -> str | None:
    """The text of a node that stays on its key's line, or None for a block collection."""
    if node is None:
        return "~"
    if isinstance(node, str):
        return _scalar(node)
    if not node:
        return "[]" if isinstance(node, list) else "{}"
    return None


def _emit(node: YamlNode, col: int, lines: list[str], first_prefix: str | None) -> None:
    """Append block lines for a non-empty collection at column `col`; the first line starts
    with `first_prefix` (a "- " already written by the enclosing sequence) when given."""
    items: list[tuple[str, YamlNode]]
    if isinstance(node, dict):
        items = [(_scalar(k) + ":", v) for k, v in node.items()]
    elif isinstance(node, list):
        items = [("-", v) for v in node]
    else:  # pragma: no cover - callers pass collections only
        raise TypeError(node)
    for index, (lead, value) in enumerate(items):
        indent = first_prefix if index == 0 and first_prefix is not None else " " * col
        text = _inline(value)
        if text is not None:
            lines.append(f"{indent}{lead} {text}")
        elif lead == "-":
            # an item that is itself a collection starts on the "- " line
            _emit(value, col + 2, lines, f"{indent}- ")
        else:
            lines.append(f"{indent}{lead}")
            _emit(value, col + 2, lines, None)


def emit_yaml(node: YamlNode) -> str:
    """A node as yaml-cpp's `operator<<(std::ostream&, const Node&)` prints it (block style,
    indent 2, no final newline)."""
    text = _inline(node)
    if text is not None:
        return text
    lines: list[str] = []
    _emit(node, 0, lines, None)
    return "\n".join(lines)


def _topic_node(topic: TopicInformation, version: int) -> dict[str, YamlNode]:
    meta: dict[str, YamlNode] = {
        "name": topic.name,
        "type": topic.type,
        "serialization_format": topic.serialization_format,
    }
    qos = topic.offered_qos_profiles
    if version >= 9:
        if isinstance(qos, str):
            if qos:
                raise UnsupportedError(
                    f"topic {topic.name}: turning version 4-8 QoS text into a version 9 list "
                    "needs rmw's QoS tables; write the metadata at its own version"
                )
            qos = ()
        meta["offered_qos_profiles"] = list(qos)
    elif version >= 4:
        if not isinstance(qos, str):
            if qos:
                raise UnsupportedError(
                    f"topic {topic.name}: turning a version 9 QoS list into version 4-8 text "
                    "needs rmw's QoS tables; write the metadata at its own version"
                )
            qos = ""
        meta["offered_qos_profiles"] = qos
    if version >= 7:
        meta["type_description_hash"] = topic.type_description_hash
    return {"topic_metadata": meta, "message_count": str(topic.message_count)}


def metadata_node(meta: BagMetadata, version: int = CURRENT_VERSION) -> dict[str, YamlNode]:
    """The `convert<BagMetadata>::encode` node of the rosbag2 release that wrote `version`.

    Up to version 4 (`metadata_io.cpp` before PR #870) `relative_file_paths` came right after
    `storage_identifier`; from 5 it follows the compression fields, with `files`, then
    `custom_data` (6+) and `ros_distro` (8+). The written `version` is `version`."""
    node: dict[str, YamlNode] = {"version": str(version)}
    node["storage_identifier"] = meta.storage_identifier
    if version <= 4:
        node["relative_file_paths"] = list(meta.relative_file_paths)
    node["duration"] = {"nanoseconds": str(meta.duration_ns)}
    node["starting_time"] = {"nanoseconds_since_epoch": str(meta.starting_time_ns)}
    node["message_count"] = str(meta.message_count)
    node["topics_with_message_count"] = [
        _topic_node(t, version) for t in meta.topics_with_message_count
    ]
    if version >= 3:
        node["compression_format"] = meta.compression_format
        node["compression_mode"] = meta.compression_mode
    if version >= 5:
        node["relative_file_paths"] = list(meta.relative_file_paths)
        node["files"] = [
            {
                "path": f.path,
                "starting_time": {"nanoseconds_since_epoch": str(f.starting_time_ns)},
                "duration": {"nanoseconds": str(f.duration_ns)},
                "message_count": str(f.message_count),
            }
            for f in meta.files
        ]
    if version >= 6:
        # convert<unordered_map>::encode of an empty map is a null Node, printed "~".
        node["custom_data"] = dict(meta.custom_data) if meta.custom_data else None
    if version >= 8:
        node["ros_distro"] = meta.ros_distro
    return node


def metadata_yaml(meta: BagMetadata, version: int = CURRENT_VERSION) -> str:
    """`metadata.yaml` as rosbag2's C++ writer of `version` writes it (no final newline).

    Raises UnsupportedError when the QoS profiles are held in the other version's form (text
    vs list) and are not empty: converting them needs rmw's policy tables."""
    return emit_yaml({"rosbag2_bagfile_information": metadata_node(meta, version)})


def serialized_metadata(meta: BagMetadata, version: int = CURRENT_VERSION) -> str:
    """`MetadataIo::serialize_metadata`: the same node without the top key, as stored in the
    sqlite `metadata` table and the MCAP `rosbag2` metadata record."""
    return emit_yaml(metadata_node(meta, version))
