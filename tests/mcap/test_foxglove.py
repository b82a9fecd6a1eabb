"""`nanorec.outputs.mcap_foxglove`: what each helper builds validates against Foxglove's published
JSON Schema, and a synthetic Cartographer-like map (trajectory poses, a line strip, a grid)
exports and reads back."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest

from nanorec.outputs import mcap_foxglove as fox
from nanorec.outputs.mcap import McapRecord, export_mcap
from nanorec.selection import Selection
from tests.mcap.doctor import doctor


def validate(type_name: str, message: dict[str, Any]) -> None:
    jsonschema.Draft202012Validator(json.loads(fox.schema(type_name))).validate(message)


def test_schemas_are_foxglove_types() -> None:
    names = fox.schema_names()
    assert {"foxglove.SceneUpdate", "foxglove.Grid", "foxglove.Log"} <= set(names)
    for name in names:
        schema = json.loads(fox.schema(name))
        assert schema["title"] == name
        jsonschema.Draft202012Validator.check_schema(schema)
    assert fox.schema("foxglove.Grid") is fox.schema("foxglove.Grid")
    with pytest.raises(KeyError):
        fox.schema("foxglove.Nothing")


def test_helpers_validate() -> None:
    t = 1_700_000_000_123_456_789
    assert fox.stamp(t) == {"sec": 1_700_000_000, "nsec": 123_456_789}
    transform = fox.frame_transform(t, "map", "base", (1.0, 2.0, 0.0), (0, 0, 0, 1))
    validate("foxglove.FrameTransform", transform)
    validate("foxglove.FrameTransforms", {"transforms": [transform]})
    validate("foxglove.PoseInFrame", fox.pose_in_frame(t, "map", (1, 2, 3), (0, 0, 0, 1)))
    validate("foxglove.Log", fox.log(t, fox.LOG_WARNING, "hello", "test"))
    line = fox.line_strip([[0, 0, 0], [1, 0, 0], [1, 1, 0]], (1, 0, 0, 1))
    entity = fox.entity(t, "map", "trajectory/0", {"nodes": "3"}, lines=[line])
    validate("foxglove.SceneUpdate", {"deletions": [], "entities": [entity]})
    with pytest.raises(TypeError):
        fox.entity(t, "map", "x", {}, boxes=[])


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_occupancy_grid(dtype: type[np.generic]) -> None:
    cells = np.arange(12, dtype=np.int16).reshape(3, 4).astype(dtype)
    grid = fox.occupancy_grid(5, "map", cells, 0.05, origin=(-1.0, -2.0, 0.0))
    validate("foxglove.Grid", grid)
    assert grid["column_count"] == 4 and grid["row_stride"] == 4
    assert base64.b64decode(grid["data"]) == cells.tobytes()
    assert grid["fields"][0]["type"] == (fox.INT8 if dtype is np.int8 else fox.UINT8)
    with pytest.raises(TypeError):
        fox.occupancy_grid(5, "map", np.zeros((2, 2), np.float32), 0.05)


class MapRecording:
    """What a pbstream gives: node poses of two trajectories and an assembled grid."""

    format = "pbstream"

    def mcap_messages(self, selection: Selection | None) -> Iterator[McapRecord]:
        t0 = 1_600_000_000_000_000_000
        cells = np.full((20, 30), -1, np.int8)
        cells[5:15, 5:25] = 0
        yield fox.record("/map", "foxglove.Grid", t0, fox.occupancy_grid(t0, "map", cells, 0.05))
        lines = []
        for trajectory in range(2):
            points = [(i * 0.1, trajectory * 1.0, 0.0) for i in range(10)]
            lines.append(
                fox.entity(
                    t0,
                    "map",
                    f"trajectory/{trajectory}",
                    {},
                    lines=[fox.line_strip(points, (0, 1, 0, 1))],
                )
            )
        yield fox.record(
            "/trajectories", "foxglove.SceneUpdate", t0, {"deletions": [], "entities": lines}
        )
        for i in range(10):
            t = t0 + i * 100_000_000
            for trajectory in range(2):
                pose = fox.pose_in_frame(t, "map", (i * 0.1, trajectory * 1.0, 0.0), (0, 0, 0, 1))
                yield fox.record(f"/trajectory_{trajectory}/pose", "foxglove.PoseInFrame", t, pose)


def test_map_like_export(tmp_path: Path) -> None:
    out = tmp_path / "map.mcap"
    export_mcap(MapRecording(), out)
    checked = doctor(out)
    assert checked.topic_counts() == {
        "/map": 1,
        "/trajectories": 1,
        "/trajectory_0/pose": 10,
        "/trajectory_1/pose": 10,
    }
    for message in checked.messages:
        schema = checked.schemas[checked.channels[message.channel_id].schema_id]
        validate(schema.name, json.loads(message.data))


def test_occupancy_from_probability() -> None:
    p = np.array([[0.0, 0.5, 1.0], [np.nan, 0.654, 2.0]])
    cells = fox.occupancy_from_probability(p)
    assert cells.dtype == np.int8
    assert cells.tolist() == [[0, 50, 100], [-1, 65, 100]]
