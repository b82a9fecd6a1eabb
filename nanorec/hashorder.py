"""Iteration order of the C++ `std::unordered_map<uint32_t, ...>` CARLA's blocked query uses.

`show_recorder_actors_blocked` prints the actors still stopped at the end of the file by
walking an `unordered_map` keyed on actor id, and rows of equal duration keep that order
(spec §7.6). The order is unspecified by C++ but fully determined by the standard library
that built the server, the key sequence and the insert/erase history. So each library is
emulated here as the data structure it really is, tracking only keys:

- `libc++` — what CARLA's Linux server uses (UE4 builds LibCarla and the plugin against
  UE4's bundled libc++; CARLA's Setup.sh builds boost/rpclib "-libcxx" for the server).
  Identity hash, buckets 2, 5, 11, 23, 47, then the next prime >= 2n+1; a singly linked
  list where a new key goes to the front of its bucket's run, or to the list front if its
  bucket is empty; a rehash keeps the list order but moves each later key of an already
  seen bucket to the front of that bucket's run.
- `libstdc++` — GCC's library (not used by CARLA servers; offered because Linux tools
  built with g++ behave this way). Identity hash, the prime rehash policy (13 buckets on
  first insert, then about doubling along libstdc++'s own prime table), same list idea but
  a rehash rebuilds the list with buckets in reverse order of first occurrence.
  Checked against g++ in the test suite.
- `msvc` — the Microsoft STL since VS2019 16.x (xhash `_Forced_rehash`): FNV-1a hash of
  the 4 key bytes, power-of-two buckets (8, x8 while under 512, then x2), a doubly linked
  list where a new key goes to the front of its bucket or the list end; a rehash moves each
  key behind the last key already placed in its bucket. UNCERTAIN for servers built with
  older Visual Studio versions, whose xhash rehashed differently.
- `file` — not a C++ library: first-insertion order (erase forgets). Deterministic and
  easy to reason about; use it when the server's library is unknown.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterator
from typing import Protocol

from nanorec.errors import UsageError

_BEFORE = -1  # the list head sentinel (keys are u32, never negative)


class KeyOrder(Protocol):
    """The key bookkeeping of one `unordered_map<uint32_t, V>`; values live elsewhere."""

    def insert(self, key: int) -> None:
        """Insert `key` if absent (what `map[key]` does for a new key)."""

    def erase(self, key: int) -> None:
        """Erase `key` if present (`map.erase(key)`)."""

    def __contains__(self, key: object) -> bool: ...

    def __iter__(self) -> Iterator[int]: ...

    def __len__(self) -> int: ...


class _SinglyLinked:
    """A forward list with bucket pointers to the node *before* each bucket's first node."""

    def __init__(self) -> None:
        self.head: int | None = None
        self.nxt: dict[int, int | None] = {}
        self.buckets: list[int | None] = []

    def next_of(self, node: int) -> int | None:
        return self.head if node == _BEFORE else self.nxt[node]

    def set_next(self, node: int, value: int | None) -> None:
        if node == _BEFORE:
            self.head = value
        else:
            self.nxt[node] = value

    def __contains__(self, key: object) -> bool:
        return key in self.nxt

    def __len__(self) -> int:
        return len(self.nxt)

    def __iter__(self) -> Iterator[int]:
        node = self.head
        while node is not None:
            yield node
            node = self.nxt[node]

    def _insert_bucket_begin(self, key: int) -> None:
        count = len(self.buckets)
        bucket = key % count
        before = self.buckets[bucket]
        if before is not None:
            self.nxt[key] = self.next_of(before)
            self.set_next(before, key)
            return
        self.nxt[key] = self.head
        self.head = key
        following = self.nxt[key]
        if following is not None:
            self.buckets[following % count] = key
        self.buckets[bucket] = _BEFORE

    def erase(self, key: int) -> None:
        if key not in self.nxt:
            return
        count = len(self.buckets)
        bucket = key % count
        prev = self.buckets[bucket]
        assert prev is not None
        while self.next_of(prev) != key:
            nxt = self.next_of(prev)
            assert nxt is not None
            prev = nxt
        following = self.nxt[key]
        if prev == self.buckets[bucket]:
            # `key` starts its bucket: the bucket empties unless `following` shares it.
            if following is None or following % count != bucket:
                if following is not None:
                    self.buckets[following % count] = self.buckets[bucket]
                self.buckets[bucket] = None
        elif following is not None and following % count != bucket:
            self.buckets[following % count] = prev
        self.set_next(prev, following)
        del self.nxt[key]


def _next_prime(n: int) -> int:
    """The smallest prime >= n (libc++ `__next_prime`)."""
    if n <= 2:
        return 2
    candidate = n | 1
    while True:
        limit = math.isqrt(candidate)
        if all(candidate % d for d in range(3, limit + 1, 2)):
            return candidate
        candidate += 2


