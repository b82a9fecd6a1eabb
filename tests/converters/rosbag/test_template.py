"""Message record headers rebuilt from a learnt field order (`template.Template`)."""

from __future__ import annotations

import itertools
import struct

import pytest

from nanorec.converters.ros.ros1.records import OP_MESSAGE
from nanorec.converters.ros.ros1.template import Template


def _header(names: tuple[bytes, ...], conn: int, time_ns: int) -> bytes:
    """A message header as rosbag writes it: `len name=value` per field, in `names` order."""
    values = {
        b"op": bytes((OP_MESSAGE,)),
        b"conn": struct.pack("<I", conn),
        b"time": struct.pack("<II", *divmod(time_ns, 1_000_000_000)),
    }
    return b"".join(
        struct.pack("<I", len(name) + 1 + len(values[name])) + name + b"=" + values[name]
        for name in names
    )


@pytest.mark.parametrize("names", list(itertools.permutations((b"op", b"conn", b"time"))))
def test_build_gives_the_header_of_every_field_order(names: tuple[bytes, ...]) -> None:
    template = Template(names)
    for conn, time_ns in [
        (0, 0),
        (7, 1_500_000_000_123),
        (2**32 - 1, (2**32 - 1) * 1_000_000_000 + 999_999_999),
    ]:
        built = template.build(conn, time_ns)
        assert built == _header(names, conn, time_ns)
        assert len(built) == template.length
        assert built[template.conn_at : template.conn_at + 4] == struct.pack("<I", conn)
