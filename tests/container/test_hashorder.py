"""The hash-map order emulations, checked against the real C++ libraries when available.

CARLA's Linux server iterates a libc++ `std::unordered_map<uint32_t, ...>`; GCC's
libstdc++ is offered too. When a compiler for a library is installed, random
insert/erase histories are replayed by a tiny C++ program and the iteration orders must
match exactly; otherwise those tests skip.
"""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest

from nanorec.hashorder import (
    FileOrder,
    KeyOrder,
    LibcxxOrder,
    LibstdcxxOrder,
    MsvcOrder,
    _fnv1a_u32,
    key_order,
)

PROGRAM = r"""
#include <cstdint>
#include <cstdio>
#include <unordered_map>
int main() {
  std::unordered_map<uint32_t, int> m;
  char op; unsigned long k;
  while (std::scanf(" %c %lu", &op, &k) == 2) {
    if (op == 'i') m[(uint32_t)k] = 1; else m.erase((uint32_t)k);
  }
  for (auto &p : m) std::printf("%u ", p.first);
  std::printf("\n");
}
"""


def _compile(tmp: Path, compiler: list[str]) -> Path | None:
    exe = shutil.which(compiler[0])
    if exe is None:
        return None
    source = tmp / "um.cpp"
    source.write_text(PROGRAM)
    binary = tmp / f"um_{compiler[0].replace('+', 'p')}"
    result = subprocess.run(
        [exe, *compiler[1:], "-O0", "-o", str(binary), str(source)],
        capture_output=True,
        check=False,
    )
    return binary if result.returncode == 0 else None


def _histories(seed: int, runs: int) -> list[list[tuple[str, int]]]:
    rng = random.Random(seed)
    histories = []
    for _ in range(runs):
        ops: list[tuple[str, int]] = []
        keys: list[int] = []
        span = rng.choice([40, 1000, 100_000, 2**32 - 1])
        for _ in range(rng.choice([5, 30, 200, 1500])):
            if keys and rng.random() < 0.25:
                key = rng.choice(keys) if rng.random() < 0.8 else rng.randint(0, span)
                ops.append(("e", key))
            else:
                key = rng.randint(0, span)
                keys.append(key)
                ops.append(("i", key))
        histories.append(ops)
    return histories


def _replay(order: KeyOrder, ops: list[tuple[str, int]]) -> list[int]:
    for op, key in ops:
        (order.insert if op == "i" else order.erase)(key)
    return list(order)


def _check_against(binary: Path, make: type[LibcxxOrder] | type[LibstdcxxOrder]) -> None:
    histories = _histories(11, 40)
    # One process per history keeps the program trivial; 40 runs take well under a second.
    for ops in histories:
        text = "\n".join(f"{op} {key}" for op, key in ops)
        out = subprocess.run(
            [str(binary)], input=text, capture_output=True, text=True, check=True
        ).stdout
        assert [int(v) for v in out.split()] == _replay(make(), ops)


def test_libstdcxx_matches_gcc(tmp_path: Path) -> None:
    binary = _compile(tmp_path, ["g++"])
    if binary is None:
        pytest.skip("g++ is not installed")
    _check_against(binary, LibstdcxxOrder)


def test_libcxx_matches_clang_libcxx(tmp_path: Path) -> None:
    binary = None
    for name in ("clang++", "clang++-14", "clang++-15", "clang++-16", "clang++-17"):
        binary = _compile(tmp_path, [name, "-stdlib=libc++"])
        if binary is not None:
            break
    if binary is None:
        pytest.skip("clang++ with libc++ is not installed")
    _check_against(binary, LibcxxOrder)


def test_libcxx_small_known_order() -> None:
    # libc++: 2 buckets, then 5 (rehash at the 3rd key), new keys at the front of their
    # bucket's run or of the list. Worked by hand from the algorithm.
    order = LibcxxOrder()
    for key in (1, 2, 3):
        order.insert(key)
    assert list(order) == [3, 2, 1]
    order.insert(6)  # bucket 1 of 5, same as key 1: goes just before it
    assert list(order) == [3, 2, 6, 1]
    order.erase(2)
    assert list(order) == [3, 6, 1]


def test_msvc_hash_is_fnv1a_of_the_key_bytes() -> None:
    # FNV-1a 64 of the 4 little-endian bytes of 0: the offset basis xor 0 times the prime.
    value = 14695981039346656037
    for _ in range(4):
        value = (value * 1099511628211) % 2**64
    assert _fnv1a_u32(0) == value
    order = MsvcOrder()
    keys = list(range(100, 140))
    for key in keys:
        order.insert(key)
    assert sorted(order) == keys and len(order) == 40
    order.erase(120)
    assert 120 not in order and len(list(order)) == 39


def test_file_order_and_names() -> None:
    order = FileOrder()
    for key in (5, 3, 9):
        order.insert(key)
    order.erase(3)
    order.insert(3)
    assert list(order) == [5, 9, 3]
    assert isinstance(key_order("libc++"), LibcxxOrder)
    with pytest.raises(ValueError, match="unknown hash-map order"):
        key_order("java")
