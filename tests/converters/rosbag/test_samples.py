"""The committed bag samples are what their JSON twins say the generator makes."""

from __future__ import annotations

import json
import sys

import pytest

from tests.conftest import SAMPLES

sys.path.insert(0, str(SAMPLES))
make_samples = pytest.importorskip("make_samples")


@pytest.mark.parametrize("name", sorted(make_samples.BAGS))
def test_sample_regenerates_byte_for_byte(name: str) -> None:
    if name.endswith("lz4.bag"):
        pytest.importorskip("lz4")
    data, info = make_samples.build_bag(name)
    assert (SAMPLES / name).read_bytes() == data
    assert json.loads((SAMPLES / f"{name}.json").read_text()) == info
