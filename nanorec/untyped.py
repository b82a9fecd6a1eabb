"""The values nanorec cannot type, named so that `Any` says why it is there.

A message's payload is whatever its format packed with msgpack, and a report's `details`, a
summary or a `--json` document is JSON built for humans and tools, and the globals of code
generated at run time hold whatever that code calls: their shape is the format's, not the
core's. Everything else (options, requests, reports, hooks, callbacks) is
typed; `tests/test_any_census.py` counts the rest.
"""

from __future__ import annotations

from typing import Any, TypeAlias

#: A value decoded from (or packed into) msgpack: a message, a side member.
Payload: TypeAlias = Any
#: A JSON value (what `json.dumps` takes).
Json: TypeAlias = Any
#: A JSON object: a report's `details`, a recording's `summary()`.
JsonObject: TypeAlias = dict[str, Any]
#: The globals of generated code (`exec`): its functions and the helpers they call, by name.
Namespace: TypeAlias = dict[str, Any]

__all__ = ["Json", "JsonObject", "Namespace", "Payload"]
