"""nanorec: indexed, seekable archives of recorded simulation and robotics logs."""

from pathlib import Path as _Path

from nanorec import _checkout
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

_checkout.install(_Path(__file__).resolve().parent)  # run from a checkout: see _checkout.py

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
