"""Shared builders for the container tests: message strategies and small archives."""

from __future__ import annotations

import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import msgpack
from hypothesis import strategies as st

from nanorec import ArchiveWriter

# msgpack values NanoVer can hold: str keys at every level, no NaN (equality), no ext types.
_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=12),
    st.binary(max_size=40),
)
values = st.recursive(
    _leaves,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.text(max_size=6), children, max_size=4),
    ),
    max_leaves=12,
)
top_keys = st.one_of(
    st.sampled_from(["frame", "state", "command"]),
    st.text(max_size=8).filter(lambda key: key != "nanorec.t"),
)


@st.composite
def messages(draw: st.DrawFn) -> dict[str, Any]:
    """A message map; sizes around 15/16 keys exercise the fixmap -> map16 header growth."""
    size = draw(st.one_of(st.integers(1, 4), st.integers(14, 17)))
    keys = draw(st.lists(top_keys, min_size=size, max_size=size, unique=True))
    return {key: draw(values) for key in keys}


def sample_messages(count: int) -> list[dict[str, Any]]:
    """Deterministic NanoVer-like messages: frames with byte arrays and lists, states."""
    out: list[dict[str, Any]] = []
    for i in range(count):
        if i % 3 == 2:
            out.append({"state": {"updates": {f"avatar.{i % 4}": {"x": i}}, "removals": []}})
        elif i % 3 == 1:
            out.append(
                {
                    "frame": {
                        "frame.index": i,
                        "particle.positions": bytes(range(i % 7, i % 7 + 24)),
                        "bond.orders": [1.0, 2.0, 1.0],
                    }
                }
            )
        else:
            out.append({"frame": {"frame.index": i, "system.temperature": 300.0 + i}})
    return out


def write_archive(
    path: Path,
    messages_: Sequence[Mapping[str, Any]],
    timestamps: Sequence[int] | None = None,
    *,
    flags: Sequence[int] | None = None,
    **options: Any,
) -> Path:
    """Write `messages_` with ArchiveWriter; timestamps default to 1000 * i."""
    with ArchiveWriter(path, **options) as writer:
        for i, message in enumerate(messages_):
            writer.write(
                message,
                timestamp_us=timestamps[i] if timestamps is not None else 1000 * i,
                flags=flags[i] if flags is not None else 0,
            )
    return path


def rebuild_zip(
    source: Path,
    target: Path,
    *,
    replace: Mapping[str, bytes | None] | None = None,
    order: Sequence[str] | None = None,
    compression: int = zipfile.ZIP_STORED,
) -> Path:
    """Copy `source` to a *valid* zip `target`, replacing (or dropping, with None) members."""
    replace = dict(replace or {})
    with zipfile.ZipFile(source) as archive:
        contents = {info.filename: archive.read(info) for info in archive.infolist()}
    for name, data in replace.items():
        if data is None:
            contents.pop(name, None)
        else:
            contents[name] = data
    names = list(order) if order is not None else list(contents)
    with zipfile.ZipFile(target, "w", compression=compression) as archive:
        for name in names:
            archive.writestr(name, contents[name])
    return target


def index_entries(path: Path) -> list[dict[str, Any]]:
    with zipfile.ZipFile(path) as archive:
        entries: list[dict[str, Any]] = msgpack.unpackb(archive.read("index.msgpack"))
    return entries


def block_ends(lengths: list[int], block: int, count: int, size: int) -> tuple[list[int], int, int]:
    """Where the compact layout's blocks end, by its rule written plainly, one message at a
    time (after an open block of `block` bytes and `count` messages; blocks of `size`): the
    message numbers before which a block ends, and the block left open."""
    ends = []
    for number, length in enumerate(lengths):
        if block and block + length > _limit(count, size):
            ends.append(number)
            block = count = 0
        block += length
        count += 1
        if block >= _limit(count, size):
            ends.append(number + 1)
            block = count = 0
    return ends, block, count


def _limit(count: int, size: int) -> int:
    """The size a block of `count` messages ends at: half a block while it holds 4-16."""
    return size // 2 if 4 <= count <= 16 else size
