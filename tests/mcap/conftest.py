"""The MCAP tests read files back with the `mcap` package, validate JSON with `jsonschema`
and decode protobuf with `protobuf` (all in the `dev` extra): without them (CI's
lowest-versions run, core only) only the axis tests, which need none, are collected."""

from __future__ import annotations

import importlib.util

NEEDED = ("mcap", "jsonschema", "google.protobuf")


def _found(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a dotted name whose parent is missing
        return False


collect_ignore_glob = (
    []
    if all(_found(name) for name in NEEDED)
    else ["test_export.py", "test_carla.py", "test_ros1.py", "test_foxglove.py", "test_docs.py"]
)
