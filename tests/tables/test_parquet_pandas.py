"""`nanorec export -F parquet` spares the process pyarrow's import of pandas (~0.5 CPU s,
only to ask whether values are pandas objects); the library keeps pyarrow's behaviour."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SAMPLES

pytest.importorskip("pyarrow")
pytest.importorskip("pandas")

RUN = """
import sys
from nanorec.cli import main
try:
    main(["export", sys.argv[1], "-F", "parquet", "-o", sys.argv[2]])
except SystemExit as done:
    assert not done.code, done.code
print("pandas" in sys.modules)
import pyarrow.parquet as pq
frame = pq.read_table(sys.argv[3]).to_pandas()  # pandas when asked for, after the export
print(type(frame).__name__, len(frame) > 0)
"""


@pytest.mark.parametrize("sample", ["ros2-robot.mcap", "rosbag-robot.bag"])
def test_the_cli_export_does_not_import_pandas(tmp_path: Path, sample: str) -> None:
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-c", RUN, str(SAMPLES / sample), str(out), str(out / "odom.parquet")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-3:] == ["False", "DataFrame", "True"]


def test_without_pandas_leaves_an_imported_pandas_alone() -> None:
    import pandas as pd
    import pyarrow as pa

    from nanorec.outputs.arrow import without_pandas

    with without_pandas():
        assert pa.array(pd.Series([1.0, None])).null_count == 1  # pandas' NaN as null
