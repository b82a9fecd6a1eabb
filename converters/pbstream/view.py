"""A Cartographer state for `nanorec view` (`nanorec.contract.Viewable`): the map, the
trajectories and the constraints of `plot`, and the nodes as the records reach them.

The overview is `plot`'s picture as layers: the 2D occupancy grid `rosmap.assemble` paints
(map_server's grey PNG, row 0 at the top, lying over its `extent`; none for a 3D or
map-less state), each trajectory's node poses (optimised where the pose graph has them) as
one line, the submap origins as points, and each constraint as a segment from its submap to
its node classed by `plot.constraint_kind` (intra-submap, inter-submap, inter-trajectory).
Cartographer's frame is already x right, y up.

A scene at record N shows the nodes whose node record is at or before N (nodes the pose
graph holds without a record of their own count from the pose graph's record), at most
`MAX_NODES` of them evenly spaced, and the current node (the latest node record at or
before N) highlighted and followed. The node table is built once per recording; a scene
is a mask over it.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from nanorec.errors import UsageError
from nanorec.outputs import layers
from nanorec.outputs.png import PNG_MIME, png_bytes

from .plot import KINDS, constraint_kind
from .records import NODE, POSE_GRAPH
from .rosmap import assemble
from .trajectory import Poses

if TYPE_CHECKING:
    from .recording import PbstreamRecording

__all__ = ["MAX_NODES", "PbstreamView"]

#: A scene shows at most this many of the nodes reached (evenly spaced, the last kept).
MAX_NODES = 20_000
_NEVER = np.iinfo(np.int64).max


class PbstreamView:
    """What a `PbstreamRecording` shows; the overview and the node table are cached."""

    def __init__(self, rec: PbstreamRecording) -> None:
        self.rec = rec

    @cached_property
    def paths(self) -> dict[int, Poses]:
        """`rec.trajectories()` once (an unfinished state decodes every node record)."""
        return self.rec.trajectories()

    @cached_property
    def trajectory_ids(self) -> list[int]:
        return sorted(self.paths)

    @cached_property
    def overview(self) -> dict[str, Any]:
        """The map image, trajectories, submaps and constraints, and their bounds."""
        rec = self.rec
        paths = self.paths
        names = [f"trajectory {tid}" for tid in self.trajectory_ids]
        tracks = layers.lines(
            "trajectories",
            [poses.translation[:, :2] for poses in paths.values()],
            range(len(paths)),
            names,
        )
        graph = rec.pose_graph()
        submap_xy = [poses.translation[:, :2] for poses in graph.submaps.values()]
        submap_tids = [np.full(len(p), i) for i, p in enumerate(graph.submaps.values())]
        submaps = layers.points(
            "submaps",
            np.concatenate(submap_xy)[:, 0] if submap_xy else [],
            np.concatenate(submap_xy)[:, 1] if submap_xy else [],
            np.concatenate(submap_tids) if submap_tids else [],
            [f"submaps {tid}" for tid in graph.submaps],
        )
        found: list[dict[str, Any]] = [tracks, submaps, self._constraints()]
        bounds_from = list(found)
        picture = self._map()
        if picture is not None:
            x0, y0, x1, y1 = picture["extent"]
            bounds_from.append({"x": np.array([x0, x1]), "y": np.array([y0, y1])})
            found.insert(0, picture)
        return {"bounds": layers.bounds_of(bounds_from), "layers": found}

    def _map(self) -> dict[str, Any] | None:
        """The assembled 2D grid as a grey PNG over its extent (None: no 2D submap)."""
        try:
            grid = assemble(self.rec)
        except UsageError:
            return None
        height, width = grid.image.shape
        x0, y0 = grid.origin
        extent = (x0, y0, x0 + width * grid.resolution, y0 + height * grid.resolution)
        return layers.image("map", PNG_MIME, png_bytes(grid.image), extent)

    def _constraints(self) -> dict[str, Any]:
        """Each constraint whose submap and node have poses, as a segment, by kind."""
        graph = self.rec.pose_graph()
        submaps = _places(graph.submaps)
        nodes = _places(self.paths)
        segments: list[npt.NDArray[np.float64]] = []
        kinds = list(KINDS)
        classes: list[int] = []
        for c in graph.constraints.tolist():
            start = submaps.get((int(c[0]), int(c[1])))
            end = nodes.get((int(c[2]), int(c[3])))
            if start is not None and end is not None:
                segments.append(np.array([start, end], np.float64))
                classes.append(kinds.index(constraint_kind(c)))
        return layers.lines("constraints", segments, classes, kinds)

    @cached_property
    def nodes(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[Any]]:
        """Every node pose: its record number (the pose graph's for a node without a
        record), x, y (n, 2), and its trajectory's position in `trajectory_ids`; sorted by
        record number."""
        rec = self.rec
        numbers = rec.numbers_of(NODE)
        recorded = dict(
            zip(
                zip(
                    rec.trajectory_ids[numbers].tolist(),
                    rec.indexes[numbers].tolist(),
                    strict=True,
                ),
                numbers.tolist(),
                strict=True,
            )
        )
        graph_records = rec.numbers_of(POSE_GRAPH)
        fallback = int(graph_records[0]) if len(graph_records) else _NEVER
        found_numbers, found_xy, found_class = [], [], []
        for row, (tid, poses) in enumerate(self.paths.items()):
            found_numbers.append(
                np.array([recorded.get((tid, i), fallback) for i in poses.index.tolist()])
            )
            found_xy.append(poses.translation[:, :2])
            found_class.append(np.full(len(poses), row, np.int32))
        if not found_numbers:
            return np.zeros(0, np.int64), np.zeros((0, 2)), np.zeros(0, np.int32)
        order = np.argsort(np.concatenate(found_numbers), kind="stable")
        return (
            np.concatenate(found_numbers).astype(np.int64)[order],
            np.concatenate(found_xy)[order],
            np.concatenate(found_class)[order],
        )

    def scene(self, number: int) -> dict[str, Any]:
        """The nodes reached at record `number` and the current one, followed. Raises
        `OutOfRangeError` outside the recording."""
        number = self.rec.reader.index.normalize(number)
        numbers, xy, classes = self.nodes
        count = int(np.searchsorted(numbers, number, side="right"))
        shown = np.arange(count)
        if count > MAX_NODES:
            shown = np.unique(np.linspace(0, count - 1, MAX_NODES).round().astype(np.int64))
        names = [f"trajectory {tid}" for tid in self.trajectory_ids]
        reached = layers.points("nodes", xy[shown, 0], xy[shown, 1], classes[shown], names)
        current = slice(count - 1, count) if count else slice(0, 0)
        now = layers.points("current node", xy[current, 0], xy[current, 1], classes[current], names)
        scene: dict[str, Any] = {"layers": [reached, now]}
        if len(now["x"]):
            scene["follow"] = [float(now["x"][0]), float(now["y"][0])]
        return scene


def _places(
    poses_by_trajectory: dict[int, Poses],
) -> dict[tuple[int, int], tuple[float, float]]:
    """(trajectory, index) -> x, y of each pose."""
    return {
        (tid, index): (x, y)
        for tid, poses in poses_by_trajectory.items()
        for index, (x, y) in zip(
            poses.index.tolist(), poses.translation[:, :2].tolist(), strict=True
        )
    }
