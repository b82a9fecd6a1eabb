"""ROS 2 bags pass the converter contract: the bundled single-file samples (sqlite3, MCAP)
and, when ../shared is present, every real storage file. The hostile inputs are bag folders
(issue #39) and .db3 rows (#34) whose own tests are test_listed_files.py,
test_crashed_folder.py, test_damaged_metadata.py and test_hostile_rows.py."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from nanorec import registry
from tests.conftest import REALDATA, SAMPLES
from tests.converters.contract import ConverterContract
from tests.converters.ros2 import hostile

pytest.importorskip("yaml")
pytest.importorskip("zstandard")
pytest.importorskip("mcap")


class TestRos2Contract(ConverterContract):
    name = "ros2"

    @pytest.fixture
    def samples(self) -> list[Path]:
        return [SAMPLES / "ros2-robot.db3", SAMPLES / "ros2-robot.mcap"]

    def hostile_inputs(self, folder: Path) -> list[Path]:
        """Issue #39's bag folders reaching outside themselves, listing files twice or
        missing, damaged metadata.yaml, a crashed folder with a sub-folder, NULL and late
        rows; issue #34's round 4 (`hostile.py`): chunk, file and message bombs, runs of
        zeros, archives whose side members are short or a zlib bomb, definitions and a
        metadata.yaml nested thousands deep, a metadata.yaml that is a FIFO."""
        outside = folder / "outside.sqlite"
        shutil.copy(SAMPLES / "ros2-robot.db3", outside)
        text = (SAMPLES / "ros2-robot" / "metadata.yaml").read_text()
        listed = "    - ros2-robot_0.mcap\n"
        made = []
        for name, extra in {
            "bag-dotdot": ["../outside.sqlite"],
            "bag-absolute": [str(outside)],
            "bag-link": ["ros2-robot_1.db3"],
            "bag-twice": ["ros2-robot_0.mcap"],
            "bag-missing": ["ros2-robot_9.mcap"],
            "bag-not-storage": ["notes.mcap"],
        }.items():
            bag = folder / name
            shutil.copytree(SAMPLES / "ros2-robot", bag)
            more = "".join(f"    - {e}\n" for e in extra)
            (bag / "metadata.yaml").write_text(text.replace(listed, listed + more, 1))
            made.append(bag)
        (folder / "bag-link" / "ros2-robot_1.db3").symlink_to(outside)
        (folder / "bag-not-storage" / "notes.mcap").write_text("not a bag\n")
        for name, cut in {
            "bag-cut-yaml": 900,
            "bag-cut-key": text.index("  relative_file"),
        }.items():
            shutil.copytree(SAMPLES / "ros2-robot", folder / name)
            (folder / name / "metadata.yaml").write_text(text[:cut])
            made.append(folder / name)
        for name, yaml in {  # #34 items 5, 6: nested 20,000 deep; a FIFO (never opened)
            "bag-deep-yaml": text.replace(": ", ": " + "[" * 20000 + "]" * 20000 + "\n#", 1),
            "bag-fifo-yaml": None,
        }.items():
            shutil.copytree(SAMPLES / "ros2-robot", folder / name)
            (folder / name / "metadata.yaml").unlink()
            if yaml is None:
                os.mkfifo(folder / name / "metadata.yaml")
            else:
                (folder / name / "metadata.yaml").write_text(yaml)
            made.append(folder / name)
        crashed = folder / "crashed"  # no metadata.yaml, a sub-folder
        (crashed / "logs").mkdir(parents=True)
        shutil.copy(SAMPLES / "ros2-robot.db3", crashed / "crashed_0.db3")
        nulls, late = folder / "nulls.db3", folder / "late.db3"
        for path in (nulls, late):
            shutil.copy(SAMPLES / "ros2-robot.db3", path)
        with sqlite3.connect(nulls) as db:
            db.execute("PRAGMA writable_schema = ON")
            db.execute("UPDATE sqlite_master SET sql = replace(sql, 'NOT NULL', '')")
        db.close()
        with sqlite3.connect(nulls) as db:
            db.execute("UPDATE messages SET timestamp = NULL, data = NULL WHERE id % 3 = 0")
        db.close()
        with sqlite3.connect(late) as db:  # 2^32 s and later: no ROS1 time
            db.execute("UPDATE messages SET timestamp = timestamp + (1 << 62) WHERE id > 5")
        db.close()
        files = hostile.write_all(folder)
        files += [hostile.deep_definition_db3(folder / f"deep-{k}.db3", k) for k in hostile.DEEP]
        archive = folder / "sample.nanover.zip"
        registry.for_native(hostile.SAMPLE_DB3).convert(hostile.SAMPLE_DB3, archive)
        for member, data in [
            ("ros2-time.bin", bytes(12)),
            ("ros2-rank.bin", b""),
            ("ros2.msgpack.zlib", hostile.zlib_bomb()),
        ]:
            name = f"{member.split('.')[0]}-hostile.nanover.zip"
            files.append(hostile.with_member(archive, folder / name, member, data))
        for name, twice in {"no-skeleton": False, "two-skeletons": True}.items():  # #39 item 6
            out = folder / f"{name}.nanover.zip"
            files.append(hostile.without_member(archive, out, "ros2-skeleton-0.bin", twice=twice))
        archive.unlink()
        return [*made, crashed, nulls, late, *files]


@pytest.mark.realdata
@pytest.mark.skipif(not (REALDATA / "ros2").is_dir(), reason="../shared/realdata absent")
class TestRos2ContractRealdata(ConverterContract):
    name = "ros2"

    @pytest.fixture
    def samples(self) -> list[Path]:
        files = sorted((REALDATA / "ros2").glob("*/*.db3")) + sorted(
            (REALDATA / "ros2").glob("*/*.mcap")
        )
        return [p for p in files if p.stat().st_size < 40_000][:6]
