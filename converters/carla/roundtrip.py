"""Decode a CARLA recording fully, encode it back, and say whether the bytes are identical.

This is the acceptance check of the codec (issue 2): every byte the encoder writes is
rebuilt from decoded values, so an identical round trip shows that nothing was lost or
normalised. It streams batch by batch over an mmap, comparing each encoded batch with the
input bytes it came from, so a file of any size is checked in bounded memory.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from nanorec.buffers import Buffer

from .codec import DEFAULT_BATCH_BYTES, Batch, Reader, encode_batch, iter_batches
from .detect import Detection, resolve
from .header import Header
from .ids import Family
from .walk import Truncation

_EXAMPLES = 3  # misfit reasons quoted in a report


@dataclass(frozen=True)
class RoundtripReport:
    """What a decode -> encode round trip of one recording found.

    `frames` counts FrameStart packets; `incomplete_frame` is true when the last one has
    no FrameEnd (a crashed recording). `raw_by_id` counts every packet carried verbatim,
    by id; `misfit_by_id` the subset whose id the family knows but whose body did not fit
    its layout. `first_difference` is the first differing byte offset (or the shorter
    length) when the bytes are not identical.
    """

    path: str
    size: int
    family: str
    forced: bool
    reasons: tuple[str, ...]
    physics_wheel_sizes: tuple[int, ...]
    frames: int
    incomplete_frame: bool
    packets: int
    raw_by_id: dict[int, int]
    misfit_by_id: dict[int, int]
    misfit_examples: tuple[str, ...]
    truncation: Truncation | None
    identical: bool
    first_difference: int | None
    encoded_size: int = field(default=0)
    via_archive: bool | None = None  # native -> archive -> native identical (None: not run)
    archive_size: int | None = None

    @property
    def family_line(self) -> str:
        """E.g. `0.9.10-0.9.13 (detected; PhysicsControl wheels 36 B)`."""
        notes = ["forced" if self.forced else "detected"]
        if self.physics_wheel_sizes:
            sizes = "/".join(str(size) for size in self.physics_wheel_sizes)
            notes.append(f"PhysicsControl wheels {sizes} B")
        return f"{self.family} ({'; '.join(notes)})"

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the report."""
        return {
            "path": self.path,
            "size": self.size,
            "family": self.family,
            "forced": self.forced,
            "reasons": list(self.reasons),
            "physics_wheel_sizes": list(self.physics_wheel_sizes),
            "frames": self.frames,
            "incomplete_frame": self.incomplete_frame,
            "packets": self.packets,
            "raw_by_id": {str(pid): n for pid, n in sorted(self.raw_by_id.items())},
            "misfit_by_id": {str(pid): n for pid, n in sorted(self.misfit_by_id.items())},
            "misfit_examples": list(self.misfit_examples),
            "truncated": self.truncation is not None,
            "truncation_offset": None if self.truncation is None else self.truncation.offset,
            "truncation_reason": None if self.truncation is None else self.truncation.reason,
            "identical": self.identical,
            "first_difference": self.first_difference,
            "encoded_size": self.encoded_size,
            "via_archive": self.via_archive,
            "archive_size": self.archive_size,
        }


def _first_difference(a: bytes | bytearray, b: bytes | bytearray) -> int:
    """Index of the first byte where `a` and `b` differ (or the shorter length)."""
    n = min(len(a), len(b))
    left = np.frombuffer(a, dtype=np.uint8, count=n)
    right = np.frombuffer(b, dtype=np.uint8, count=n)
    diff = np.flatnonzero(left != right)
    return int(diff[0]) if len(diff) else n


class _Tally:
    """Counts gathered batch by batch."""

    def __init__(self) -> None:
        self.frames = 0
        self.in_frame = False
        self.packets = 0
        self.raw: Counter[int] = Counter()
        self.misfit: Counter[int] = Counter()
        self.examples: list[str] = []
        self.wheel_sizes: set[int] = set()
        self.truncation: Truncation | None = None

    def add(self, batch: Batch) -> None:
        ids = batch.packet_ids
        self.packets += len(ids)
        self.frames += int(np.count_nonzero(ids == 0))
        marks = np.flatnonzero((ids == 0) | (ids == 1))
        if len(marks):
            self.in_frame = bool(ids[marks[-1]] == 0)
        raw = batch.raw
        raw_ids = ids[raw.index].tolist()
        self.raw.update(raw_ids)
        for pid, reason in zip(raw_ids, raw.reasons, strict=True):
            if reason is not None:
                self.misfit[pid] += 1
                if len(self.examples) < _EXAMPLES:
                    self.examples.append(reason)
        self.wheel_sizes |= batch.physics_wheel_sizes
        if batch.truncation is not None:
            self.truncation = batch.truncation


