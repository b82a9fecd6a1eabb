"""Archives written before records kept their gzip members (each message held the inflated
`payload`, and a `member` only where rebuilding it differed) still read and export."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

from nanorec.archive.reader import ArchiveReader
from nanorec.archive.writer import ArchiveWriter
from nanorec.converters.pbstream.convert import META_MEMBER, TAIL_MEMBER, convert
from nanorec.converters.pbstream.export import export_native
from nanorec.converters.pbstream.generate import Plan, iter_payloads
from nanorec.converters.pbstream.recording import PbstreamRecording
from nanorec.converters.pbstream.stream import MAGIC, SIZE, build_member, inflate_member


def _payload_form(entry: dict[str, Any]) -> dict[str, Any]:
    """An entry as the earlier converter wrote it."""
    member = entry.pop("member")
    payload = inflate_member(member, 0)
    entry["payload"] = payload
    if build_member(payload) != member:
        entry["member"] = member
    return entry


def test_a_payload_archive_reads_and_exports(tmp_path: Path) -> None:
    payloads = list(iter_payloads(Plan(trajectories=2, nodes=6, nodes_per_submap=3)))
    members = [build_member(p) for p in payloads]
    members[4] = gzip.compress(payloads[4], 9, mtime=0)  # kept beside its payload
    damaged = bytearray(members[5])
    damaged[20] ^= 0x55
    members[5] = bytes(damaged)
    data = MAGIC + b"".join(SIZE.pack(len(m)) + m for m in members) + b"\x01\x02"
    source = tmp_path / "s.pbstream"
    source.write_bytes(data)
    new = tmp_path / "new.nanover.zip"
    convert(source, new)
    old = tmp_path / "old.nanover.zip"
    with ArchiveReader(new) as reader:
        ((_, kept),) = reader[3].items()  # what convert writes now: the member alone
        assert "payload" not in kept and "member" in kept
        description = reader.description or {}
        with ArchiveWriter(
            old, source_format="pbstream", source=dict(description.get("source") or {})
        ) as writer:
            for number in range(len(reader)):
                ((kind, entry),) = reader[number].items()
                if kind != "damaged":
                    entry = _payload_form(dict(entry))
                writer.write({kind: entry}, timestamp_us=int(reader.index.timestamp_us[number]))
            for name in (META_MEMBER, TAIL_MEMBER):
                writer.add_member(name, bytes(reader.member(name)))
    with PbstreamRecording(ArchiveReader(old)) as rec:
        assert rec.kind_of(5) == "damaged"
        assert rec.decode(4)["member_kept_raw"] is True
        for number in (0, 1, 2, 3, 4, len(rec) - 1):
            assert rec.payload(number) == payloads[number]
        assert rec.summary()["trajectories"]
        back = tmp_path / "back.pbstream"
        report = export_native(rec.reader, back)
    assert back.read_bytes() == data and report.identical
