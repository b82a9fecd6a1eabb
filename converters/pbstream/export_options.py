"""`PbstreamExportOptions`: what an export request of a pbstream carries beyond the core's.
The converter reads them, the command line builds them (from `verb_options`' flags); they
live here so that neither of the two imports the other."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PbstreamExportOptions:
    """A native export's cut (`trajectories`: ids to keep; `nodes`: (first, stop) node
    indexes, either None for open) or a ros-map's `resolution` (metres per cell)."""

    trajectories: tuple[int, ...] | None = None
    nodes: tuple[int | None, int | None] | None = None
    resolution: float | None = None
