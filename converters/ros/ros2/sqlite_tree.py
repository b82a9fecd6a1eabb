"""The pages of a table b-tree in a `.db3` file: its leaves in key order, its interior keys.

Why apart from `sqlite_btree`: the walk of a big table's leaves is the one place where
pages are many (a leaf holds ~40 rows of a bag of small messages), so it reads an
interior page's children at once with numpy (`_all_leaves`), falling back to one at a
time, which says what is wrong, on anything unusual.
"""

from __future__ import annotations

import struct

import numpy as np
from numpy.typing import NDArray

from nanorec.errors import FormatError, TruncatedError

from .sqlite_btree import MAX_DEPTH, TABLE_INTERIOR, TABLE_LEAF, Pager, varint
from .storage import release_pages

_U32 = struct.Struct(">I")
#: Leaf pages whose kinds `leaf_pages` reads between two `release_pages` (32 MiB of 4 KiB).
_RELEASE_PAGES = 8192


def interior_keys(pager: Pager, pages: set[int]) -> list[int]:
    """The keys (each the largest rowid of its left subtree) of the table-interior pages
    among `pages`; pages that are not, or cannot be read, are skipped."""
    keys: list[int] = []
    for n in pages:
        try:
            page = pager.page(n)
            kind, cells = pager.cells(n, page, (TABLE_INTERIOR, TABLE_LEAF))
            if kind == TABLE_INTERIOR:
                keys += [varint(page, c + 4)[0] for c in cells]
        except (FormatError, TruncatedError, IndexError):
            continue
    return keys


def leaf_pages(
    pager: Pager, root: int, visited: set[int]
) -> tuple[list[int], list[tuple[int, str]]]:
    """The leaf pages of the table b-tree at `root`, in key order, reading only interior
    pages and page kinds; subtrees that cannot be read are skipped and listed (page, why)."""
    leaves: list[int] = []
    problems: list[tuple[int, str]] = []
    stack: list[tuple[int, int]] = [(root, 0)]
    data = np.frombuffer(pager.view, np.uint8) if pager.overlay is None else None
    while stack:
        n, depth = stack.pop()
        try:
            if n in visited or depth > MAX_DEPTH:
                raise FormatError(f"table b-tree loops at page {n}")
            page = pager.page(n)
            kind, cells = pager.cells(n, page, (TABLE_INTERIOR, TABLE_LEAF))
            h = 100 if n == 1 else 0
            if kind == TABLE_INTERIOR:
                children = [_U32.unpack_from(page, c)[0] for c in cells] + [
                    _U32.unpack_from(page, h + 8)[0]
                ]
        except (FormatError, TruncatedError, struct.error) as exc:
            problems.append((n, str(exc)))
            continue
        visited.add(n)
        if kind == TABLE_LEAF:
            leaves.append(n)
            if not len(leaves) % _RELEASE_PAGES:  # bounded RSS: a big file's pages given back
                release_pages(pager.view)
            continue
        if data is not None and depth < MAX_DEPTH and _all_leaves(pager, data, children, visited):
            before = len(leaves)
            leaves += children
            visited.update(children)
            if before // _RELEASE_PAGES != len(leaves) // _RELEASE_PAGES:
                release_pages(pager.view)  # bounded RSS: a big file's pages given back
            continue
        stack.extend((c, depth + 1) for c in reversed(children))
    return leaves, problems


def _all_leaves(pager: Pager, data: NDArray[np.uint8], pages: list[int], seen: set[int]) -> bool:
    """Whether `pages` (an interior page's children) are all table-leaf pages that
    `leaf_pages` would take one by one without a problem: present, not page 1, not seen
    before nor twice, their cell pointers inside the page. Checked at once with numpy (a
    Python turn a leaf was ~10 µs, a twentieth of a small-message bag's walk); any other
    answer and `leaf_pages` takes them one by one, saying what is wrong."""
    numbers = np.array(pages, np.int64)
    if not len(numbers) or int(numbers.min()) < 2 or int(numbers.max()) > pager.header.pages:
        return False
    if len(set(pages)) != len(pages) or not seen.isdisjoint(pages):
        return False
    offsets = (numbers - 1) * pager.size
    if (data[offsets] != TABLE_LEAF).any():
        return False
    counts = data[offsets + 3].astype(np.int64) << 8 | data[offsets + 4]
    lowest = 8 + 2 * counts  # where a leaf's cell content may start
    if (lowest > pager.usable).any():
        return False
    page_of = np.repeat(np.arange(len(numbers)), counts)
    at = (
        offsets[page_of] + 8 + 2 * (np.arange(len(page_of)) - (np.cumsum(counts) - counts)[page_of])
    )
    cells = data[at].astype(np.int64) << 8 | data[at + 1]
    return not ((cells < lowest[page_of]) | (cells >= pager.usable)).any()
