"""A bag whose writer was killed (SIGKILL, as a crash or a power cut leaves it): `rosbags`'
writer is killed while writing, in both storages, and every message on disk converts: the
messages found are the first ones written, in order, none missing between them and none
damaged, and the files export byte for byte."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nanorec import registry
from nanorec.archive.reader import ArchiveReader

pytest.importorskip("yaml")
pytest.importorskip("zstandard")
pytest.importorskip("mcap")
pytest.importorskip("rosbags")

WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore
    store = get_typestore(Stores.ROS2_HUMBLE)
    String = store.types["std_msgs/msg/String"]
    plugin = StoragePlugin.MCAP if sys.argv[2] == "mcap" else StoragePlugin.SQLITE3
    writer = Writer(Path(sys.argv[1]), version=8, storage_plugin=plugin)
    writer.open()
    conn = writer.add_connection("/chatter", String.__msgtype__, typestore=store)
    for i in range(10**9):
        data = store.serialize_cdr(String(data=f"hello {i} " * 20), String.__msgtype__)
        writer.write(conn, 1_700_000_000_000_000_000 + i * 1000, data)
        if i == 20_000:
            print("ready", flush=True)
    """
)


@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
def test_a_killed_writer_s_messages_convert(storage: str, tmp_path: Path) -> None:
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    bag = tmp_path / "bag"
    with subprocess.Popen(
        [sys.executable, str(script), str(bag), storage], stdout=subprocess.PIPE, text=True
    ) as writer:
        assert writer.stdout is not None and writer.stdout.readline() == "ready\n"
        writer.send_signal(signal.SIGKILL)
    assert not (bag / "metadata.yaml").exists()  # written at close, which never came
    converter = registry.for_native(bag)
    archive = tmp_path / "bag.nanover.zip"
    report = converter.convert(bag, archive)
    assert report.messages > 1000
    with registry.open(archive) as rec:
        texts = [rec.decode(n)["data"] for n in range(len(rec))]  # type: ignore[attr-defined]
    assert texts == [f"hello {i} " * 20 for i in range(len(texts))]
    with ArchiveReader(archive) as reader:
        assert converter.export(reader, tmp_path / "back").identical is True
