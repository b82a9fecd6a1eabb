"""libstdc++'s `std::sort` (bits/stl_algo.h, bits/stl_heap.h), emulated: the order it leaves
equal keys in is part of texts C++ tools print (`ros2 bag info --sort type`), and it is not
stable past 16 elements. A companion of `hashorder` (C++ hash-map iteration orders)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

_T = TypeVar("_T")
_THRESHOLD = 16  # _S_threshold


def cxx_sort(items: Sequence[_T], less: Callable[[_T, _T], bool]) -> list[_T]:
    """The order libstdc++'s `std::sort(first, last, comp)` leaves `items` in.

    Up to 16 elements it is a plain insertion sort (stable); past that, median-of-three
    quicksort, heap sort when too deep, then insertion sort: equal keys may be reordered."""
    a = list(items)
    n = len(a)
    if n > 1:
        _introsort_loop(a, 0, n, 2 * (n.bit_length() - 1), less)
        _final_insertion_sort(a, 0, n, less)
    return a


def _introsort_loop(
    a: list[_T], first: int, last: int, depth: int, less: Callable[[_T, _T], bool]
) -> None:
    while last - first > _THRESHOLD:
        if depth == 0:
            _heap_sort(a, first, last, less)
            return
        depth -= 1
        cut = _partition_pivot(a, first, last, less)
        _introsort_loop(a, cut, last, depth, less)
        last = cut


def _partition_pivot(a: list[_T], first: int, last: int, less: Callable[[_T, _T], bool]) -> int:
    mid = first + (last - first) // 2
    x, y, z = first + 1, mid, last - 1
    # __move_median_to_first(first, first + 1, mid, last - 1)
    if less(a[x], a[y]):
        pick = y if less(a[y], a[z]) else z if less(a[x], a[z]) else x
    elif less(a[x], a[z]):
        pick = x
    elif less(a[y], a[z]):
        pick = z
    else:
        pick = y
    a[first], a[pick] = a[pick], a[first]
    # __unguarded_partition(first + 1, last, first)
    lo, hi = first + 1, last
    while True:
        while less(a[lo], a[first]):
            lo += 1
        hi -= 1
        while less(a[first], a[hi]):
            hi -= 1
        if not lo < hi:
            return lo
        a[lo], a[hi] = a[hi], a[lo]
        lo += 1


def _linear_insert(a: list[_T], last: int, less: Callable[[_T, _T], bool]) -> None:
    val = a[last]
    nxt = last - 1
    while less(val, a[nxt]):
        a[last] = a[nxt]
        last = nxt
        nxt -= 1
    a[last] = val


def _insertion_sort(a: list[_T], first: int, last: int, less: Callable[[_T, _T], bool]) -> None:
    for i in range(first + 1, last):
        if less(a[i], a[first]):
            val = a[i]
            a[first + 1 : i + 1] = a[first:i]
            a[first] = val
        else:
            _linear_insert(a, i, less)


def _final_insertion_sort(
    a: list[_T], first: int, last: int, less: Callable[[_T, _T], bool]
) -> None:
    if last - first > _THRESHOLD:
        _insertion_sort(a, first, first + _THRESHOLD, less)
        for i in range(first + _THRESHOLD, last):
            _linear_insert(a, i, less)
    else:
        _insertion_sort(a, first, last, less)


def _adjust_heap(
    a: list[_T], base: int, hole: int, length: int, value: _T, less: Callable[[_T, _T], bool]
) -> None:
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if less(a[base + child], a[base + child - 1]):
            child -= 1
        a[base + hole] = a[base + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        a[base + hole] = a[base + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and less(a[base + parent], value):
        a[base + hole] = a[base + parent]
        hole = parent
        parent = (hole - 1) // 2
    a[base + hole] = value


def _heap_sort(a: list[_T], first: int, last: int, less: Callable[[_T, _T], bool]) -> None:
    """__partial_sort(first, last, last): make_heap then sort_heap."""
    length = last - first
    if length >= 2:
        parent = (length - 2) // 2
        while True:
            _adjust_heap(a, first, parent, length, a[first + parent], less)
            if parent == 0:
                break
            parent -= 1
    while last - first > 1:
        last -= 1
        value = a[last]
        a[last] = a[first]
        _adjust_heap(a, first, 0, last - first, value, less)
