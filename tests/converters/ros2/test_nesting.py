"""Definitions and metadata.yaml nesting past any real one (issue #34 item 5): IDL modules
3,000 deep, `sequence<>` 2,000 deep, a `.msg` chain of 3,000 types (ROS 2 and ROS1), a
metadata.yaml nested 20,000 deep. Each is refused when parsed, by a depth bound named in
one line (its messages then come out as bytes, its topic is left out of a ROS1 bag, the
metadata.yaml is replaced by the storage files): never a RecursionError."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from nanorec.cli import _register, app
from nanorec.converters.ros.common.depth import MAX_DEPTH
from nanorec.converters.ros.ros1.msgdef import parse_definition as parse_ros1
from nanorec.converters.ros.ros2.metadata import MAX_YAML_DEPTH, load_yaml
from nanorec.converters.ros.ros2.msgdef import SEPARATOR, parse_definition
from nanorec.errors import FormatError
from tests.conftest import SAMPLES, make_runner
from tests.converters.ros2 import hostile

pytest.importorskip("yaml")
pytest.importorskip("zstandard")
pytest.importorskip("mcap")

_register()


def _run(*args: object) -> tuple[int, str]:
    result = make_runner().invoke(app, [str(a) for a in args])
    assert not isinstance(result.exception, RecursionError), result.exception
    return result.exit_code, result.stdout + result.stderr


@pytest.mark.parametrize("kind", list(hostile.DEEP))
def test_a_deep_definition_is_refused_when_parsed(kind: str) -> None:
    encoding, text = hostile.DEEP[kind]
    with pytest.raises(FormatError, match=r"sequence of sequences|more than 100 deep"):
        parse_definition("deep/msg/Deep", encoding, text)


def test_a_chain_as_deep_as_the_bound_parses() -> None:
    text = "T1 next\n" + "".join(
        f"{SEPARATOR}\nMSG: deep/T{i}\n" + (f"T{i + 1} next\n" if i < MAX_DEPTH - 1 else "")
        for i in range(1, MAX_DEPTH)
    )
    assert len(parse_definition("deep/msg/Deep", "ros2msg", text)) == MAX_DEPTH


@pytest.mark.parametrize("kind", list(hostile.DEEP))
def test_every_verb_on_a_deep_definition_says_one_line(kind: str, tmp_path: Path) -> None:
    bag = hostile.deep_definition_db3(tmp_path / "deep.db3", kind)
    archive = tmp_path / "deep.nanover.zip"
    assert _run("convert", bag, "-o", archive)[0] == 0
    for verb in (
        ["cat", bag],
        ["play", bag, "--immediate", "--quiet"],
        ["export", archive, "--format", "ros1", "-o", tmp_path / "deep.bag"],
        ["export", archive, "--format", "parquet", "-o", tmp_path / "deep.parquet"],
    ):
        code, out = _run(*verb)
        assert code in (0, 1) and "Traceback" not in out, (verb, out)
        assert "deep" in out and ("100 deep" in out or "sequence of sequences" in out), out


def test_a_deep_ros1_chain_is_refused_and_export_says_one_line(tmp_path: Path) -> None:
    from tests.converters.rosbag.test_trust import _bag_of

    text = "T1 next\n" + "".join(
        f"{SEPARATOR}\nMSG: p/T{i}\nT{i + 1} next\n" for i in range(1, 3000)
    )
    with pytest.raises(FormatError, match="more than 100 deep"):
        parse_ros1("p/A", text + f"{SEPARATOR}\nMSG: p/T3000\nint32 x")
    bag = _bag_of(tmp_path / "chain.bag", "p/A", text + f"{SEPARATOR}\nMSG: p/T3000\nint32 x", b"")
    archive = tmp_path / "chain.nanover.zip"
    assert _run("convert", bag, "-o", archive)[0] in (0, 1)
    code, out = _run("export", archive, "--format", "ros2", "-o", tmp_path / "chain.db3")
    assert code == 2 and out.count("\n") == 1 and "100 deep" in out, out


def test_yaml_nesting_is_bounded_before_loading() -> None:
    with pytest.raises(FormatError, match=f"more than {MAX_YAML_DEPTH} levels deep"):
        load_yaml("a: " + "[" * 200 + "]" * 200)
    inner = MAX_YAML_DEPTH - 1  # within the top map
    assert load_yaml("a: " + "[" * inner + "]" * inner) is not None


@pytest.mark.parametrize("depth", [200, 20_000])
def test_a_deep_metadata_yaml_is_one_line(depth: int, tmp_path: Path) -> None:
    bag = tmp_path / "bag"
    shutil.copytree(SAMPLES / "ros2-robot", bag)
    text = (bag / "metadata.yaml").read_text()
    deep = "rosbag2_bagfile_information:\n  deep: " + "[" * depth + "]" * depth + "\n"
    (bag / "metadata.yaml").write_text(text.replace("rosbag2_bagfile_information:\n", deep, 1))
    code, out = _run("convert", bag, "-o", tmp_path / "a.nanover.zip")
    assert code == 1 and "metadata.yaml" in out and "Traceback" not in out, out
    code, out = _run("info", bag)
    assert code == 2 and out.count("\n") == 1 and out.startswith("nanorec: metadata.yaml"), out


def test_a_deep_ros1_chain_has_no_md5sum() -> None:
    from nanorec.converters.ros.ros1.md5 import full_text, md5sum

    chain = "T1 next\n" + "".join(
        f"{SEPARATOR}\nMSG: p/T{i}\n" + (f"T{i + 1} next\n" if i < 3000 else "int32 x")
        for i in range(1, 3001)
    )
    with pytest.raises(FormatError, match="more than 100 deep"):
        md5sum("p/A", chain)
    texts = {"p/A": "T1 next\n", **{f"p/T{i}": f"T{i + 1} next\n" for i in range(1, 3000)}}
    with pytest.raises(FormatError, match="more than 100 deep"):
        full_text("p/A", {**texts, "p/T3000": "int32 x\n"})
