"""The 2026 Weather packet (id 24): decoded, seeked, printed, tabulated and written back.

No real recording with a Weather packet exists yet in our data (../shared/realdata holds
CARLA 0.9.6-0.9.15 files): every file here is written by our `RecordingWriter` in the layout
of CARLA's sources, and every expectation is worked out by hand from those sources (and
`struct`), not from our reader:

- `CarlaRecorderWeather.cpp` (carla-simulator/carla @73a5865, ue4-dev 2026; the UE5 port
  @4b05fbf is the same): fourteen float32 per record, `Total = 2 + n * sizeof(...)`, the
  packet skipped when it has no record;
- `CarlaRecorder.cpp` of the 2026 line (as merged in xiao-ma-gua/hutb @66fdd8c and ported in
  louiszengCN/CarlaAir @440c2e0): `Weathers.Write(File)` right after `Bikers.Write(File)`,
  and `#define RECORDER_VERSION (2)` for the header version;
- `CarlaRecorderQuery.cpp` of the same merge for the text (quoted where it is checked).
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nanorec.cli import _register, app
from nanorec.converters.carla.clip import export_clip
from nanorec.converters.carla.codec import decode
from nanorec.converters.carla.convert import convert, export
from nanorec.converters.carla.detect import detect
from nanorec.converters.carla.ids import Engine, Kind, family
from nanorec.converters.carla.query import file_info
from nanorec.converters.carla.recording import CarlaRecording
from nanorec.converters.carla.records import fixed_dtype
from nanorec.converters.carla.table import iter_rows
from nanorec.converters.carla.weather import WEATHER_FIELDS, Weather
from nanorec.converters.carla.writer import RecordingWriter
from nanorec.errors import FormatError, UnsupportedError
from tests.conftest import make_runner

# carla.WeatherParameters' attribute names, in the order CarlaRecorderWeather::Write writes
# them (Cloudiness ... DustStorm).
CARLA_NAMES = (
    "cloudiness",
    "precipitation",
    "precipitation_deposits",
    "wind_intensity",
    "sun_azimuth_angle",
    "sun_altitude_angle",
    "fog_density",
    "fog_distance",
    "fog_falloff",
    "wetness",
    "scattering_intensity",
    "mie_scattering_scale",
    "rayleigh_scattering_scale",
    "dust_storm",
)


def named(*values: float) -> dict[str, float]:
    return dict(zip(CARLA_NAMES, values, strict=True))


NOON = named(10, 0, 0, 5, 45, 70, 2, 0.75, 0.1, 0, 1, 0.03, 0.0331, 0)
STORM = named(90, 80, 60, 100, 300, -20, 40, 3, 1, 100, 1, 0.03, 0.0331, 0)
ODD = named(123456.7, 1e-5, -0.0, 1234567, 359.5, -90, 0, 0, 0, 0, 0, 0, 0, 100)
DATE = 1_700_000_000  # 11/14/23 22:13:20 UTC
WEATHER_ID = 24
HEADER_SIZE = 2 + 16 + 8 + 2 + len("Town03")


def f32(value: float) -> float:
    """`value` as the float32 the file holds, widened back (what CARLA prints and we read)."""
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


def write(path: Path, name: str = "ue4-dev-2026") -> Path:
    """Five frames, 0.05 s apart: Weather in frame 2 (NOON) and two records in frame 4
    (STORM, then ODD: the replayer applies both in order, so ODD holds from there on)."""
    with RecordingWriter(path, name, map_name="Town03", date=DATE) as rec:
        for frame in range(1, 6):
            with rec.frame(elapsed=0.0 if frame == 1 else None, delta=0.05):
                if frame == 2:
                    rec.weather(NOON)
                if frame == 4:
                    rec.weather(STORM)
                    rec.weather(ODD)
    return path


def weather_packets(data: bytes) -> list[tuple[int, bytes]]:
    """(header offset, body) of every id-24 packet, walking the file by hand."""
    (name_size,) = struct.unpack_from("<H", data, 26)
    offset, found = 28 + name_size, []
    while offset + 5 <= len(data):
        pid, size = struct.unpack_from("<BI", data, offset)
        if pid == WEATHER_ID:
            found.append((offset, data[offset + 5 : offset + 5 + size]))
        offset += 5 + size
    return found


@pytest.fixture
def runner() -> CliRunner:
    _register()
    return make_runner()


LINE_2026 = ["ue4-dev-2026", "ue5-dev-2026"]


@pytest.mark.parametrize("name", LINE_2026)
def test_the_bytes_follow_the_2026_sources(name: str, tmp_path: Path) -> None:
    # The record is fourteen `float` in both engines: UE5 widened FVector, not these.
    data = write(tmp_path / "w.log", name).read_bytes()
    # Header version 2 (`Info.Version = RECORDER_VERSION;`), then the magic.
    assert data[:2] == struct.pack("<H", 2) and data[4:18] == b"CARLA_RECORDER"
    found = weather_packets(data)
    assert [len(body) for _, body in found] == [2 + 56, 2 + 2 * 56]  # 2 + n * 14 floats
    first = struct.unpack("<H14f", found[0][1])
    assert first[0] == 1 and first[1:] == tuple(f32(NOON[n]) for n in CARLA_NAMES)
    # `Weathers.Write` comes right after `Bikers.Write` (id 22), before FrameEnd (id 1).
    offset = found[0][0]
    after = data[offset + 5 + len(found[0][1])]
    assert after == 1
    # Only frames with a record have the packet (`if (Weathers.size() == 0) return;`).
    assert len(found) == 2
    # Releases before the 2026 line write header version 1 and have no Weather packet.
    with (
        RecordingWriter(tmp_path / "old.log", "0.9.16", map_name="Town03") as rec,
        rec.frame(elapsed=0.0),
        pytest.raises(UnsupportedError),
    ):
        rec.weather(NOON)
    assert (tmp_path / "old.log").read_bytes()[:2] == struct.pack("<H", 1)


def test_weather_names_are_carla_python_api_names() -> None:
    assert WEATHER_FIELDS == CARLA_NAMES
    for engine in Engine:
        assert fixed_dtype(Kind.WEATHER, engine).names == CARLA_NAMES
    with pytest.raises(FormatError, match="14 values, not 13"):
        Weather.from_record(tuple(range(13)))
    # Equal to the same values built the ordinary way, and hashable like any frozen value.
    values = tuple(float(v) for v in range(14))
    assert Weather.from_record(values) == Weather(*values)
    assert hash(Weather.from_record(values)) == hash(Weather(*values))


@pytest.mark.parametrize("name", LINE_2026)
def test_world_weather_is_the_last_record_at_or_before_a_frame(name: str, tmp_path: Path) -> None:
    path = write(tmp_path / "w.log", name)
    noon = Weather(**{n: f32(v) for n, v in NOON.items()})
    odd = Weather(**{n: f32(v) for n, v in ODD.items()})
    convert(path, tmp_path / "w.zip")
    for source in (path, tmp_path / "w.zip"):
        with CarlaRecording.open(source) as rec:
            got = [rec.frame(i).weather for i in range(len(rec))]
            assert got == [None, noon, noon, odd, odd]
            # Seeking backwards gives the same answer (no state carried between seeks).
            assert rec.frame(1).weather == noon and rec.frame(0).weather is None
    weather = got[-1]
    assert isinstance(weather, Weather)
    assert weather.dust_storm == 100.0 and weather.sun_altitude_angle == -90.0
    assert weather.cloudiness == f32(123456.7) != 123456.7  # the file's float32, unrounded
    # Still a read-only mapping with the same keys as before it became a value type.
    assert list(dict(weather)) == list(CARLA_NAMES) and weather["wetness"] == 0.0
    with pytest.raises(KeyError):
        weather["Cloudiness"]


def test_info_prints_the_weather_lines_of_carla_query(tmp_path: Path) -> None:
    path = write(tmp_path / "w.log")
    # CarlaRecorderQuery.cpp (2026), in both modes:
    #   Info << " Weathers: " << Total << std::endl;
    #   Info << "  Cloudiness: " << Weather.Cloudiness
    #       << " Precipitation: " << Weather.Precipitation << ... << " DustStorm: "
    #       << Weather.DustStorm << "\n";
    # with `if (Total > 0 && !bFramePrinted) PrintFrame(Info);` before it, and
    #   case FrameEnd: Info << std::endl;
    # Floats print through the stream's default `%g` (six significant digits).
    noon = (
        "  Cloudiness: 10 Precipitation: 0 PrecipitationDeposits: 0 WindIntensity: 5"
        " SunAzimuthAngle: 45 SunAltitudeAngle: 70 FogDensity: 2 FogDistance: 0.75"
        " FogFalloff: 0.1 Wetness: 0 ScatteringIntensity: 1 MieScatteringScale: 0.03"
        " RayleighScatteringScale: 0.0331 DustStorm: 0\n"
    )
    storm = (
        "  Cloudiness: 90 Precipitation: 80 PrecipitationDeposits: 60 WindIntensity: 100"
        " SunAzimuthAngle: 300 SunAltitudeAngle: -20 FogDensity: 40 FogDistance: 3"
        " FogFalloff: 1 Wetness: 100 ScatteringIntensity: 1 MieScatteringScale: 0.03"
        " RayleighScatteringScale: 0.0331 DustStorm: 0\n"
    )
    # %g of 123456.7f (123456.703125), 1e-5f, -0.0f, 1234567f and 359.5f:
    odd = (
        "  Cloudiness: 123457 Precipitation: 1e-05 PrecipitationDeposits: -0"
        " WindIntensity: 1.23457e+06 SunAzimuthAngle: 359.5 SunAltitudeAngle: -90"
        " FogDensity: 0 FogDistance: 0 FogFalloff: 0 Wetness: 0 ScatteringIntensity: 0"
        " MieScatteringScale: 0 RayleighScatteringScale: 0 DustStorm: 100\n"
    )
    head = "Version: 2\nMap: Town03\nDate: 11/14/23 22:13:20\n\n"
    expected = (
        head
        + "\n"  # frame 1: nothing but its FrameEnd
        + "Frame 2 at 0.05 seconds\n Weathers: 1\n"
        + noon
        + "\n"
        + "\n"  # frame 3
        + "Frame 4 at 0.15 seconds\n Weathers: 2\n"
        + storm
        + odd
        + "\n"
        + "\n"  # frame 5
        + "\n"  # the last FrameEnd read again when the stream fails at EOF
        + "\nFrames: 5\nDuration: 0.2 seconds\n"
    )
    assert file_info(path) == expected
    # show_all: every section header of the frame, Weathers after the light animations.
    frame2 = (
        "Frame 2 at 0.05 seconds\n Vehicle door animations: 0\n Positions: 0\n"
        " State traffic lights: 0\n Vehicle animations: 0\n Walker animations: 0\n"
        " Vehicle light animations: 0\n Weathers: 1\n" + noon + "\n"
    )
    assert frame2 in file_info(path, show_all=True)


def test_cat_weather_rows(tmp_path: Path, runner: CliRunner) -> None:
    path = write(tmp_path / "w.log")
    with CarlaRecording.open(path) as rec:
        rows = list(iter_rows(rec, "weather"))
    assert [(r["frame"], r["cloudiness"]) for r in rows] == [
        (2, 10.0),
        (4, 90.0),
        (4, f32(123456.7)),
    ]
    assert rows[0]["time"] == pytest.approx(0.05) and rows[2]["dust_storm"] == 100.0
    assert list(rows[0])[3:] == list(CARLA_NAMES)
    result = runner.invoke(app, ["cat", str(path), "--type", "weather", "--format", "csv"])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == ",".join(("frame", "index", "time", *CARLA_NAMES))
    assert len(lines) == 4 and lines[1].startswith("2,1,")


def test_a_weather_read_writes_back_the_same_record(tmp_path: Path) -> None:
    source = write(tmp_path / "w.log")
    with CarlaRecording.open(source) as rec:
        odd = rec.frame(3).weather
    assert odd is not None
    with (
        RecordingWriter(tmp_path / "again.log", "ue4-dev-2026", map_name="Town03") as again,
        again.frame(elapsed=0.0),
    ):
        again.weather(odd)  # a Weather value is a mapping of its fields
    written = weather_packets((tmp_path / "again.log").read_bytes())[0][1]
    assert written[2:] == weather_packets(source.read_bytes())[1][1][2 + 56 :]


@pytest.mark.parametrize("name", LINE_2026)
def test_convert_and_export_are_byte_exact(name: str, tmp_path: Path) -> None:
    path = write(tmp_path / "w.log", name)
    archive = tmp_path / "w.zip"
    report = convert(path, archive)
    assert report.details["raw_packets"] == {} and report.messages == 5
    back = tmp_path / "back.log"
    assert export(archive, back).identical is True
    assert back.read_bytes() == path.read_bytes()


def test_a_clip_starts_with_the_weather_in_force(tmp_path: Path) -> None:
    path = write(tmp_path / "w.log")
    with CarlaRecording.open(path) as rec:
        report = export_clip(rec, tmp_path / "clip.log", start=2, stop=5)
        noon, odd = rec.frame(2).weather, rec.frame(3).weather
    assert report.messages == 3
    data = (tmp_path / "clip.log").read_bytes()
    assert data[:2] == struct.pack("<H", 2)  # still a 2026 file
    # Frame 1 of the clip carries NOON again (its replay must start in that weather).
    first = struct.unpack("<H14f", weather_packets(data)[0][1])
    assert first[0] == 1 and first[1:] == tuple(f32(NOON[n]) for n in CARLA_NAMES)
    with CarlaRecording.open(tmp_path / "clip.log") as clip:
        assert [clip.frame(i).weather for i in range(3)] == [noon, odd, odd]


def test_a_crashed_server_loses_the_weather_of_its_last_frame(tmp_path: Path) -> None:
    # CARLA flushes at the back-patches (spec §9); Weather's size is computed, not patched,
    # and comes after the last back-patched packet (AnimVehicleWheels): a crash in a frame
    # that sets the weather leaves neither that frame nor its Weather in the file.
    path = tmp_path / "crash.log"
    rec = RecordingWriter(path, "ue4-dev-2026", map_name="Town03", date=DATE)
    with rec.frame(elapsed=0.0):
        rec.weather(NOON)
    rec.begin_frame(delta=0.05)
    rec.weather(STORM)
    rec.simulate_crash()
    data = path.read_bytes()
    assert len(weather_packets(data)) == 1
    report = convert(path, tmp_path / "crash.zip")
    assert report.cut is not None and report.messages == 1
    assert export(tmp_path / "crash.zip", tmp_path / "back.log").identical is True
    assert (tmp_path / "back.log").read_bytes() == data
    with CarlaRecording.open(tmp_path / "crash.zip") as got:
        assert got.frame(0).weather == Weather(**{n: f32(v) for n, v in NOON.items()})


def test_header_version_tells_the_2026_line_apart(tmp_path: Path) -> None:
    # Without any Weather record, only the header says "2026".
    path = tmp_path / "quiet.log"
    with RecordingWriter(path, "ue4-dev-2026", map_name="Town03", date=DATE) as rec:
        for _ in range(3):
            with rec.frame(delta=0.05):
                pass
    data = path.read_bytes()
    found = detect(data)
    assert found.family.name == "ue4-dev-2026"
    assert "header version 2, the 2026 line's" in found.reasons
    assert detect(struct.pack("<H", 1) + data[2:]).family.name == "0.9.16"
    # One Weather packet outweighs a version 1 header (an id 0.9.16 does not know).
    weather = write(tmp_path / "w.log").read_bytes()
    assert detect(struct.pack("<H", 1) + weather[2:]).family.name == "ue4-dev-2026"
    assert family("ue4-dev-2026").header_version == 2
    assert family("0.9.16").header_version == 1


def _frame4_weather(data: bytes) -> tuple[int, bytes]:
    return weather_packets(data)[1]


def test_garbled_weather_packet_is_a_format_error_naming_its_offset(
    tmp_path: Path, runner: CliRunner
) -> None:
    data = write(tmp_path / "w.log").read_bytes()
    offset, body = _frame4_weather(data)
    # The count says 3 records where the size holds 2: `2 + 3 * 56` != size.
    garbled = bytearray(data)
    struct.pack_into("<H", garbled, offset + 5, 3)
    bad = tmp_path / "bad.log"
    bad.write_bytes(bytes(garbled))
    with pytest.raises(FormatError, match=rf"\b{offset}\b") as caught:
        decode(bytes(garbled), family="ue4-dev-2026", strict=True)
    assert "24" in str(caught.value)
    result = runner.invoke(app, ["carla", "roundtrip", str(bad), "--strict"])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert result.stderr.startswith("nanorec: ")
    assert f"packet id 24 (weather) at byte {offset}: count 3 needs" in result.stderr
    # Without `strict` the packet is carried raw and written back verbatim.
    report = convert(bad, tmp_path / "bad.zip", family="ue4-dev-2026")
    assert report.details["raw_packets"] == {str(WEATHER_ID): 1}
    assert export(tmp_path / "bad.zip", tmp_path / "back.log").identical is True
    assert (tmp_path / "back.log").read_bytes() == bytes(garbled)
    with CarlaRecording.open(tmp_path / "bad.zip") as rec:
        # Frame 4's records cannot be trusted: the weather stays the last good one.
        assert rec.frame(3).weather == rec.frame(1).weather is not None
    # Detected, not forced: the header's version 2 still says "2026" (no older release
    # writes it), so the one misfit does not turn the file into a 0.9.16 one with two
    # packets of an unknown id.
    auto = convert(bad, tmp_path / "auto.zip")
    assert auto.details == {"family": "ue4-dev-2026", "raw_packets": {str(WEATHER_ID): 1}}
    assert len(body) == 2 + 2 * 56


def test_cut_inside_a_weather_packet_keeps_the_complete_frames(
    tmp_path: Path, runner: CliRunner
) -> None:
    data = write(tmp_path / "w.log").read_bytes()
    offset, body = _frame4_weather(data)
    cut = data[: offset + 5 + len(body) // 2]  # a crash in the middle of the record bytes
    path = tmp_path / "cut.log"
    path.write_bytes(cut)
    report = convert(path, tmp_path / "cut.zip")
    assert report.cut is not None and report.messages == 3
    assert export(tmp_path / "cut.zip", tmp_path / "back.log").identical is True
    assert (tmp_path / "back.log").read_bytes() == cut
    with CarlaRecording.open(tmp_path / "cut.zip") as rec:
        assert len(rec) == 3 and rec.frame(2).weather == rec.frame(1).weather
    result = runner.invoke(app, ["info", str(path)])
    assert result.exit_code == 0, result.stderr
