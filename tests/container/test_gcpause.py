"""`paused_gc`: the collector off inside, its state restored after, nesting counted."""

from __future__ import annotations

import gc
import threading

import pytest

from nanorec.gcpause import paused_gc


def test_paused_inside_and_restored_after() -> None:
    assert gc.isenabled()
    with paused_gc():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_restored_after_an_error() -> None:
    with pytest.raises(ValueError), paused_gc():
        raise ValueError
    assert gc.isenabled()


def test_a_disabled_collector_stays_disabled() -> None:
    gc.disable()
    try:
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_nested_and_concurrent_pauses() -> None:
    inside = threading.Event()
    release = threading.Event()

    def other() -> None:
        with paused_gc():
            inside.set()
            release.wait(10)

    thread = threading.Thread(target=other)
    with paused_gc():
        thread.start()
        inside.wait(10)
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert not gc.isenabled()  # the other thread's pause is still on
    release.set()
    thread.join(10)
    assert gc.isenabled()
