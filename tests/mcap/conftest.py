"""The MCAP tests read files back with the `mcap` package and validate JSON with
`jsonschema` (both in the `dev` extra): without them (CI's lowest-versions run, core only)
only the axis tests, which need neither, are collected."""

from __future__ import annotations

import importlib.util

NEEDED = ("mcap", "jsonschema")

collect_ignore_glob = (
    []
    if all(importlib.util.find_spec(name) is not None for name in NEEDED)
    else ["test_export.py", "test_carla.py", "test_ros1.py", "test_foxglove.py", "test_docs.py"]
)
