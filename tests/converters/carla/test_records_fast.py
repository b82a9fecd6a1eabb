"""The fast VAR parser (`records_fast.parse_var_fast`) and the EventAdd rows of the world
tables (`world_tables._spawn_rows`) give what the reference paths give: the same records or
the same error on every VAR packet of every real file and sample, read with each engine,
whole and broken one way at a time; the same spawn bytes from every EventAdd map."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nanorec.converters.carla import detect
from nanorec.converters.carla.header import Header
from nanorec.converters.carla.ids import FAMILIES, SHAPES, Engine, Kind, Shape
from nanorec.converters.carla.message import var_to_maps
from nanorec.converters.carla.records import ActorAdd, parse_var_body
from nanorec.converters.carla.records_fast import parse_var_fast, parse_var_head, var_fits
from nanorec.converters.carla.walk import walk
from nanorec.converters.carla.world_tables import _spawn_rows
from nanorec.errors import NanorecError
from tests.conftest import SAMPLES, carla_realdata

SAMPLE_FILES = sorted(SAMPLES.glob("carla-*.log"))
PER_ID = 60  # packets of each id compared per file (the first ones: frame 1's EventAdd too)


def _value(value: Any) -> Any:
    """A record as plain comparable values (arrays by dtype, shape and bytes)."""
    if isinstance(value, np.ndarray | np.void):
        return (value.dtype.descr, getattr(value, "shape", ()), value.tobytes())
    if isinstance(value, tuple | list):
        return tuple(_value(item) for item in value)
    fields = getattr(value, "__dataclass_fields__", None)
    if fields is not None:
        return (type(value).__name__, *((name, _value(getattr(value, name))) for name in fields))
    return (type(value).__name__, value)


def _outcome(parse: Any, kind: Kind, body: bytes, engine: Engine, base: int) -> Any:
    try:
        return _value(parse(kind, body, engine, base=base))
    except NanorecError as error:
        return (type(error).__name__, str(error), error.offset)


def _var_bodies(path: Path) -> list[tuple[Kind, bytes, int]]:
    buf = path.read_bytes()
    packets = walk(buf, Header.parse(buf).size)
    bodies = []
    for pid in sorted({int(pid) for pid in np.unique(packets.ids)}):
        kinds = {family.kind_of(pid) for family in FAMILIES.values()}
        for kind in sorted((k for k in kinds if k and SHAPES[k] is Shape.VAR), key=str):
            mask = packets.ids == pid
            for offset, size in zip(
                packets.offsets[mask][:PER_ID].tolist(),
                packets.sizes[mask][:PER_ID].tolist(),
                strict=True,
            ):
                bodies.append((kind, buf[offset + 5 : offset + 5 + size], offset + 5))
    return bodies


def _check_file(path: Path) -> int:
    compared = 0
    for kind, body, base in _var_bodies(path):
        for broken in (body, body[:-1], body + b"\0", body[: len(body) // 2], body[:1]):
            for engine in Engine:
                fast = _outcome(parse_var_fast, kind, broken, engine, base)
                assert fast == _outcome(parse_var_body, kind, broken, engine, base), (
                    path.name,
                    kind,
                    base,
                    engine,
                    len(broken),
                )
                compared += 1
    return compared


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.name)
def test_fast_parse_matches_the_reference_on_samples(path: Path) -> None:
    assert _check_file(path)


def test_fast_parse_matches_the_reference_on_real_files() -> None:
    assert sum(_check_file(path) for path in carla_realdata())


def test_fast_parse_refuses_what_the_reference_refuses() -> None:
    add = ActorAdd(7, 1, np.zeros(3, "<f4"), np.ones(3, "<f4"), 3, "vehicle.audi.tt", ()).serialize(
        Engine.UE4
    )
    body = b"\x01\x00" + add
    assert _value(parse_var_fast(Kind.EVENT_ADD, body, Engine.UE4)) == _value(
        parse_var_body(Kind.EVENT_ADD, body, Engine.UE4)
    )
    # a blueprint length past the body (a slice would silently cut the name short), then an
    # attribute count past it
    for lying in (body[:35] + b"\xc8\x00" + body[37:], body[:-2] + b"\xff\xff"):
        _same_error(lying)


def _same_error(lying: bytes) -> None:
    with pytest.raises(NanorecError) as fast:
        parse_var_fast(Kind.EVENT_ADD, lying, Engine.UE4, base=100)
    with pytest.raises(NanorecError) as reference:
        parse_var_body(Kind.EVENT_ADD, lying, Engine.UE4, base=100)
    assert (type(fast.value), str(fast.value)) == (type(reference.value), str(reference.value))


def _spawn_reference(content: Any, engine: Engine) -> list[tuple[int, str, bytes]]:
    from nanorec.converters.carla.message import maps_to_var

    rows = []
    for add in maps_to_var(Kind.EVENT_ADD, content, engine):
        assert isinstance(add, ActorAdd)
        rows.append((add.id, add.blueprint, add.serialize(engine)))
    return rows


def _check_spawns(path: Path) -> int:
    compared = 0
    adds = [(kind, body, base) for kind, body, base in _var_bodies(path) if kind is Kind.EVENT_ADD]
    for engine in Engine:
        for kind, body, base in adds:
            try:
                records = parse_var_body(kind, body, engine, base=base)
            except NanorecError:
                continue
            content = var_to_maps(kind, records)
            assert _spawn_rows(content, engine) == _spawn_reference(content, engine)
            compared += 1
    return compared


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.name)
def test_spawn_rows_are_the_serialized_records_on_samples(path: Path) -> None:
    assert _check_spawns(path)


def test_spawn_rows_are_the_serialized_records_on_real_files() -> None:
    assert sum(_check_spawns(path) for path in carla_realdata())


def test_spawn_rows_leave_malformed_columns_to_maps_to_var() -> None:
    add = ActorAdd(5, 2, np.zeros(3, "<f4"), np.zeros(3, "<f4"), 9, "walker\udcff", ())
    content = var_to_maps(Kind.EVENT_ADD, [add])
    assert _spawn_rows(content, Engine.UE4) == _spawn_reference(content, Engine.UE4)
    assert _spawn_rows({**content, "uid": b"\0"}, Engine.UE4) is None
    assert _spawn_rows({**content, "type_id": [7]}, Engine.UE4) is None
    assert _spawn_rows({**content, "attributes": [[[1, "a"]]]}, Engine.UE4) is None
    assert _spawn_rows(content, Engine.UE5) is None  # vectors of the other width


def _heads(path: Path) -> int:
    """`parse_var_head` against the `Cursor` prefix parse detection falls back to."""
    from nanorec.converters.carla.records import Cursor

    compared = 0
    for kind, body, base in _var_bodies(path):
        if kind not in detect._PREFIX_PARSERS:
            continue
        for broken in (body, body[: len(body) // 2], body[:40]):
            for engine in Engine:
                head = parse_var_head(kind, broken, engine, 4)
                cur = Cursor(broken, base)
                try:
                    count = cur.u16("record count")
                    reference = _value(
                        [detect._PREFIX_PARSERS[kind](cur, engine) for _ in range(min(count, 4))]
                    )
                except NanorecError:
                    reference = None
                assert head is None or _value(head) == reference, (path.name, kind, base)
                compared += head is not None
    return compared


def test_heads_match_the_cursor_prefix() -> None:
    assert sum(_heads(path) for path in [*SAMPLE_FILES, *carla_realdata()])


def test_detection_is_the_same_without_the_fast_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    """Family and reasons on every sample and real file, as with the reference parsers."""
    files = [*SAMPLE_FILES, *carla_realdata()]
    found = {path.name: detect.detect(path.read_bytes()) for path in files}
    monkeypatch.setattr(detect, "parse_var_fast", parse_var_body)
    monkeypatch.setattr(detect, "parse_var_head", lambda *args: None)
    monkeypatch.setattr(detect, "var_fits", lambda *args: None)
    for path in files:
        reference = detect.detect(path.read_bytes())
        fast = found[path.name]
        assert (fast.family, fast.reasons) == (reference.family, reference.reasons), path.name


def _fits(path: Path) -> int:
    """`var_fits` against whether the reference parse (whole, or its first 3 records)
    succeeds."""
    compared = 0
    for kind, body, base in _var_bodies(path):
        for broken in (body, body[:-1], body + b"\0", body[: len(body) // 2], body[:5]):
            for engine in Engine:
                for limit in (None, 3):
                    fits = var_fits(kind, broken, engine, limit)
                    if fits is None:
                        continue
                    if limit is None:
                        parsed = _parses(kind, broken, engine)
                    else:
                        parsed = parse_var_head(kind, broken, engine, limit) is not None
                    assert fits == parsed, (path.name, kind, base, engine, limit, len(broken))
                    compared += 1
    return compared


def _parses(kind: Kind, body: bytes, engine: Engine) -> bool:
    try:
        parse_var_body(kind, body, engine)
    except NanorecError:
        return False
    return True


def test_var_fits_is_whether_the_parse_succeeds() -> None:
    assert sum(_fits(path) for path in [*SAMPLE_FILES, *carla_realdata()])
