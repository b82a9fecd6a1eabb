"""A batch's topic keys to archive topic codes through the table of keys seen
(`columns.known_codes`): a new, negative or huge key is left to the sort (None), never a
huge table."""

from __future__ import annotations

import numpy as np

from nanorec.converters.ros.ros2.columns import known_codes, learn_codes


def _keys(*values: int) -> np.ndarray:
    return np.array(values, np.int64)


def _codes(keys: np.ndarray, known: np.ndarray) -> list[int]:
    codes = known_codes(keys, known)
    assert codes is not None
    return list(codes.tolist())


def test_known_keys_are_looked_up() -> None:
    known = learn_codes(np.zeros(0, np.int64), _keys(3, 7), _keys(1, 0))
    assert _codes(_keys(7, 3, 3, 7), known) == [0, 1, 1, 0]
    assert _codes(_keys(), known) == []


def test_a_new_key_is_left_to_the_sort() -> None:
    known = learn_codes(np.zeros(0, np.int64), _keys(3), _keys(0))
    assert known_codes(_keys(3, 5), known) is None  # inside the table, not seen
    assert known_codes(_keys(3, 9), known) is None  # past it
    assert known_codes(_keys(-1), known) is None


def test_keys_outside_the_table_are_not_kept() -> None:
    known = learn_codes(np.zeros(0, np.int64), _keys(-5, 2, 1 << 40), _keys(0, 1, 2))
    assert len(known) == 3  # not 2**40
    assert _codes(_keys(2), known) == [1]
    assert known_codes(_keys(1 << 40), known) is None
    assert known_codes(_keys(-5), known) is None


def test_learning_keeps_what_was_known() -> None:
    known = learn_codes(np.zeros(0, np.int64), _keys(9), _keys(0))
    known = learn_codes(known, _keys(2), _keys(1))
    assert _codes(_keys(2, 9), known) == [1, 0]
