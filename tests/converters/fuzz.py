"""The contract's fuzz run: damaged copies of a format's sample through every verb, in a child
process that cannot hang or grow without bound.

`mutants` makes the inputs from a seed: a cut at a record boundary (or a few bytes either
side), flipped bits, an absurd size or count written over a field next to a boundary, a
zeroed stretch, a record dropped or repeated. A format adds what only it can make (bombs,
hostile definitions) through the contract's `hostile_inputs` hook. `run` hands the files to
this module's `main` in a child process with its data segment capped (`RLIMIT_DATA`) and an
alarm per verb, so a memory bomb ends as a `MemoryError` and a hang as a `Hang`, both reported
as failures, never as a stuck or swapping test run. Each verb must end with exit 0, 1 or 2;
exit 2 with one `nanorec: ...` line; and never print a traceback or a raw Python warning.

`NANOREC_STRESS=1` multiplies the number of cases (thousands instead of a few hundred).
"""

from __future__ import annotations

import json
import os
import random
import re
import resource
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import FrameType

#: Cases per sample in CI, and under NANOREC_STRESS=1.
CASES = 1000 if os.environ.get("NANOREC_STRESS") == "1" else 24
#: What one verb may take on one small damaged file, in seconds, and the child's data cap.
VERB_SECONDS = 60
DATA_LIMIT = 1536 << 20

#: Values a hostile writer puts in a size or count field.
ABSURD_32 = (0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, 0x10000000, 0)
ABSURD_64 = (0xFFFFFFFFFFFFFFFF, 0x7FFFFFFFFFFFFFFF, 1 << 40)

_PYTHON_WARNING = re.compile(r"^\S+:\d+: \w*Warning: ", re.M)


def mutants(data: bytes, boundaries: Sequence[int], seed: int) -> Iterator[tuple[str, bytes]]:
    """`CASES` damaged copies of `data`, named by what was done (reproducible from `seed`)."""
    rng = random.Random(seed)
    marks = sorted({b for b in boundaries if 0 < b < len(data)}) or [
        rng.randrange(1, max(2, len(data))) for _ in range(64)
    ]
    for case in range(CASES):
        kind = case % 6
        at = rng.choice(marks)
        out = bytearray(data)
        if kind == 0:
            cut = max(0, at + rng.choice((0, 0, 0, -1, 1, -3, 3)))
            yield f"cut@{cut}", bytes(out[:cut])
        elif kind == 1:
            flips = [rng.randrange(len(out)) for _ in range(rng.choice((1, 2, 4, 8)))]
            for where in flips:
                out[where] ^= 1 << rng.randrange(8)
            yield f"flip@{','.join(map(str, flips))}", bytes(out)
        elif kind == 2:
            where = min(at + rng.choice((0, 4, 8, 12, 16, 24)), len(out))
            wide = rng.random() < 0.3
            value = rng.choice(ABSURD_64 if wide else ABSURD_32)
            field = value.to_bytes(8 if wide else 4, rng.choice(("little", "big")))
            out[where : where + len(field)] = field
            yield f"absurd@{where}={value:#x}", bytes(out[: len(data)])
        elif kind == 3:
            length = rng.choice((1, 8, 64, 512))
            out[at : at + length] = bytes(len(out[at : at + length]))
            yield f"zeros@{at}+{length}", bytes(out)
        else:
            following = [b for b in marks if b > at] or [len(data)]
            end = following[0]
            if kind == 4:
                yield f"drop@{at}:{end}", bytes(out[:at] + out[end:])
            else:
                yield f"repeat@{at}:{end}", bytes(out[:end] + out[at:end] + out[end:])


def run(files: list[Path], work: Path) -> list[str]:
    """Every verb on every file in a bounded child process; the failures, one line each."""
    listing = work / "fuzz-cases.json"
    listing.write_text(json.dumps([str(f) for f in files]))
    timeout = 120 + len(files) * 20
    result = subprocess.run(
        [sys.executable, "-m", "tests.converters.fuzz", str(listing)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=Path(__file__).resolve().parents[2],
        check=False,
    )
    if result.returncode != 0:
        return [f"the fuzz child failed ({result.returncode}): {result.stderr[-2000:]}"]
    failures: list[str] = json.loads(result.stdout)
    return failures


class Hang(BaseException):
    """A verb ran past VERB_SECONDS (a BaseException, so no handler of Exception eats it)."""


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise Hang


def _verbs(source: Path, out: Path) -> Iterator[list[str]]:
    archive = str(out) + ".nanover.zip"
    yield ["info", str(source)]
    yield ["info", str(source), "--json"]
    yield ["convert", str(source), "-o", archive, "--force"]
    target = archive if Path(archive).exists() else str(source)
    yield ["cat", target]
    yield ["play", target, "--immediate"]
    yield ["export", target, "-o", str(out) + ".native", "--force"]
    yield ["verify", target]


def _check(source: Path) -> Iterator[str]:
    from nanorec.cli import _register, app
    from tests.conftest import make_runner

    _register()
    runner = make_runner()
    for args in _verbs(source, source.with_suffix(".out")):
        signal.alarm(VERB_SECONDS)
        try:
            result = runner.invoke(app, args)
        except Hang:
            yield f"{source.name}: {args[0]} ran over {VERB_SECONDS} s"
            continue
        finally:
            signal.alarm(0)
        what = f"{source.name}: nanorec {' '.join(args[:1] + args[2:])}"
        if not isinstance(result.exception, SystemExit | None):
            yield f"{what}: {type(result.exception).__name__}: {result.exception}"
        elif result.exit_code not in (0, 1, 2):
            yield f"{what}: exit {result.exit_code}"
        elif result.exit_code == 2 and not result.stderr.startswith("nanorec: "):
            yield f"{what}: exit 2 without a `nanorec:` line: {result.stderr[:300]!r}"
        elif "Traceback" in result.stderr or _PYTHON_WARNING.search(result.stderr):
            yield f"{what}: {result.stderr[:300]!r}"


def main(listing: Path) -> None:
    resource.setrlimit(resource.RLIMIT_DATA, (DATA_LIMIT, DATA_LIMIT))
    signal.signal(signal.SIGALRM, _alarm)
    from tests.converters.fake_plugin import install

    install(listing.parent / "site")
    failures = [f for name in json.loads(listing.read_text()) for f in _check(Path(name))]
    print(json.dumps(failures))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