class LibcxxOrder(_SinglyLinked):
    """`std::unordered_map` of LLVM's libc++ (CARLA's Linux servers)."""

    def insert(self, key: int) -> None:
        if key in self.nxt:
            return
        count = len(self.buckets)
        size = len(self.nxt)
        if count == 0 or size + 1 > count:  # max_load_factor 1.0
            power2 = count > 2 and not count & (count - 1)
            self._rehash(max(2 * count + (not power2), size + 1))
        self._insert_bucket_begin(key)

    def _rehash(self, n: int) -> None:
        if n == 1:
            n = 2
        elif n & (n - 1):
            n = _next_prime(n)
        if n <= len(self.buckets):
            return
        buckets: list[int | None] = [None] * n
        self.buckets = buckets
        prev = self.head
        if prev is None:
            return
        previous_bucket = prev % n
        buckets[previous_bucket] = _BEFORE
        current = self.nxt[prev]
        while current is not None:
            bucket = current % n
            if bucket == previous_bucket:
                prev = current
            elif buckets[bucket] is None:
                buckets[bucket] = prev
                prev = current
                previous_bucket = bucket
            else:
                # Splice `current` to the front of its bucket's run; `prev` stays.
                self.nxt[prev] = self.nxt[current]
                before = buckets[bucket]
                assert before is not None
                self.nxt[current] = self.next_of(before)
                self.set_next(before, current)
            current = self.nxt[prev]


# libstdc++'s `__prime_list` (64-bit), from index 6 on, up to about 2^25 buckets: far more
# actors than any recording holds. Beyond it, the next prime is used (an approximation).
_GNU_PRIMES = (
    17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97, 103, 109,
    113, 127, 137, 139, 149, 157, 167, 179, 193, 199, 211, 227, 241, 257, 277, 293, 313, 337,
    359, 383, 409, 439, 467, 503, 541, 577, 619, 661, 709, 761, 823, 887, 953, 1031, 1109,
    1193, 1289, 1381, 1493, 1613, 1741, 1879, 2029, 2179, 2357, 2549, 2753, 2971, 3209, 3469,
    3739, 4027, 4349, 4703, 5087, 5503, 5953, 6427, 6949, 7517, 8123, 8783, 9497, 10273,
    11113, 12011, 12983, 14033, 15173, 16411, 17749, 19183, 20753, 22447, 24281, 26267,
    28411, 30727, 33223, 35933, 38873, 42043, 45481, 49201, 53201, 57557, 62233, 67307,
    72817, 78779, 85229, 92203, 99733, 107897, 116731, 126271, 136607, 147793, 159871,
    172933, 187091, 202409, 218971, 236897, 256279, 277261, 299951, 324503, 351061, 379787,
    410857, 444487, 480881, 520241, 562841, 608903, 658753, 712697, 771049, 834181, 902483,
    976369, 1056323, 1142821, 1236397, 1337629, 1447153, 1565659, 1693859, 1832561, 1982627,
    2144977, 2320627, 2510653, 2716249, 2938679, 3179303, 3439651, 3721303, 4026031, 4355707,
    4712381, 5098259, 5515729, 5967347, 6456007, 6984629, 7556579, 8175383, 8844859, 9569143,
    10352717, 11200489, 12117689, 13109983, 14183539, 15345007, 16601593, 17961079, 19431899,
    21023161, 22744717, 24607243, 26622317, 28802401, 31160981,
)  # fmt: skip
_GNU_FAST = (2, 2, 2, 3, 5, 5, 7, 7, 11, 11, 11, 11, 13, 13)


class LibstdcxxOrder(_SinglyLinked):
    """`std::unordered_map` of GCC's libstdc++ (`_Prime_rehash_policy`, load factor 1)."""

    def __init__(self) -> None:
        super().__init__()
        self.buckets = [None]  # the single inline bucket of an empty table
        self.next_resize = 0

    def _next_bucket_count(self, n: int) -> int:
        if n < len(_GNU_FAST):
            count = 1 if n == 0 else _GNU_FAST[n]
            self.next_resize = 0 if n == 0 else count
            return count
        index = bisect.bisect_left(_GNU_PRIMES, n)
        count = _GNU_PRIMES[index] if index < len(_GNU_PRIMES) else _next_prime(n)
        self.next_resize = count
        return count

    def insert(self, key: int) -> None:
        if key in self.nxt:
            return
        size = len(self.nxt)
        count = len(self.buckets)
        if size + 1 > self.next_resize:
            minimum = max(size + 1, 0 if self.next_resize else 11)
            if minimum >= count:
                self._rehash(self._next_bucket_count(max(minimum + 1, count * 2)))
            else:
                self.next_resize = count
        self._insert_bucket_begin(key)

    def _rehash(self, n: int) -> None:
        buckets: list[int | None] = [None] * n
        node = self.head
        self.head = None
        begin_bucket = 0
        while node is not None:
            following = self.nxt[node]
            bucket = node % n
            before = buckets[bucket]
            if before is None:
                self.nxt[node] = self.head
                self.head = node
                buckets[bucket] = _BEFORE
                if self.nxt[node] is not None:
                    buckets[begin_bucket] = node
                begin_bucket = bucket
            else:
                self.nxt[node] = self.next_of(before)
                self.set_next(before, node)
            node = following
        self.buckets = buckets


