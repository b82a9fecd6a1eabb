"""Damaged side members, for every format (the contract suite's `test_side_members_damaged`).

A format's side members (what it adds beside `messages.msgpack` and `index.msgpack`: ROS 2's
`ros2-time.bin`, a bag's kept bytes, CARLA's world tables, a pbstream's tail) are input too:
a copy of an archive with one of them cut short, or garbled when it is a zlib stream, must
fail `verify` naming that member, and every verb must end with exit 0 or 2 and one line
(issue 35: a ROS 2 archive with a short `ros2-time.bin` once passed `verify` and made `cat`
print a traceback). The zip itself stays whole, CRCs right: only the format can tell."""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from pathlib import Path

from nanorec.cli import _register, app
from tests.conftest import make_runner

#: Members that are the archive's own (the core checks them), not a format's.
CORE_MEMBERS = frozenset({"messages.msgpack", "index.msgpack"})


def side_members(archive: Path) -> dict[str, bytes]:
    """The non-empty members of `archive` that its format added."""
    with zipfile.ZipFile(archive) as zipped:
        return {
            info.filename: zipped.read(info)
            for info in zipped.infolist()
            if info.filename not in CORE_MEMBERS
            and not info.filename.startswith("nanorec")
            and info.file_size
        }


def damages(data: bytes) -> Iterator[tuple[str, bytes]]:
    """A member's damaged versions: cut to half (or one byte short when that is a whole
    number of 8-byte values), and garbled in its middle when it is a zlib stream (whose
    checksum then fails)."""
    half = len(data) // 2
    yield "short", data[:half] if half % 8 or not half else data[: len(data) - 1]
    if data[:1] == b"\x78" and len(data) > 8:
        garbled = bytearray(data)
        for i in range(len(data) // 3, len(data) // 3 + max(2, len(data) // 8)):
            garbled[i] ^= 0x5A
        yield "garbled", bytes(garbled)


def with_member(archive: Path, out: Path, name: str, data: bytes) -> Path:
    """A copy of `archive` with member `name`'s bytes replaced by `data`."""
    with zipfile.ZipFile(archive) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            target.writestr(info, data if info.filename == name else source.read(info))
    return out


def check_side_members(archive: Path, work: Path) -> list[str]:
    """Every damaged copy of every side member of `archive` through verify, info, cat and
    export; the failures, one line each (none when the format holds)."""
    _register()
    runner = make_runner()
    failures = []
    for name, data in side_members(archive).items():
        for label, content in damages(data):
            bad = with_member(archive, work / f"bad-{label}-{name}.zip", name, content)
            case = f"{name} {label}"
            result = runner.invoke(app, ["verify", str(bad)])
            said = result.stdout + result.stderr
            if result.exit_code != 1 or name not in said:
                failures.append(f"{case}: verify exit {result.exit_code}: {said.strip()!r}")
            for verb in (["info"], ["cat"], ["export", "-o", str(work / f"back-{label}")]):
                args = [verb[0], str(bad), *verb[1:], *(["--force"] if verb[0] == "export" else [])]
                result = runner.invoke(app, args)
                if not isinstance(result.exception, SystemExit | None):
                    failures.append(f"{case}: {verb[0]} raised {result.exception!r}")
                elif result.exit_code not in (0, 2):
                    failures.append(f"{case}: {verb[0]} exit {result.exit_code}")
                elif result.exit_code == 2 and (
                    not result.stderr.startswith("nanorec: ")
                    or result.stderr.count("\n") > 1
                    or name not in result.stderr
                ):
                    failures.append(f"{case}: {verb[0]} said {result.stderr!r}")
    return failures


__all__ = ["check_side_members", "damages", "side_members", "with_member"]
