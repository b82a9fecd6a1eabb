"""Detection's per-family tables are worked out once (issue 33, item 4: per-file cost) and
give the same answer cold and warm."""

from __future__ import annotations

import mmap

import pytest

from nanorec.converters.carla import detect
from tests.conftest import SAMPLES, carla_realdata

FILES = sorted(SAMPLES.glob("carla-*.log")) + carla_realdata()


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_the_same_family_and_reasons_cold_and_warm(path: object) -> None:
    with (
        open(str(path), "rb") as handle,
        mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as buf,
    ):
        detect._LAYOUTS.clear()
        cold = detect.detect(buf)
        assert detect._LAYOUTS  # filled by the first file
        warm = detect.detect(buf)
    assert (cold.family.name, cold.reasons) == (warm.family.name, warm.reasons)


def test_each_family_gets_its_own_tables() -> None:
    from nanorec.converters.carla.ids import FAMILIES

    detect._LAYOUTS.clear()
    for family in FAMILIES.values():
        slot, always = detect._layout(family)
        for position, item in enumerate(family.order):
            if item.kind in family.kinds:
                assert slot[family.id_of(item.kind)] == position, (family.name, item.kind)
        assert {pid for pid, _ in always} == {
            family.id_of(item.kind)
            for item in family.order
            if item.always and item.kind in family.kinds
        }
