"""A selection of a bag archive (time range, topics) as a new valid, indexed bag, like
`rosbag filter`; with everything selected, the repair of a crashed bag."""

from __future__ import annotations

from pathlib import Path

from nanorec.archive.atomic import atomic_output, file_sha256
from nanorec.archive.reader import ArchiveReader
from nanorec.contract import ExportReport
from nanorec.errors import UsageError
from nanorec.selection import Selection

from .archived import payload
from .meta import BagMeta
from .writer import BagWriter


def export_selection(
    reader: ArchiveReader,
    output: Path,
    *,
    selection: Selection | None,
    overwrite: bool,
    compression: str = "none",
) -> ExportReport:
    """Messages in time order, connections renumbered densely in order of first use (as a
    new recording numbers them), each keeping its topic and connection header."""
    meta = BagMeta(reader)
    selection = selection or Selection()
    # one rule for an empty selection, every format (nothing written)
    numbers = (
        selection.numbers(reader.index) if selection.everything else selection.chosen(reader.index)
    )
    if selection.kinds is not None:
        unknown = selection.kinds - {c.topic for c in meta.connections.values()}
        if unknown:
            raise UsageError(f"no topic {', '.join(sorted(unknown))} in this bag")
    if compression not in ("none", "bz2", "lz4"):
        raise UsageError(f"compression must be none, bz2 or lz4, not {compression!r}")
    renumber: dict[int, int] = {}
    reader.advise_sequential()
    with atomic_output(output, overwrite=overwrite) as stream:
        bag = BagWriter(stream, compression=compression)
        for number in numbers.tolist():
            conn = int(meta.conn[number])
            new = renumber.get(conn)
            if new is None:
                new = renumber[conn] = len(renumber)
                known = meta.connections.get(conn)
                topic = meta.topic(conn)
                bag.add_connection(new, topic, () if known is None else known.fields)
            bag.write(new, int(meta.time[number]), bytes(payload(reader, number)["data"]))
        bag.close()
    # read back: the bag header at its start is rewritten last, so no hash on the way
    return ExportReport(
        output,
        output.stat().st_size,
        file_sha256(output),
        len(numbers),
        None,
        {"connections": len(renumber), "compression": compression},
    )
