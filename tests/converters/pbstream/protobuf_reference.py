"""The `protobuf` package as an independent reader of the same records (tests and bench
only): descriptors are built at run time from `schema.py`'s field tables with
descriptor_pb2, so protobuf parses exactly the messages our wire reader decodes."""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from nanorec.converters.pbstream.schema import SCHEMA

PACKAGE = "nanorec_test.pbstream"
_F = descriptor_pb2.FieldDescriptorProto
_SCALARS = {
    "int32": _F.TYPE_INT32,
    "int64": _F.TYPE_INT64,
    "uint32": _F.TYPE_UINT32,
    "bool": _F.TYPE_BOOL,
    "enum": _F.TYPE_INT32,  # same wire form; keeps values a plain int
    "double": _F.TYPE_DOUBLE,
    "float": _F.TYPE_FLOAT,
    "string": _F.TYPE_BYTES,  # compare raw bytes, no UTF-8 check
    "bytes": _F.TYPE_BYTES,
    "packed_int32": _F.TYPE_INT32,
    "packed_sint32": _F.TYPE_SINT32,
    "packed_float": _F.TYPE_FLOAT,
}


def _file() -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto(
        name="pbstream_test.proto", package=PACKAGE, syntax="proto3"
    )
    serialized = proto.message_type.add(name="SerializedData")
    kinds = [
        "PoseGraph",
        "AllTrajectoryBuilderOptions",
        "Submap",
        "Node",
        "TrajectoryData",
        "ImuDataRecord",
        "OdometryDataRecord",
        "FixedFramePoseDataRecord",
        "LandmarkDataRecord",
    ]
    for number, name in enumerate(kinds, start=1):
        serialized.field.add(
            name=f"f{number}",
            number=number,
            label=_F.LABEL_OPTIONAL,
            type=_F.TYPE_MESSAGE,
            type_name=f".{PACKAGE}.{name}",
        )
    for message, spec in SCHEMA.items():
        item = proto.message_type.add(name=message)
        for number, (name, kind, repeated) in spec.items():
            field = item.field.add(name=name, number=number)
            packed = kind.startswith("packed_")
            field.label = _F.LABEL_REPEATED if repeated or packed else _F.LABEL_OPTIONAL
            if kind in _SCALARS:
                field.type = _SCALARS[kind]
            else:
                field.type = _F.TYPE_MESSAGE
                field.type_name = f".{PACKAGE}.{kind}"
    return proto


_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_file())


def message_class(name: str) -> Any:
    return message_factory.GetMessageClass(_POOL.FindMessageTypeByName(f"{PACKAGE}.{name}"))


def plain(message: Any) -> dict[str, Any]:
    """A parsed protobuf message in our decoder's shape (lists for repeated fields)."""
    out: dict[str, Any] = {}
    for field, value in message.ListFields():
        if field.type == _F.TYPE_MESSAGE:
            if field.is_repeated:
                out[field.name] = [plain(item) for item in value]
            else:
                out[field.name] = plain(value)
        elif field.is_repeated:
            out[field.name] = list(value)
        else:
            out[field.name] = value
    return out


def ours(value: Any) -> Any:
    """Our decoder's output with arrays as lists and strings as bytes, to compare."""
    import numpy as np

    if isinstance(value, dict):
        return {k: ours(v) for k, v in value.items()}
    if isinstance(value, list):
        return [ours(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape")
    return value
