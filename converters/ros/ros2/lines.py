"""`nanorec cat` of a ROS 2 archive as NDJSON, read and decoded a run of messages at a time.

A message's line is `dumps(decoded_line(recording)(n))` (`nanorec.converters.ros.common.topics`,
`nanorec.outputs.tables`). Here a run's data come from one read (`datas.Datas`), each message is
decoded by the generated decoder's plain variant (numeric arrays as lists, `Decoder.
plain_decode`) and its line is `json.dumps` of the values as they are: `json_safe`'s walk
over every value is needed only where a value is not JSON's own (a NaN, bytes), which
`json.dumps` refuses, and then that line takes the walk. A message the plain path does not
take (compressed, ROS1-encoded, of a type without a definition, undecodable) takes the usual
one: the same line, the same warnings.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final

import numpy as np
from numpy.typing import NDArray

from nanorec.outputs.json_pieces import dumps_pieces
from nanorec.outputs.tables import dumps
from nanorec.untyped import Payload

from .datas import Datas
from .storage import ZSTD_MAGIC

if TYPE_CHECKING:
    from .cdr import PlainDecoder
    from .recording import Ros2Recording

#: Messages read and decoded at once.
_RUN: Final = 4096


def ndjson_lines(
    recording: Ros2Recording,
    numbers: Sequence[int] | NDArray[Any],
    line: Callable[[int], dict[str, Payload]],
) -> Iterator[str]:
    """The NDJSON text of messages `numbers` (`line`: a message's row, the usual path), a
    run of lines at a time."""
    reader = recording.reader
    index = reader.index
    compressed = recording.meta.compression[1].upper() == "MESSAGE"
    topics = [types[0] if types else "" for types in index.types_table]
    plain: dict[int, tuple[str, str, PlainDecoder] | None] = {}

    def plain_of(code: int) -> tuple[str, str, PlainDecoder] | None:
        """(topic, type, its plain decoder) of type code `code`, when the plain path may
        take it."""
        if code not in plain:
            topic = topics[code]
            type_name = recording.type_of(topic)
            plain[code] = (
                None
                if compressed
                or topic not in recording.meta.types
                or type_name in recording.ros1_types
                or recording.undefined(type_name)
                else (topic, type_name, recording.decoder.plain_decoder(type_name))
            )
        return plain[code]

    wanted = np.asarray(numbers, np.int64)
    encode = json.JSONEncoder(allow_nan=False, ensure_ascii=False).encode
    for first in range(0, len(wanted), _RUN):
        run = wanted[first : first + _RUN]
        buffer, starts, lengths = Datas(reader, run).take(0, len(run))
        codes = index.types_code[run].tolist()
        times = recording.meta.time[run].tolist()
        out: list[str] = []
        for number, code, ns, start, length in zip(
            run.tolist(), codes, times, starts.tolist(), lengths.tolist(), strict=True
        ):
            known = plain[code] if code in plain else plain_of(code)
            value = None
            if known is not None:
                data = buffer[start : start + length]
                if data[:4] != ZSTD_MAGIC:
                    value = known[2](data)
            if value is None:
                pieces = dumps_pieces(line(number))
                text = next(pieces)
                more = next(pieces, None)
                if more is None:
                    out.append(text)
                    continue
                # a big array (`nanorec.outputs.json_pieces`): the lines so far, then it in pieces
                out.append(text + more)
                yield "\n".join(out)
                out = []
                yield from pieces
                yield "\n"
                continue
            row = {
                "number": number,
                "topic": known[0],  # type: ignore[index]
                "type": known[1],  # type: ignore[index]
                "time_ns": ns,
                "time_s": ns / 1e9,
                "message": value,
            }
            try:
                out.append(encode(row))
            except (ValueError, TypeError):  # a NaN or infinity, bytes: JSON's values first
                out.append(dumps(row))
        out.append("")
        yield "\n".join(out)
