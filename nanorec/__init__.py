"""nanorec: indexed, seekable archives of recorded simulation and robotics logs."""

from nanorec._version import __version__
from nanorec.errors import NanorecError
from nanorec.index import Index
from nanorec.reader import ArchiveReader
from nanorec.recover import RecoverResult, recover
from nanorec.registry import open
from nanorec.verify import VerifyReport, verify
from nanorec.writer import ArchiveWriter

__all__ = [
    "ArchiveReader",
    "ArchiveWriter",
    "Index",
    "NanorecError",
    "RecoverResult",
    "VerifyReport",
    "__version__",
    "open",
    "recover",
    "verify",
]
