"""Bad values the library refuses are `nanorec.errors` exceptions (issue 34, item 19), still the
builtin class their callers may catch (`UsageError` is a ValueError, `UnknownNameError` a
KeyError); the one reachable from the command line prints one line and exits 2."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nanorec.archive import describe
from nanorec.cli import _register, app
from nanorec.converters.ros.ros1 import serialize
from nanorec.converters.ros.ros1.msgdef import parse_definition
from nanorec.errors import NanorecError, UnknownNameError, UsageError
from nanorec.outputs import mcap_protobuf
from tests.conftest import SAMPLES, make_runner


def test_an_unknown_foxglove_type_is_an_unknown_name() -> None:
    with pytest.raises(UnknownNameError, match=r"foxglove\.Nothing") as caught:
        mcap_protobuf.record("/t", "foxglove.Nothing", 0, b"")
    assert isinstance(caught.value, KeyError)


def test_a_double_block_refuses_the_wrong_number_of_columns() -> None:
    block = mcap_protobuf.DoubleBlock(mcap_protobuf.doubles(3))
    with pytest.raises(UsageError, match="3 doubles"):
        block.fill([np.zeros(2), np.zeros(2)])


def test_a_fixed_ros1_array_of_the_wrong_length_is_a_usage_error() -> None:
    types = parse_definition("test/Fixed", "float64[3] values\n")
    with pytest.raises(UsageError, match="holds 3 elements") as caught:
        serialize.encode(types, "test/Fixed", {"values": [1.0, 2.0]})
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, NanorecError)


def test_a_bad_source_date_epoch_is_refused_without_a_bare_value_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "soon")
    with pytest.raises(UsageError, match="SOURCE_DATE_EPOCH") as caught:
        describe.created_utc()
    assert caught.value.__context__ is None  # no builtin ValueError raised on the way


def test_a_bad_source_date_epoch_on_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1" * 30)  # digits, but past datetime's years
    _register()
    out = tmp_path / "a.nanover.zip"
    result = make_runner().invoke(
        app, ["convert", str(SAMPLES / "carla-0.9.16-town03.log"), "-o", str(out)]
    )
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1 and "SOURCE_DATE_EPOCH" in result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists()


def test_ros2_info_options_a_layout_lacks_are_usage_errors() -> None:
    """ros2 info.py raised bare ValueErrors (issue 34, item 19, the rest)."""
    pytest.importorskip("yaml")
    from nanorec.converters.ros.ros2.info import info_text, topic_names_text
    from nanorec.converters.ros.ros2.metadata import parse_metadata

    meta = parse_metadata((SAMPLES / "ros2-robot" / "metadata.yaml").read_text())
    for call in (
        lambda: info_text(meta, bag_size=1, layout="humble", sort="name"),
        lambda: info_text(meta, bag_size=1, layout="humble", verbose=True),
        lambda: info_text(meta, bag_size=1, sort="size"),  # type: ignore[arg-type]
        lambda: topic_names_text(meta, layout="humble"),
    ):
        with pytest.raises(UsageError) as caught:
            call()
        assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize(
    ("value", "words"),
    [({}, "no type or field 'values'"), ({"values": [1.0, 2.0, 3.0], "n": 1 << 40}, "fit")],
)
def test_a_ros1_value_that_does_not_fit_is_a_usage_error(
    value: dict[str, object], words: str
) -> None:
    types = parse_definition("test/Fixed", "float64[3] values\nint32 n\n")
    with pytest.raises(UsageError, match=words) as caught:
        serialize.encode(types, "test/Fixed", value)
    assert isinstance(caught.value, ValueError)  # as before, for callers catching that
