"""The leaves of a `.db3` table b-tree read an interior page's children at once
(`sqlite_tree._all_leaves`): the same leaves and problems as one page at a time, on a whole
file and on files with a leaf header, a cell pointer or a child pointer damaged."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from nanorec.converters.ros.ros2 import sqlite_tree
from nanorec.converters.ros.ros2.db3 import open_db3
from nanorec.converters.ros.ros2.generate import generate
from nanorec.converters.ros.ros2.sqlite_btree import TABLE_INTERIOR, TABLE_LEAF, Pager
from nanorec.converters.ros.ros2.sqlite_tree import leaf_pages


@pytest.fixture(scope="module")
def db3(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    folder = tmp_path_factory.mktemp("bags") / "bag"
    generate(folder, seconds=600, storage="sqlite3")
    return next(folder.glob("*.db3")).read_bytes()


Walked = tuple[list[int], list[tuple[int, str]], set[int]]


def _walk(buf: bytes, at_once: bool, monkeypatch: pytest.MonkeyPatch) -> Walked:
    with monkeypatch.context() as patched:
        if not at_once:
            patched.setattr(sqlite_tree, "_all_leaves", lambda *args: False)
        file = open_db3(buf)
        root = file.tables["messages"][0]
        visited: set[int] = set()
        leaves, problems = leaf_pages(file.pager, root, visited)
    return leaves, problems, visited


def _interior(buf: bytes) -> tuple[Pager, list[int]]:
    """The pager and the interior pages of the messages table."""
    file = open_db3(buf)
    pager = file.pager
    found = [n for n in range(2, pager.header.pages + 1) if buf[pager.offset(n)] == TABLE_INTERIOR]
    return pager, found


def test_the_children_are_read_at_once(db3: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    answers: list[bool] = []
    real = sqlite_tree._all_leaves

    def spy(*args: object) -> bool:
        answers.append(real(*args))  # type: ignore[arg-type]
        return answers[-1]

    monkeypatch.setattr(sqlite_tree, "_all_leaves", spy)
    leaves, problems, _ = _walk(db3, True, monkeypatch)
    assert answers and all(answers) and not problems
    assert len(leaves) > 100


def test_a_whole_file_gives_the_same_leaves(db3: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _walk(db3, True, monkeypatch) == _walk(db3, False, monkeypatch)


def _damaged(db3: bytes, seed: int) -> bytes:
    """One leaf or interior page damaged in one of the ways the walk checks."""
    rng = random.Random(seed)
    pager, interiors = _interior(db3)
    buf = bytearray(db3)
    leaves = [n for n in range(2, pager.header.pages + 1) if db3[pager.offset(n)] == TABLE_LEAF]
    leaf = pager.offset(rng.choice(leaves))
    interior = pager.offset(rng.choice(interiors))
    how = seed % 6
    if how == 0:  # a leaf that is no b-tree page
        buf[leaf] = 0x42
    elif how == 1:  # more cells than the page holds
        buf[leaf + 3 : leaf + 5] = (4000).to_bytes(2, "big")
    elif how == 2:  # a cell pointer into the pointer array, or past the page
        buf[leaf + 8 : leaf + 10] = rng.choice((2, 4, 9, 65535)).to_bytes(2, "big")
    else:  # a child pointer: page 1, past the file, a sibling twice, the interior itself
        cell = int.from_bytes(buf[interior + 12 : interior + 14], "big")
        other = int.from_bytes(buf[interior + 8 : interior + 12], "big")
        child = (1, pager.header.pages + 5, other, (interior // pager.size) + 1)[how - 3]
        buf[interior + cell : interior + cell + 4] = child.to_bytes(4, "big")
    return bytes(buf)


@pytest.mark.parametrize("seed", range(18))
def test_a_damaged_page_gives_the_same_leaves_and_problems(
    db3: bytes, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    buf = _damaged(db3, seed)
    assert _walk(buf, True, monkeypatch) == _walk(buf, False, monkeypatch)


def test_damage_is_still_said(db3: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    """(The fast path never hides a problem: a damaged leaf is one.)"""
    _, problems, _ = _walk(_damaged(db3, 0), True, monkeypatch)
    assert problems


def test_real_file_reads_as_before(monkeypatch: pytest.MonkeyPatch, realdata_dir: Path) -> None:
    for path in sorted((realdata_dir / "ros2").glob("*/*.db3")):
        buf = path.read_bytes()
        assert _walk(buf, True, monkeypatch) == _walk(buf, False, monkeypatch), path