_FNV_OFFSET = 14695981039346656037
_FNV_PRIME = 1099511628211
_MASK64 = (1 << 64) - 1


def _fnv1a_u32(key: int) -> int:
    value = _FNV_OFFSET
    for byte in key.to_bytes(4, "little"):
        value = ((value ^ byte) * _FNV_PRIME) & _MASK64
    return value


class MsvcOrder:
    """`std::unordered_map` of the Microsoft STL (VS2019 16.x+ xhash); see module doc."""

    _MIN_BUCKETS = 8

    def __init__(self) -> None:
        self.nxt: dict[int, int] = {_BEFORE: _BEFORE}
        self.prv: dict[int, int] = {_BEFORE: _BEFORE}
        self.mask = self._MIN_BUCKETS - 1
        self.lo = [_BEFORE] * self._MIN_BUCKETS
        self.hi = [_BEFORE] * self._MIN_BUCKETS

    def __contains__(self, key: object) -> bool:
        return key in self.nxt and key != _BEFORE

    def __len__(self) -> int:
        return len(self.nxt) - 1

    def __iter__(self) -> Iterator[int]:
        node = self.nxt[_BEFORE]
        while node != _BEFORE:
            yield node
            node = self.nxt[node]

    def _link_before(self, where: int, key: int) -> None:
        after = self.prv[where]
        self.nxt[key] = where
        self.prv[key] = after
        self.nxt[after] = key
        self.prv[where] = key

    def _unlink(self, key: int) -> None:
        after, before = self.prv[key], self.nxt[key]
        self.nxt[after] = before
        self.prv[before] = after

    def _insert_point(self, bucket: int) -> int:
        # A new key goes before the lowest key of its bucket, or at the list end.
        return _BEFORE if self.hi[bucket] == _BEFORE else self.lo[bucket]

    def insert(self, key: int) -> None:
        if key in self:
            return
        code = _fnv1a_u32(key)
        if len(self) + 1 > len(self.lo):  # max_load_factor 1.0
            old = len(self.lo)
            self._rehash(old * 8 if old < 512 else old * 2)
        bucket = code & self.mask
        where = self._insert_point(bucket)
        self._link_before(where, key)
        if self.lo[bucket] == _BEFORE:
            self.lo[bucket] = self.hi[bucket] = key
        elif self.lo[bucket] == where:
            self.lo[bucket] = key

    def _rehash(self, count: int) -> None:
        self.mask = count - 1
        self.lo = [_BEFORE] * count
        self.hi = [_BEFORE] * count
        node = self.nxt[_BEFORE]
        while node != _BEFORE:
            following = self.nxt[node]
            bucket = _fnv1a_u32(node) & self.mask
            if self.lo[bucket] == _BEFORE:
                self.lo[bucket] = self.hi[bucket] = node
            else:
                where = self.nxt[self.hi[bucket]]
                if where != node:
                    self._unlink(node)
                    self._link_before(where, node)
                self.hi[bucket] = node
            node = following

    def erase(self, key: int) -> None:
        if key not in self:
            return
        bucket = _fnv1a_u32(key) & self.mask
        if self.hi[bucket] == key:
            if self.lo[bucket] == key:
                self.lo[bucket] = self.hi[bucket] = _BEFORE
            else:
                self.hi[bucket] = self.prv[key]
        elif self.lo[bucket] == key:
            self.lo[bucket] = self.nxt[key]
        self._unlink(key)
        del self.nxt[key]
        del self.prv[key]


class FileOrder:
    """First-insertion order; an erased key forgets its place."""

    def __init__(self) -> None:
        self.keys: dict[int, None] = {}

    def insert(self, key: int) -> None:
        self.keys.setdefault(key, None)

    def erase(self, key: int) -> None:
        self.keys.pop(key, None)

    def __contains__(self, key: object) -> bool:
        return key in self.keys

    def __iter__(self) -> Iterator[int]:
        return iter(list(self.keys))

    def __len__(self) -> int:
        return len(self.keys)


ORDERS: dict[str, type[LibcxxOrder] | type[LibstdcxxOrder] | type[MsvcOrder] | type[FileOrder]]
ORDERS = {
    "libc++": LibcxxOrder,
    "libstdc++": LibstdcxxOrder,
    "msvc": MsvcOrder,
    "file": FileOrder,
}


def key_order(name: str) -> KeyOrder:
    """A fresh key order emulation by name (see `ORDERS`); raises ValueError if unknown."""
    try:
        return ORDERS[name]()
    except KeyError:
        raise UsageError(
            f"unknown hash-map order {name!r}; choose one of {', '.join(ORDERS)}"
        ) from None


__all__ = [
    "ORDERS",
    "FileOrder",
    "KeyOrder",
    "LibcxxOrder",
    "LibstdcxxOrder",
    "MsvcOrder",
    "key_order",
]
