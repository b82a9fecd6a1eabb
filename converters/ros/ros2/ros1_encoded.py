"""ROS1-encoded messages in an MCAP file the ROS 2 converter took: decoded as ROS1 decodes them.

`mcap convert` and `nanorec export X.bag --format mcap` (and `mcap-ros1-support`'s writer)
write a ROS1 bag as MCAP with profile `ros1`: each payload untouched as a `ros1` message, each
connection's `message_definition` as a `ros1msg` schema. Such a file is an MCAP, so the ROS 2
converter takes it, but its messages are not CDR: they are decoded here by the ROS1 converter's
own decoder (`ros1/msgdef.py`), so a message comes out as the very dict `nanorec cat X.bag`
gives for the same message of the original bag. `Ros2Recording` dispatches to this module by
the encoding of a type's definition; nothing else in the ROS 2 decoding path changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from nanorec.errors import FormatError

from ..ros1.msgdef import Decoder as Ros1Decoder
from .storage import Definition

#: The MCAP schema encoding of a ROS1 definition and the message encoding of its payloads.
ROS1_SCHEMA: Final = "ros1msg"
ROS1_MESSAGE: Final = "ros1"


def is_ros1(definition: Definition | None) -> bool:
    """Whether `definition` (a type's schema as stored) is a ROS1 one."""
    return definition is not None and definition.encoding == ROS1_SCHEMA


class Ros1Decoders:
    """The ROS1 decoder of each `ros1msg` type of an archive, made on first use; the same two
    calls as `cdr.Decoder` (`types`, `decode`), so the recording treats both alike."""

    def __init__(self, definitions: Mapping[str, Definition]) -> None:
        self.definitions = definitions
        self._decoders: dict[str, Ros1Decoder | FormatError] = {}

    def types(self, type_name: str) -> Ros1Decoder:
        """The decoder of `type_name`; `FormatError` when its definition is missing or does
        not parse (said once, then remembered)."""
        if type_name not in self._decoders:
            self._decoders[type_name] = self._make(type_name)
        found = self._decoders[type_name]
        if isinstance(found, FormatError):
            raise found
        return found

    def _make(self, type_name: str) -> Ros1Decoder | FormatError:
        definition = self.definitions.get(type_name)
        if not is_ros1(definition):
            return FormatError(f"no ROS1 definition of {type_name}")
        assert definition is not None
        try:
            return Ros1Decoder(type_name, definition.text)
        except FormatError as error:
            return FormatError(f"the ROS1 definition of {type_name}: {error.message}")
        except (SyntaxError, RecursionError):  # as BagRecording.decoder: bytes, not a crash
            return FormatError(f"the ROS1 definition of {type_name} nests too deep to decode")

    def decode(self, type_name: str, data: bytes) -> Any:
        """The ROS1 payload `data` of a `type_name` message as a dict (`FormatError` with the
        offset when it does not fit the type)."""
        return self.types(type_name).decode(data)
