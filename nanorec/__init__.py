"""nanorec: indexed, seekable archives of recorded simulation and robotics logs."""

from nanorec._version import __version__
from nanorec.contract import Converter, Message, Recording
from nanorec.errors import NanorecError
from nanorec.index import Index
from nanorec.reader import ArchiveReader
from nanorec.recover import RecoverResult, recover
from nanorec.registry import open
from nanorec.selection import Selection
from nanorec.verify import VerifyReport, verify
from nanorec.writer import ArchiveWriter

__all__ = [
    "ArchiveReader",
    "ArchiveWriter",
    "Converter",
    "Index",
    "Message",
    "NanorecError",
    "Recording",
    "RecoverResult",
    "Selection",
    "VerifyReport",
    "__version__",
    "open",
    "recover",
    "verify",
]
