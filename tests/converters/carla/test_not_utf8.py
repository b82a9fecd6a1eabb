"""A map name that is not UTF-8 (CARLA writes whatever bytes it has): converts, exports
byte for byte, prints the original bytes in CARLA's text and valid JSON in --json."""

from __future__ import annotations

import json
from pathlib import Path

from nanorec.cli import _register, app
from tests.conftest import SAMPLES, make_runner


def test_a_map_name_that_is_not_utf8_round_trips(tmp_path: Path) -> None:
    data = bytearray((SAMPLES / "carla-0.9.16-town03.log").read_bytes())
    at = data.find(b"Town03")
    data[at + 4] = 0xFF
    source = tmp_path / "odd.log"
    source.write_bytes(bytes(data))
    _register()
    runner = make_runner()
    archive = tmp_path / "odd.nanover.zip"
    result = runner.invoke(app, ["convert", str(source), "-o", str(archive)])
    assert result.exit_code == 0, result.stderr
    back = tmp_path / "back.log"
    assert runner.invoke(app, ["export", str(archive), "-o", str(back)]).exit_code == 0
    assert back.read_bytes() == bytes(data)
    text = runner.invoke(app, ["info", str(archive)]).stdout_bytes
    assert b"Map: Town\xff3\n" in text
    document = json.loads(runner.invoke(app, ["info", str(archive), "--json"]).stdout)
    assert document["header"]["map"] == {"base64": "VG93bv8z"}
