"""Ctrl-C and SIGTERM as exceptions a command can catch, never ones Python prints and drops.

Python's own SIGINT handler raises KeyboardInterrupt in whatever frame runs when the signal
is checked. Inside a finaliser (a `__del__`, the weakref callback that retires an import's
module lock) an exception cannot propagate: Python prints "Exception ignored in ..." with a
traceback and the command goes on; inside `__set_name__` (a dataclass field, while a module
is imported) Python 3.11 wraps it in a RuntimeError. `stop` defers those few cases by a few
milliseconds (an interval timer delivers them again), so the command stops where it can
clean up.
"""

from __future__ import annotations

import signal
from types import FrameType

#: Delivered again this long after a signal that landed in a finaliser: enough to leave it.
_DEFER_S = 0.005


#: Frames an exception cannot leave as itself.
_SEALED = frozenset({"__del__", "__set_name__"})


def _in_finaliser(frame: FrameType) -> bool:
    code = frame.f_code
    return code.co_name in _SEALED or code.co_filename.startswith("<frozen importlib")


def stop(signum: int, frame: FrameType | None) -> None:
    """Handler for SIGINT (KeyboardInterrupt) and SIGTERM (SystemExit 143): the exception is
    raised where it can propagate, later if `frame` is a finaliser."""
    if frame is not None and _in_finaliser(frame) and hasattr(signal, "SIGALRM"):
        signal.signal(signal.SIGALRM, lambda _alarm, later: stop(signum, later))
        signal.setitimer(signal.ITIMER_REAL, _DEFER_S)
        return
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise SystemExit(128 + signum)
