"""What a ROS 2 conversion reports about the bag: its counts and hash, the tail a crash cut,
and every damaged region, including the parts that held messages not all read back (a cut
or damaged MCAP chunk, .db3 pages cut off, a WAL transaction never committed).

Why apart from `convert.py`: the same regions go to the report (the CLI's exit status) and,
for a damaged bag, to the archive's description (`source.messages_lost` and
`source.damaged`), which `verify` reads back: one place decides what counts as damage.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nanorec.contract import ConvertReport, Region

from .bag import BagLayout


def source_losses(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """What the description's `source` map says of a damaged input (`verify` of the archive
    reports it): nothing for a whole or merely cut bag, whose archive stays as it was."""
    damaged = _damaged(entries)
    if not damaged:
        return {}
    return {
        "messages_lost": sum(e.get("lost_messages", 0) for e in entries),
        "damaged": [str(region) for region in damaged],
    }


def _damaged(entries: list[dict[str, Any]]) -> list[Region]:
    """The damaged regions of the bag's files, as the report lists them."""
    out: list[Region] = []
    last = len(entries) - 1
    for index, entry in enumerate(entries):
        # parts that held messages not all read back: damage even past a cut
        out += [region_in(entry, region) for region in entry.get("losses", ())]
        end = entry["cut"]["offset"] if entry["cut"] is not None else entry["size"]
        for region in entry["damaged"]:
            if region["offset"] < end:  # what lay past a cut is the cut, not damage
                out.append(region_in(entry, region))
        if entry["cut"] is not None and index != last:
            # only the file being written when the writer died may end early
            out.append(region_in(entry, entry["cut"]))
    return out


def report(
    source: Path,
    output: Path,
    layout: BagLayout,
    entries: list[dict[str, Any]],
    count: int,
    size: int,
    sha: str,
) -> ConvertReport:
    """The contract's report of a bag converted into `count` messages at `output`
    (`entries`: each file's facts); the format's facts go in `details`. The warnings are the
    files left out (`BagLayout.problems`)."""
    last = entries[-1]
    cut = region_in(last, last["cut"]) if last["cut"] is not None else None
    notes = list(layout.notes)
    for entry in entries:
        notes += [f"{entry['name']}: {note}" for note in entry["notes"]]
    done = ConvertReport(
        source=source,
        output=output,
        format="ros2",
        messages=count,
        source_size=size,
        archive_size=output.stat().st_size,
        sha256=sha,
        cut=cut,
        damaged=_damaged(entries),
        warnings=list(layout.problems),
    )
    done.details = {
        "storage": sorted({e["storage"] for e in entries}),
        "files": [e["name"] for e in entries],
        "compressed_files": sum(1 for e in entries if e["compressed"]),
        # MCAP chunks that do not compress back identically: kept as stored (their
        # messages are held twice)
        "kept_chunks": sum(e["extra"].get("kept_chunks", 0) for e in entries),
        "notes": notes,
    }
    if done.damaged:  # messages the bag lost (at least: a cut stream hides how many)
        done.details["messages_lost"] = sum(e.get("lost_messages", 0) for e in entries)
    return done


def region_in(entry: dict[str, Any], region: dict[str, Any]) -> Region:
    """A file's region (as its facts hold it) named after the file, for the report."""
    return Region(region["offset"], region["length"], f"{entry['name']}: {region['reason']}")