def roundtrip(
    source: str | os.PathLike[str] | bytes | bytearray | memoryview,
    *,
    family: str | Family | None = None,
    strict: bool = False,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
) -> RoundtripReport:
    """Decode `source` (a path, read through mmap, or bytes) fully and encode it back.

    `family` forces a release family (name or value); by default it is detected. Raises
    `BadMagicError`/`TruncatedError` for a bad header, `UnsupportedError` for an unknown
    family name, with `strict` `FormatError`/`TruncatedError` for a packet that does not
    fit, and `OSError` for an unreadable path. A body that does not fit is otherwise
    counted in the report, never raised.
    """
    if isinstance(source, (str, os.PathLike)):
        with Reader(source, family=family, strict=strict, batch_bytes=batch_bytes) as reader:
            return _check(
                str(source),
                reader.buf,
                reader.header,
                reader.detection,
                reader.iter_batches(),
            )
    header = Header.parse(source)
    detection = resolve(source, header.size, family)
    batches = iter_batches(
        source, detection.family, header.size, strict=strict, batch_bytes=batch_bytes
    )
    return _check("<bytes>", source, header, detection, batches)


def _check(
    path: str,
    buf: Buffer,
    header: Header,
    detection: Detection,
    batches: Iterator[Batch],
) -> RoundtripReport:
    size = len(buf)
    tally = _Tally()
    difference: int | None = None
    encoded = header.serialize()
    written = len(encoded)
    original = bytes(buf[: header.size])
    if encoded != original:
        difference = _first_difference(encoded, original)
    for batch in batches:
        tally.add(batch)
        encoded_batch = encode_batch(batch, detection.family)
        if difference is None:
            original = bytes(buf[written : written + len(encoded_batch)])
            if encoded_batch != original:
                difference = written + _first_difference(encoded_batch, original)
        written += len(encoded_batch)
    if difference is None and written != size:
        difference = min(written, size)
    return RoundtripReport(
        path=path,
        size=size,
        family=detection.family.name,
        forced=detection.forced,
        reasons=detection.reasons,
        physics_wheel_sizes=tuple(sorted(tally.wheel_sizes)),
        frames=tally.frames,
        incomplete_frame=tally.in_frame,
        packets=tally.packets,
        raw_by_id=dict(sorted(tally.raw.items())),
        misfit_by_id=dict(sorted(tally.misfit.items())),
        misfit_examples=tuple(tally.examples),
        truncation=tally.truncation,
        identical=difference is None,
        first_difference=difference,
        encoded_size=written,
    )


def summary_line(report: RoundtripReport) -> str:
    """One line for one file, shaped as the generic `nanorec roundtrip` prints it (the
    whole report is `format_report`, or `as_dict` for JSON)."""
    frames = f"{report.frames} frames"
    if report.truncation is not None:
        frames += f" (cut short at byte {report.truncation.offset})"
    archive = "" if report.archive_size is None else f", archive {report.archive_size} bytes"
    if not report.identical:
        verdict = f"NOT IDENTICAL (first difference at byte {report.first_difference})"
    elif report.via_archive is False:
        verdict = "NOT IDENTICAL through the archive"
    else:
        verdict = "identical"
    return f"{report.path}: carla {report.family}, {frames}{archive}: {verdict}"


def format_report(report: RoundtripReport) -> str:
    """The human-readable lines the `nanorec roundtrip` command prints for one file."""
    frames = f"{report.frames}"
    if report.incomplete_frame:
        frames += " (the last one incomplete)"
    if report.raw_by_id:
        raw = ", ".join(f"id {pid}: {n}" for pid, n in report.raw_by_id.items())
        if report.misfit_by_id:
            misfit = ", ".join(f"id {pid}: {n}" for pid, n in report.misfit_by_id.items())
            raw += f" (known ids whose body did not fit: {misfit})"
    else:
        raw = "none"
    if report.truncation is None:
        truncated = "no"
    else:
        truncated = f"yes, at byte {report.truncation.offset} ({report.truncation.reason})"
    if report.identical:
        identical = "yes"
    else:
        identical = f"NO (first difference at byte {report.first_difference})"
    if report.via_archive is not None:
        ratio = (report.archive_size or 0) / max(report.size, 1)
        verdict = "yes" if report.via_archive else "NO"
        identical += f"\n  via archive: {verdict} (archive {ratio:.3f}x the file)"
    lines = [
        f"{report.path}",
        f"  family:      {report.family_line}",
        *(f"    - {reason}" for reason in report.reasons),
        f"  frames:      {frames}",
        f"  packets:     {report.packets}",
        f"  carried raw: {raw}",
        *(f"    - {example}" for example in report.misfit_examples),
        f"  truncated:   {truncated}",
        f"  identical:   {identical}",
    ]
    return "\n".join(lines)


def via_archive(report: RoundtripReport, *, family: str | None = None) -> RoundtripReport:
    """`report` completed with the full path: convert the file into an archive in a
    temporary directory, export it back, and compare sha256 with the original."""
    from .convert import convert
    from .export import export

    with tempfile.TemporaryDirectory(prefix="nanorec-roundtrip-") as folder:
        archive = Path(folder) / "archive.nanover.zip"
        converted = convert(report.path, archive, family=family)
        exported = export(archive, Path(folder) / "back.log")
        return dataclasses.replace(
            report, via_archive=exported.identical is True, archive_size=converted.archive_size
        )


__all__ = ["RoundtripReport", "format_report", "roundtrip", "via_archive"]
