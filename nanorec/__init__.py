"""nanorec: indexed, seekable archives of recorded simulation and robotics logs."""

from nanorec.errors import NanorecError

__all__ = ["NanorecError"]
__version__ = "0.1.0"
