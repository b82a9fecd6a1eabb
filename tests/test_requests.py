"""Typed requests and options (issue 35 item 2): one parser turns `-O KEY=VALUE` strings into a
converter's frozen options dataclass, typed from its fields, refusing keys it lacks; every
registered converter declares its options classes; capabilities are found by isinstance."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest

from nanorec import registry
from nanorec.contract import (
    Adopting,
    ConvertRequest,
    DirectoryFormat,
    ExportRequest,
    ExtraExportForms,
    ForeignWriter,
    NoOptions,
    StorageChoice,
    convert_request,
    parse_options,
)
from nanorec.errors import UsageError


@dataclass(frozen=True)
class Sample:
    name: str | None = None
    count: int = 1
    rate: float = 1.0
    loud: bool = False
    ids: tuple[int, ...] | None = None


def test_values_take_their_fields_types() -> None:
    parsed = parse_options(
        Sample, {"name": "x", "count": "3", "rate": "0.5", "loud": "yes", "ids": "1, 2,3"}
    )
    assert parsed == Sample("x", 3, 0.5, True, (1, 2, 3))
    assert parse_options(Sample, {}) == Sample()
    assert parse_options(Sample, {"name": "none"}).name is None


@pytest.mark.parametrize(
    ("pairs", "says"),
    [
        ({"colour": "red"}, "-O colour: no such option here (it takes name, count, rate, loud"),
        ({"count": "many"}, "-O count=many: not an integer"),
        ({"rate": "fast"}, "-O rate=fast: not a number"),
        ({"loud": "maybe"}, "-O loud=maybe: not true or false"),
    ],
)
def test_bad_options_are_usage_errors(pairs: dict[str, str], says: str) -> None:
    with pytest.raises(UsageError) as raised:
        parse_options(Sample, pairs)
    assert says in str(raised.value)


def test_a_format_without_options_names_none() -> None:
    with pytest.raises(UsageError, match="it takes none"):
        parse_options(NoOptions, {"family": "0.9.15"})


def test_every_converter_declares_frozen_options() -> None:
    for converter in registry.converters().values():
        for kind in (converter.convert_options, converter.export_options):
            assert dataclasses.is_dataclass(kind), (converter.name, kind)
            assert kind.__dataclass_params__.frozen, (converter.name, kind)  # type: ignore[attr-defined]
            kind()  # every field has a default


def test_carla_family_is_typed() -> None:
    carla = registry.get("carla")
    request = convert_request(carla, {"family": "0.9.15"}, overwrite=True)
    assert request.overwrite and request.options_as(carla.convert_options).family == "0.9.15"
    with pytest.raises(UsageError, match="it takes family"):
        convert_request(carla, {"familly": "0.9.15"})


def test_options_of_another_format_are_refused() -> None:
    request = ConvertRequest(options=Sample())
    with pytest.raises(UsageError, match="Sample given where NoOptions"):
        request.options_as(NoOptions)
    assert ExportRequest().options_as(Sample) == Sample()  # none given: the defaults


def test_capabilities_are_found_by_isinstance() -> None:
    found = {
        name: {
            cap.__name__
            for cap in (Adopting, DirectoryFormat, ExtraExportForms, ForeignWriter, StorageChoice)
            if isinstance(converter, cap)
        }
        for name, converter in registry.converters().items()
    }
    assert found["ros2"] == {
        "Adopting", "DirectoryFormat", "ExtraExportForms", "ForeignWriter", "StorageChoice"
    }  # fmt: skip
    assert found["rosbag"] == {"Adopting", "ExtraExportForms", "ForeignWriter"}
    assert found["carla"] == {"Adopting"}
    assert found["pbstream"] == {"Adopting", "ExtraExportForms"}
    assert found["fake"] == set()
