"""The short human-readable facts behind a family detection (`detect.py`): header
version, vector width, ids present, what follows Collision. Kept apart from the scoring,
which does not read them."""

from __future__ import annotations

from collections import Counter

import numpy as np

from nanorec.buffers import Buffer

from .ids import HEADER_VERSION_2026
from .walk import IntArray, Packets, gather

_U16 = np.dtype("<u2")
_VECTOR_KINDS = ((6, "Position"), (12, "Kinematics"), (13, "BoundingBox"), (17, "TriggerVolume"))


def evidence(
    buf: Buffer, packets: Packets, counts: IntArray, frame_no: IntArray, version: int
) -> list[str]:
    """Short facts behind the choice: header version, vector width, ids present, what
    follows Collision."""
    line = ", the 2026 line's" if version == HEADER_VERSION_2026 else ""
    facts = [f"header version {version}{line}"]
    frames = int(frame_no[-1]) if len(packets) else 0
    facts.append(f"scanned {len(packets)} packets in {frames} frames")
    facts.append(_engine_fact(buf, packets))
    present = [int(pid) for pid in np.flatnonzero(counts)]
    facts.append("ids present: " + _ranges(present))
    if 20 in present:
        facts.append("VisualTime (20) present: 0.9.14 or later")
    elif 10 in present:
        facts.append("VehicleLight (10) present, no VisualTime (20): 0.9.10 to 0.9.13")
    after = np.flatnonzero(packets.ids[:-1] == 5) + 1
    if len(after):
        common, _ = Counter(packets.ids[after].tolist()).most_common(1)[0]
        meaning = {
            6: "no VehicleDoor slot (0.9.15 or earlier)",
            21: "VehicleDoor at 21 (ue4-dev nightly or UE5)",
            23: "VehicleDoor at 23 (0.9.16 or later)",
        }.get(common, "unexpected")
        facts.append(f"after Collision (5) comes id {common}: {meaning}")
    return facts


def _engine_fact(buf: Buffer, packets: Packets) -> str:
    for pid, name in _VECTOR_KINDS:
        mask = (packets.ids == pid) & (packets.sizes >= 4)
        if not mask.any():
            continue
        offsets = packets.offsets[mask]
        sizes = packets.sizes[mask].astype(np.int64)
        counts = gather(buf, offsets + 5, _U16).astype(np.int64)
        hits = np.flatnonzero(counts > 0)
        if not len(hits):
            continue
        i = hits[0]
        n, size = int(counts[i]), int(sizes[i])
        if size == 2 + 28 * n:
            width = "28-byte records: UE4 float32 vectors"
        elif size == 2 + 52 * n:
            width = "52-byte records: UE5 float64 vectors"
        else:
            width = "neither 28- nor 52-byte records"
        return f"{name} ({pid}) at byte {int(offsets[i])}: {n} records in {size} bytes, {width}"
    return "no Position, Kinematics or BoundingBox record in the scan: width from EventAdd"


def _ranges(values: list[int]) -> str:
    if not values:
        return "none"
    parts: list[str] = []
    first = prev = values[0]
    for value in [*values[1:], None]:
        if value is not None and value == prev + 1:
            prev = value
            continue
        parts.append(str(first) if first == prev else f"{first}-{prev}")
        if value is not None:
            first = prev = value
    return ", ".join(parts)
