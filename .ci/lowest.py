"""Print the lowest versions pyproject.toml allows for the core dependencies, as pins
(`msgpack==1.0.0`...), for the lowest-versions run of .ci/run."""

import re
from pathlib import Path

text = Path(__file__).parents[1].joinpath("pyproject.toml").read_text()
block = re.search(r"^dependencies = \[(.*?)^\]", text, re.S | re.M)
if block is None:
    raise SystemExit("pyproject.toml has no [project] dependencies list")
for requirement in re.findall(r'"([^"]+)"', block[1]):
    match = re.fullmatch(r"([A-Za-z0-9_.-]+)>=([0-9][0-9A-Za-z.]*)", requirement.strip())
    if match is None:
        raise SystemExit(f"cannot pin {requirement!r}: write core floors as NAME>=VERSION")
    print(f"{match[1]}=={match[2]}")
