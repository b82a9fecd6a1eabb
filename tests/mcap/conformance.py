"""What every recording's MCAP export must satisfy, whatever its format (a converter's
tests call `check_mcap_export` on its samples): a file `doctor` accepts, messages in time
order, JSON messages strict JSON that validates against their channel's JSON Schema,
protobuf messages that the `protobuf` package reads whole with their schema, log
times on the archive index's clock, and a time-range selection that keeps exactly what lies
inside the range."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np

from nanorec.outputs.mcap import export_mcap
from nanorec.selection import Selection
from tests.mcap.decode import decode
from tests.mcap.doctor import Checked, doctor

#: Log times may carry the native clock's sub-microsecond part; the index holds microseconds.
SLACK_NS = 1000


def _strict(data: bytes) -> Any:
    def refuse(name: str) -> Any:
        raise AssertionError(f"{name} in a JSON message")

    return json.loads(data, parse_constant=refuse)


def check_mcap_export(recording: Any, folder: Path, *, validate_every: int = 1) -> Checked:
    """Export `recording` whole and a middle third of it; check both (AssertionError)."""
    out = folder / "conformance.mcap"
    export_mcap(recording, out, overwrite=True)
    checked = doctor(out)
    times = [m.log_time for m in checked.messages]
    assert times == sorted(times), "messages are not in time order"
    stamps_ns = recording.reader.index.timestamp_us.astype(np.int64) * 1000
    lo, hi = int(stamps_ns.min()), int(stamps_ns.max())
    assert lo - SLACK_NS <= times[0] and times[-1] <= hi + SLACK_NS
    validators: dict[int, Any] = {}
    for message in checked.messages[::validate_every]:
        channel = checked.channels[message.channel_id]
        if channel.message_encoding == "protobuf":  # every byte read, no unknown field
            assert isinstance(decode(checked, message), dict)
            continue
        if channel.message_encoding != "json":
            continue
        value = _strict(message.data)
        assert isinstance(value, dict)
        schema = checked.schemas.get(channel.schema_id)
        if schema is not None and schema.encoding == "jsonschema":
            validator = validators.get(schema.id)
            if validator is None:
                validator = validators[schema.id] = jsonschema.Draft202012Validator(
                    json.loads(schema.data)
                )
            validator.validate(value)
    duration = (hi - lo) / 1e9
    if duration > 0:
        start, end = duration / 3, 2 * duration / 3
        export_mcap(recording, out, overwrite=True, selection=Selection.make(start=start, end=end))
        part = doctor(out)
        first = lo + round(start * 1e6) * 1000  # Selection counts whole microseconds
        last = lo + round(end * 1e6) * 1000
        kept = [m.log_time for m in part.messages]
        assert kept and all(first - SLACK_NS <= t <= last + SLACK_NS for t in kept)
        if all(t % 1000 == 0 for t in times):  # on the index's clock: exactly what is inside
            assert kept == [t for t in times if first <= t <= last]
    out.unlink()
    return checked
