"""Which CARLA release family wrote a file: detected from the packets; the header's version
is only a hint (2 in the 2026 line).

Every CARLA build up to 0.9.16 writes header version 1 (spec §2), yet ids 21-24 change
meaning between releases and UE5 doubles every vector (spec §4, §9). Following spec §10, the
first few hundred frames are scanned and every family of `ids.FAMILIES` is scored on them:

- a packet of an id the family knows whose body does not fit that kind's layout (the
  vector width shows up here: a Position of n records is 2 + 28n bytes in UE4, 2 + 52n in
  UE5; EventAdd only parses with the right width);
- packets out of the family's per-frame write order (spec §3.2: VehicleDoor right after
  Collision in door-era builds, wheels and biker after the lights...);
- "always written" packets missing from a complete frame (VisualTime since 0.9.14,
  VehicleLight since 0.9.10, wheels and biker since 0.9.15...);
- ids below 100 the family does not know (user packets >= 100 never count);
- a header version other than the family's (the 2026 line writes 2, `ids.HEADER_VERSION_2026`).
  A 2 weighs as much as a misfit against every older family, since nothing before 2026
  writes it; a 1 weighs least against the 2026 families, since their 2 is read from two
  derivatives of the 2026 sources, not from CARLA's own (one Weather packet outweighs it).

The family with the lowest cost wins; ties go to the older family. The result
keeps short human-readable evidence for the report. PhysicsControl wheel records (36 or
48 bytes) are decided per packet by the record parser, not here.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from nanorec.buffers import Buffer
from nanorec.errors import NanorecError, UnsupportedError

from .detect_facts import evidence
from .header import Header
from .ids import (
    ADDITIONAL_DATA,
    FAMILIES,
    FIRST_USER_ID,
    HEADER_VERSION_2026,
    SHAPES,
    Engine,
    Family,
    Kind,
    Shape,
)
from .records import (
    ActorAdd,
    Cursor,
    VehicleWheels,
    WalkerBones,
    fixed_dtype,
)
from .records_fast import parse_var_fast, parse_var_head, var_fits
from .walk import Packets, gather, walk

_U16 = np.dtype("<u2")
_COUNT = struct.Struct("<H")  # a VAR body's record count
# Relative weight of each kind of evidence against a family. A packet the family cannot
# decode (misfit, unknown id) weighs more than a packet its order table says is missing:
# the first loses data, the second only contradicts our reading of the sources.
_MISFIT_COST = 10
_ORDER_COST = 3
_UNKNOWN_COST = 3
_MISSING_COST = 2
_VERSION_COST = 1  # a header version other than the family's...
_NEWER_VERSION_COST = 10  # ... when it is the 2026 line's 2 and the family is older
_VAR_SAMPLE = 12  # non-empty VAR packets parsed per id when scoring
_PREFIX_RECORDS = 16  # records parsed in a sampled VAR packet that has more
_PREFIX_PARSERS: dict[Kind, Callable[[Cursor, Engine], object]] = {
    Kind.EVENT_ADD: ActorAdd.parse,
    Kind.WALKER_BONES: WalkerBones.parse,
    Kind.ANIM_VEHICLE_WHEELS: VehicleWheels.parse,
}


@dataclass(frozen=True)
class Detection:
    """The release family a reader uses, and why (`reasons`, short sentences)."""

    family: Family
    reasons: tuple[str, ...]
    forced: bool = False
    #: The scan's packets when they are the whole recording (one of at most `max_bytes`
    #: after its header): the conversion's walk would find them again, so it takes these
    #: (`frames.iter_frames(first=...)`: ~1 ms of a small conversion).
    packets: Packets | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class _Fit:
    checked: int
    misfits: int
    example: str | None


class _Scan:
    """The scanned packets and the per-(id, kind, engine) fit results, computed once."""

    def __init__(self, buf: Buffer, packets: Packets) -> None:
        self.buf = buf
        self.packets = packets
        ids = packets.ids
        self.counts = np.bincount(ids, minlength=256)
        self.frame_no = np.cumsum(ids == 0)
        ends = self.frame_no[ids == 1]  # sorted (a running count): unique without np.unique,
        ended = ends[np.diff(ends, prepend=-1) != 0]  # which imports numpy.ma (~40 ms)
        self.complete = ended[ended > 0]
        presence = np.zeros((int(self.frame_no[-1]) + 1 if len(ids) else 1, 256), bool)
        presence[self.frame_no, ids] = True
        #: which ids each complete frame holds (rows: `complete`), shared by every family
        self.absent = ~presence[self.complete]
        self.present = np.flatnonzero(self.counts).tolist()
        # each id's packets in file order, one slice apiece (a stable sort, once, instead
        # of a mask over every packet per id checked)
        order = np.argsort(ids, kind="stable")
        self._sorted = (packets.offsets[order], packets.sizes[order])
        self._ends = np.cumsum(self.counts).tolist()
        self._fits: dict[tuple[int, Kind, Engine], _Fit] = {}

    def fit(self, pid: int, kind: Kind, engine: Engine) -> _Fit:
        key = (pid, kind, engine)
        if key not in self._fits:
            self._fits[key] = self._check(pid, kind, engine)
        return self._fits[key]

    def _check(self, pid: int, kind: Kind, engine: Engine) -> _Fit:
        end = self._ends[pid]
        start = end - int(self.counts[pid])
        offsets = self._sorted[0][start:end]
        sizes = self._sorted[1][start:end].astype(np.int64)
        shape = SHAPES[kind]
        if shape is Shape.EMPTY:
            bad = sizes != 0
            return _example(pid, kind, offsets, bad, "has a body")
        if shape is Shape.SINGLE:
            size = fixed_dtype(kind, engine).itemsize
            bad = sizes != size
            return _example(pid, kind, offsets, bad, f"is not {size} bytes")
        counts = np.zeros(len(sizes), np.int64)
        room = sizes >= 2
        counts[room] = gather(self.buf, offsets[room] + 5, _U16)
        if shape is Shape.FIXED:
            record = fixed_dtype(kind, engine).itemsize
            bad = sizes != 2 + counts * record
            return _example(pid, kind, offsets, bad, f"is not 2 + count x {record} bytes")
        bad = ~room | ((counts == 0) & (sizes != 2))
        misfits = int(bad.sum())
        example = _describe(pid, kind, int(offsets[bad][0]), "has a bad count") if misfits else None
        sample = np.flatnonzero(room & (counts > 0))[:_VAR_SAMPLE]
        for i in sample:
            start = int(offsets[i]) + 5
            body = bytes(self.buf[start : start + int(sizes[i])])
            fits = _sample_fits(kind, body, engine)
            if fits is False and example is not None:  # counted; its error is not needed
                misfits += 1
                continue
            if fits:
                continue
            try:  # the parse decides, and names the error of the first misfit
                _parse_sample(kind, body, engine, start)
            except NanorecError as error:
                misfits += 1
                example = example or _describe(
                    pid, kind, int(offsets[i]), f"does not parse: {error}"
                )
        return _Fit(len(sizes), misfits, example)


def _sample_fits(kind: Kind, body: bytes, engine: Engine) -> bool | None:
    """Whether `_parse_sample` would parse `body`, from its length fields alone (None: not
    known without parsing it)."""
    if len(body) < 2:
        return None
    (count,) = _COUNT.unpack_from(body)
    limit = _PREFIX_RECORDS if kind in _PREFIX_PARSERS and count > _PREFIX_RECORDS else None
    return var_fits(kind, body, engine, limit)


def _parse_sample(kind: Kind, body: bytes, engine: Engine, base: int) -> None:
    """Parse a VAR body, or only its first records when it has many (a frame-1 EventAdd
    holds every actor of the world): enough to tell layouts apart, bounded in time."""
    prefix = _PREFIX_PARSERS.get(kind)
    cur = Cursor(body, base)
    if prefix is None or cur.u16("record count") <= _PREFIX_RECORDS:
        parse_var_fast(kind, body, engine, base=base)
        return
    if parse_var_head(kind, body, engine, _PREFIX_RECORDS) is not None:
        return
    for _ in range(_PREFIX_RECORDS):
        prefix(cur, engine)


def _describe(pid: int, kind: Kind, offset: int, what: str) -> str:
    return f"id {pid} as {kind.value} at byte {offset}: {what}"


def _example(
    pid: int, kind: Kind, offsets: npt.NDArray[np.int64], bad: npt.NDArray[np.bool_], what: str
) -> _Fit:
    misfits = int(bad.sum())
    example = _describe(pid, kind, int(offsets[bad][0]), what) if misfits else None
    return _Fit(len(offsets), misfits, example)


@dataclass(frozen=True)
class _Score:
    family: Family
    misfits: int
    order: int
    missing: int
    unknown: int
    example: str | None
    version: int = 0  # the cost of a header version other than the family's

    @property
    def cost(self) -> int:
        return (
            _MISFIT_COST * self.misfits
            + _ORDER_COST * self.order
            + _MISSING_COST * self.missing
            + _UNKNOWN_COST * self.unknown
            + self.version
        )

    def summary(self) -> str:
        if not self.cost:
            return f"{self.family.name}: every packet fits, in the expected order"
        parts = []
        if self.misfits:
            parts.append(f"{self.misfits} packets do not fit")
        if self.order:
            parts.append(f"{self.order} out of order")
        if self.missing:
            parts.append(f"{self.missing} always-written packets missing")
        if self.unknown:
            parts.append(f"{self.unknown} packets of unknown ids")
        if self.version:
            parts.append(f"header version is not {self.family.header_version}")
        return f"{self.family.name}: " + ", ".join(parts)


def _score(scan: _Scan, family: Family, version: int) -> _Score:
    ids = scan.packets.ids
    misfits = 0
    example: str | None = None
    unknown = 0
    for pid in scan.present:
        kind = family.kind_of(pid)
        if kind is None:
            if pid < FIRST_USER_ID:
                unknown += int(scan.counts[pid])
            continue
        fit = scan.fit(pid, kind, family.engine)
        misfits += fit.misfits
        example = example or fit.example
    slot, always = _layout(family)
    slots = slot[ids]
    keep = slots >= 0
    kept, frames = slots[keep], scan.frame_no[keep]
    order = int(np.count_nonzero((frames[1:] == frames[:-1]) & (kept[1:] <= kept[:-1])))
    missing = 0
    # Additional-data packets are "always" written only by `additional_data=True` recordings.
    additional = any(
        scan.counts[pid] for pid, kind in family.ids.items() if kind in ADDITIONAL_DATA
    )
    if len(scan.complete):
        written = [pid for pid, is_additional in always if additional or not is_additional]
        missing = int(np.count_nonzero(scan.absent[:, written]))
    return _Score(family, misfits, order, missing, unknown, example, _version_cost(version, family))


def _version_cost(version: int, family: Family) -> int:
    if version == family.header_version:
        return 0
    return _NEWER_VERSION_COST if version == HEADER_VERSION_2026 else _VERSION_COST


_LAYOUTS: dict[str, tuple[npt.NDArray[np.int16], tuple[tuple[int, bool], ...]]] = {}


def _layout(family: Family) -> tuple[npt.NDArray[np.int16], tuple[tuple[int, bool], ...]]:
    """Each packet id's slot in `family`'s frame order (-1: none), and the always-written
    packets' ids (with whether they are additional data): worked out once a family, not for
    each file (a tenth of converting a 100 KB recording)."""
    found = _LAYOUTS.get(family.name)
    if found is None:
        slot = np.full(256, -1, np.int16)
        for position, item in enumerate(family.order):
            if item.kind in family.kinds:
                slot[family.id_of(item.kind)] = position
        always = tuple(
            (family.id_of(item.kind), item.kind in ADDITIONAL_DATA)
            for item in family.order
            if item.always and item.kind in family.kinds
        )
        found = _LAYOUTS[family.name] = (slot, always)
    return found


def detect(
    buf: Buffer,
    start: int | None = None,
    *,
    max_frames: int = 300,
    max_bytes: int = 4 << 20,
) -> Detection:
    """Detect the release family of the recording in `buf` (a whole file).

    `start` is the offset of the first packet (parsed from the header when None). Scans at
    most `max_frames` frames and about `max_bytes` bytes. Raises `BadMagicError` or
    `TruncatedError` only for a bad header; packet content never raises.
    """
    if start is None:
        start = Header.parse(buf).size
    version = _header_version(buf)
    packets = walk(buf, start, limit=start + max_bytes)
    whole = len(buf) - start <= max_bytes and (
        packets.truncation is not None or packets.end >= len(buf)
    )
    walked = packets if whole else None
    frame_no = np.cumsum(packets.ids == 0)
    keep = frame_no <= max_frames
    if not keep.all():
        packets = Packets(
            packets.ids[keep],
            packets.offsets[keep],
            packets.sizes[keep],
            packets.start,
            packets.end,
            None,
        )
    scan = _Scan(buf, packets)
    scores = sorted(
        (_score(scan, family, version) for family in FAMILIES.values()),
        key=lambda score: score.cost,  # stable: ties keep the FAMILIES (oldest-first) order
    )
    best = scores[0]
    reasons = [
        *evidence(scan.buf, packets, scan.counts, scan.frame_no, version),
        f"best fit {best.summary()}",
    ]
    if len(scores) > 1:
        runner_up = scores[1]
        if runner_up.cost == best.cost:
            reasons.append(
                f"tie with {runner_up.family.name}, which reads these packets the same way: "
                f"the older family is reported"
            )
        else:
            reasons.append(f"next {runner_up.summary()}")
    if best.example and best.cost:
        reasons.append(f"e.g. {best.example}")
    return Detection(best.family, tuple(reasons), packets=walked)


def _header_version(buf: Buffer) -> int:
    """The header's u16 version (-1 when the buffer is shorter than that)."""
    if len(buf) < 2:
        return -1
    return int(gather(buf, np.zeros(1, np.int64), _U16)[0])


def resolve(buf: Buffer, start: int | None = None, family: str | Family | None = None) -> Detection:
    """The family to decode `buf` with: `family` when given (by name or value), else detected.

    Raises `UnsupportedError` for an unknown family name.
    """
    if family is None:
        return detect(buf, start)
    if isinstance(family, Family):
        return Detection(family, ("forced by the caller",), forced=True)
    if family not in FAMILIES:
        known = ", ".join(FAMILIES)
        raise UnsupportedError(f"unknown CARLA release family {family!r}; known: {known}")
    return Detection(FAMILIES[family], ("forced by the caller",), forced=True)


__all__ = ["Detection", "detect", "resolve"]
