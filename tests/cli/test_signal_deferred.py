"""A Ctrl-C or SIGTERM that lands in a finaliser is delivered again once out of it, not
printed as "Exception ignored in ..." and lost (seen in CI: the weakref callback of an
import's module lock took a KeyboardInterrupt, and the command went on); nor in
`__set_name__`, where Python 3.11 wraps it in a RuntimeError."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator

import pytest

from nanorec.signals import stop

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGALRM"), reason="no SIGALRM here")


@pytest.fixture(autouse=True)
def keep_handlers() -> Iterator[None]:
    kept = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM)}
    yield
    signal.setitimer(signal.ITIMER_REAL, 0)
    for number, handler in kept.items():
        signal.signal(number, handler)


def _finaliser(filename: str, name: str) -> object:
    """A function whose frame looks like a finaliser's: it takes a signal and returns."""
    scope: dict[str, object] = {"signal": signal}
    source = f"def {name}(number):\n    signal.raise_signal(number)\n    return 'left'\n"
    exec(compile(source, filename, "exec"), scope)
    return scope[name]


def _wait_for_it() -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        time.sleep(0.001)
    raise AssertionError("the deferred signal never came")


@pytest.mark.parametrize(
    ("filename", "name"),
    [
        ("<frozen importlib._bootstrap>", "cb"),
        ("finalised.py", "__del__"),
        ("dataclasses.py", "__set_name__"),
    ],
)
@pytest.mark.parametrize(
    ("number", "raised"),
    [(signal.SIGINT, KeyboardInterrupt), (signal.SIGTERM, SystemExit)],
)
def test_a_signal_in_a_finaliser_is_raised_after_it(
    filename: str, name: str, number: int, raised: type[BaseException]
) -> None:
    signal.signal(number, stop)
    finaliser = _finaliser(filename, name)
    assert finaliser(number) == "left"  # type: ignore[operator]
    with pytest.raises(raised) as caught:
        _wait_for_it()
    if isinstance(caught.value, SystemExit):
        assert caught.value.code == 128 + number


def test_a_signal_elsewhere_is_raised_at_once() -> None:
    signal.signal(signal.SIGINT, stop)
    elsewhere = _finaliser("ordinary.py", "work")
    with pytest.raises(KeyboardInterrupt):
        elsewhere(signal.SIGINT)  # type: ignore[operator]
