"""A truncated or damaged metadata.yaml (issue #39): read once, the same way at convert time
and by `info`, strictly as rosbag2 reads it. One it cannot read is a note saying what was
wrong and what is used instead (the storage files, as `ros2 bag reindex` would describe
them), exit 1; `info` and export of the archive then work."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from nanorec.cli import _register, app
from tests.conftest import SAMPLES, make_runner

pytest.importorskip("yaml")
pytest.importorskip("zstandard")
pytest.importorskip("mcap")

_register()

TEXT = (SAMPLES / "ros2-robot" / "metadata.yaml").read_text()


def _run(*args: object) -> tuple[int, str, str]:
    result = make_runner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


CUTS = {
    "no QoS key": TEXT[: TEXT.index("        offered_qos_profiles", 600)],  # still YAML
    "inside a string": TEXT[:900],  # no longer YAML
    "not a map": "rosbag2_bagfile_information: 3\n",
}


@pytest.mark.parametrize("cut", list(CUTS))
def test_damaged_metadata_is_a_note_and_info_works(cut: str, tmp_path: Path) -> None:
    bag = tmp_path / "bag"
    shutil.copytree(SAMPLES / "ros2-robot", bag)
    (bag / "metadata.yaml").write_text(CUTS[cut])
    archive = tmp_path / "a.nanover.zip"
    code, out, err = _run("convert", bag, "-o", archive)
    assert code == 1 and "warning: metadata.yaml unreadable" in out, out + err
    code, out, err = _run("info", archive, "--tz", "UTC")
    assert code == 0 and "Messages:          630" in out, out + err
    assert "metadata.yaml unreadable" in out + err
    for name in ("back.mcap", "back.db3", "back"):
        code, out, err = _run("export", archive, "-o", tmp_path / name)
        assert code == 0, name + out + err
    assert (tmp_path / "back" / "metadata.yaml").read_text() == CUTS[cut]  # given back as it was


def test_info_prints_what_is_held_and_notes_the_claim(tmp_path: Path) -> None:
    """#34 item 9, #39 item 5: metadata.yaml claims more messages than the bag holds."""
    bag = tmp_path / "bag"
    shutil.copytree(SAMPLES / "ros2-robot", bag)
    text = TEXT.replace("  message_count: 630\n", "  message_count: 700\n", 1)
    text = text.replace("      message_count: 600\n", "      message_count: 670\n", 1)
    assert text != TEXT
    (bag / "metadata.yaml").write_text(text)
    archive = tmp_path / "a.nanover.zip"
    assert _run("convert", bag, "-o", archive)[0] == 0
    code, out, err = _run("info", archive, "--json")
    facts = json.loads(out)
    assert code == 0 and facts["bag"]["message_count"] == 630
    assert [t["message_count"] for t in facts["bag"]["topics_with_message_count"]] == [600, 30]
    assert any("700" in note and "630" in note for note in facts["notes"])
    code, out, err = _run("info", archive, "--tz", "UTC")
    assert code == 0 and "Messages:          630" in out and "Count: 600 " in out
    assert "says 700 messages" in err
