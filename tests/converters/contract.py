"""The converter contract, as tests every registered format inherits.

A format's test module subclasses `ConverterContract`, names its converter and its sample
files (small native recordings), and gets: registration and sniffing, convert -> export
byte-identical, random access equal to sequential reading, a cut input converting what is
complete and exporting back byte for byte, garbage giving a `NanorecError`, a JSON-able
`summary()`, every CLI verb surviving cut and flipped inputs with one line and an exit
status (never a traceback), and a fuzz run (`fuzz.py`: hundreds of damaged copies, plus the
format's own hostile files, through every verb in a child process with bounded memory and
time). The fake plug-in format runs it too (`test_contract_fake.py`).
"""

from __future__ import annotations

import hashlib
import json
import random
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

import pytest

from nanorec import registry
from nanorec.archive.reader import ArchiveReader
from nanorec.cli import _register, app
from nanorec.cli.surface import COMMON, common_spellings, option_names
from nanorec.contract import (
    SNIFF_BYTES,
    Converter,
    ConvertRequest,
    ExportRequest,
    Recording,
    Viewable,
    foreign_forms,
)
from nanorec.errors import NanorecError
from nanorec.outputs.layers import check_view
from nanorec.selection import Selection
from tests.conftest import make_runner
from tests.converters import fuzz

#: Cuts tried per sample: evenly spread, plus the last bytes (a crash's usual place).
CUTS = 12
_runner = make_runner()


def _recorder(calls: list[tuple[int, int]]) -> Callable[[int, int], None]:
    """A progress callback keeping every call."""
    return lambda done, total: calls.append((done, total))


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class ConverterContract:
    """Subclass with `name` (the converter's) and a `samples` fixture."""

    name: ClassVar[str]
    #: Whether the format's recordings draw themselves in `nanorec view` (`Viewable`); a
    #: format that does not says so here, and the suite checks it is not half-made.
    viewable: ClassVar[bool] = True

    @pytest.fixture
    def samples(self) -> list[Path]:
        raise NotImplementedError

    @pytest.fixture
    def converter(self) -> Converter:
        return registry.get(self.name)

    def fuzz_boundaries(self, data: bytes) -> list[int]:
        """Where this format's records start in `data`: the fuzz run cuts there and writes
        absurd sizes next to them (none: anywhere)."""
        return []

    def hostile_inputs(self, folder: Path) -> list[Path]:
        """Files only this format can make hostile (compression bombs, hostile definitions,
        absurd counts inside valid framing), written into `folder`."""
        return []

    def convert(self, converter: Converter, source: Path, work: Path) -> Path:
        out = work / (source.name + ".nanover.zip")
        converter.convert(source, out, ConvertRequest(overwrite=True))
        return out

    # -- registration ------------------------------------------------------------------------

    def test_registered_and_sniffs(self, converter: Converter, samples: list[Path]) -> None:
        assert isinstance(converter, Converter)
        assert converter.name == self.name and converter.suffixes and converter.title
        for sample in samples:
            head = sample.read_bytes()[:SNIFF_BYTES]
            assert converter.sniff(head), sample
            assert registry.for_native(sample).name == self.name
        for other in (b"", b"\x89PNG\r\n\x1a\n" + bytes(100), bytes(range(256)) * 4):
            assert not converter.sniff(other)

    # -- round trips -------------------------------------------------------------------------

    def test_convert_export_byte_identical(
        self, converter: Converter, samples: list[Path], tmp_path: Path
    ) -> None:
        for sample in samples:
            archive = self.convert(converter, sample, tmp_path)
            back = tmp_path / ("back-" + sample.name)
            with ArchiveReader(archive) as reader:
                assert registry.for_archive(reader) is converter
                # what resuming a batch and checking an export rely on
                source = (reader.description or {})["source"]
                assert source["name"] == sample.name and source["size"] == sample.stat().st_size
                assert source["sha256"] == _sha(sample)
                report = converter.export(reader, back)
                assert report.messages == len(reader)
            assert _sha(back) == _sha(sample), sample
            assert report.identical is True and report.sha256 == _sha(sample)

    def test_random_access_equals_sequential(
        self, converter: Converter, samples: list[Path], tmp_path: Path
    ) -> None:
        for sample in samples:
            archive = self.convert(converter, sample, tmp_path)
            with registry.open(archive) as rec:
                assert isinstance(rec, Recording) and rec.format == self.name
                sequential = list(rec.messages())
                assert [m.number for m in sequential] == list(range(len(rec)))
                times = [m.time for m in sequential]
                assert times == sorted(times) and rec.duration == pytest.approx(
                    times[-1] - times[0] if times else 0.0
                )
                order = list(range(len(rec)))
                random.Random(7).shuffle(order)
                for number in order[:50]:
                    again = rec.message(number)
                    assert (again.number, again.time, again.kind) == (
                        number,
                        sequential[number].time,
                        sequential[number].kind,
                    )
                    assert rec.reader.raw(number) == rec.reader.raw(number)
                if len(rec):
                    middle = rec.time_of(len(rec) // 2)
                    assert rec.number_at(middle) >= len(rec) // 2 - 1  # type: ignore[attr-defined]
                    picked = list(rec.messages(Selection.make(start=middle)))
                    assert all(m.time >= middle for m in picked) and picked

    def test_summary_is_json(
        self, converter: Converter, samples: list[Path], tmp_path: Path
    ) -> None:
        for sample in samples:
            with registry.open(sample) as rec:
                text = json.dumps(rec.summary(), allow_nan=False)
                assert json.loads(text)["messages"] == len(rec)

    def test_view_layers_are_well_formed(self, samples: list[Path]) -> None:
        """Each sample is `Viewable` (or declared not to be): its overview and the scenes of
        its first, middle and last messages are layers of flat numeric columns of one
        length, class indices inside their classes, bounds and follow points finite."""
        for sample in samples:
            with registry.open(sample) as rec:
                if not self.viewable:
                    assert not isinstance(rec, Viewable), sample
                    continue
                assert isinstance(rec, Viewable), sample
                check_view(rec.view_overview(), overview=True)
                for number in sorted({0, len(rec) // 2, len(rec) - 1} if len(rec) else ()):
                    check_view(rec.view_scene(number), overview=False)

    # -- damaged input -----------------------------------------------------------------------

    @pytest.mark.slow
    def test_cut_input_converts_what_is_complete(
        self, converter: Converter, samples: list[Path], tmp_path: Path
    ) -> None:
        for sample in samples:
            data = sample.read_bytes()
            cuts = sorted(
                {len(data) * k // CUTS for k in range(1, CUTS)} | {len(data) - 1, len(data) - 3}
            )
            for cut in cuts:
                source = tmp_path / f"cut-{cut}{sample.suffix}"
                source.write_bytes(data[:cut])
                out = tmp_path / f"cut-{cut}.nanover.zip"
                try:
                    report = converter.convert(source, out, ConvertRequest(overwrite=True))
                except NanorecError:
                    continue  # too little left to be this format: a clear error is right
                back = tmp_path / f"back-{cut}"
                with ArchiveReader(out) as reader:
                    assert len(reader) == report.messages
                    converter.export(reader, back, ExportRequest(overwrite=True))
                assert back.read_bytes() == data[:cut], (sample, cut)

    def test_progress_is_bytes_of_the_source(
        self, converter: Converter, samples: list[Path], tmp_path: Path
    ) -> None:
        """Every converter reports progress the same way: bytes of its source, never going
        back, the last call at the source's size, the total the core's
        (`ConvertRequest.progress_in_bytes`); a cut copy too (a walk that stops at the cut
        still ends at the size)."""
        data = samples[0].read_bytes()
        cut = tmp_path / f"cut{samples[0].suffix}"
        cut.write_bytes(data[: len(data) * 2 // 3])
        for number, sample in enumerate([*samples, cut]):
            calls: list[tuple[int, int]] = []
            request = ConvertRequest(overwrite=True, progress=_recorder(calls))
            try:
                report = converter.convert(sample, tmp_path / f"p{number}.zip", request)
            except NanorecError:
                assert sample == cut  # too little left to be this format
                continue
            size = registry.input_size(sample)
            done = [d for d, _ in calls]
            assert done and done == sorted(done), (sample, done[:20])
            assert {t for _, t in calls} == {size}, sample
            assert done[-1] == size == report.source_size, (sample, done[-1], size)

    def test_garbage_is_a_nanorec_error(self, converter: Converter, tmp_path: Path) -> None:
        for name, data in (("zeros", bytes(4096)), ("text", b"hello world\n" * 50)):
            source = tmp_path / (name + converter.suffixes[0])
            source.write_bytes(data)
            with pytest.raises(NanorecError):
                converter.convert(source, tmp_path / f"{name}.nanover.zip")

    @pytest.mark.slow
    def test_every_verb_on_damaged_input_is_one_line(
        self, samples: list[Path], tmp_path: Path
    ) -> None:
        """Cut and byte-flipped copies through each verb: exit 0, 1 or 2, never a traceback."""
        _register()
        sample = samples[0]
        data = sample.read_bytes()
        rng = random.Random(11)
        variants = {"whole": data, "cut": data[: len(data) * 2 // 3]}
        flipped = bytearray(data)
        for _ in range(8):
            flipped[rng.randrange(len(flipped))] ^= 0xFF
        variants["flipped"] = bytes(flipped)
        for label, content in variants.items():
            source = tmp_path / f"{label}{sample.suffix}"
            source.write_bytes(content)
            out = tmp_path / f"{label}.out"
            for args in (
                ["info", str(source), "--json"],
                ["cat", str(source)],
                ["play", str(source), "--immediate"],
                ["verify", str(source)],
                ["convert", str(source), "-o", str(out) + ".zip", "--force"],
                ["export", str(source), "-o", str(out), "--force"],
                ["roundtrip", str(source)],
            ):
                result = _runner.invoke(app, args)
                assert isinstance(result.exception, SystemExit | None), (
                    label,
                    args,
                    result.exception,
                )
                assert result.exit_code in (0, 1, 2), (label, args, result.exit_code)
                if result.exit_code == 2:
                    assert result.stderr.startswith("nanorec: "), (label, args, result.stderr)

    def test_side_members_damaged(
        self, converter: Converter, samples: list[Path], tmp_path: Path
    ) -> None:
        """Each side member of the smallest sample's archive cut short or garbled: verify
        names it, every verb ends with exit 0 or 2 and one line (`side_members.py`)."""
        from tests.converters.side_members import check_side_members

        sample = min(samples, key=lambda p: p.stat().st_size)
        failures = check_side_members(self.convert(converter, sample, tmp_path), tmp_path)
        assert not failures, f"{len(failures)} failures:\n" + "\n".join(failures)

    # -- fuzz ---------------------------------------------------------------------------------

    @pytest.mark.slow
    def test_fuzz_every_verb(
        self, converter: Converter, samples: list[Path], tmp_path: Path
    ) -> None:
        """Damaged copies of the smallest sample and the format's hostile files: every verb
        ends with exit 0/1/2 and one line, within bounded time and memory (`fuzz.py`)."""
        sample = min(samples, key=lambda p: p.stat().st_size)
        data = sample.read_bytes()
        cases = tmp_path / "cases"
        cases.mkdir()
        named: dict[str, str] = {}
        suffix = max((s for s in converter.suffixes if sample.name.endswith(s)), key=len)
        seed = zlib.crc32(f"{self.name}/{sample.name}".encode())
        for number, (label, content) in enumerate(
            fuzz.mutants(data, self.fuzz_boundaries(data), seed)
        ):
            path = cases / f"{number:04d}{suffix}"
            path.write_bytes(content)
            named[path.name] = label
        hostile = tmp_path / "hostile"
        hostile.mkdir()
        files = sorted(cases.iterdir()) + self.hostile_inputs(hostile)
        failures = fuzz.run(files, tmp_path)
        described = [
            f"{line} [{named.get(line.split(':', 1)[0], 'hostile')}, seed {seed}]"
            for line in failures
        ]
        assert not failures, f"{len(failures)} failures:\n" + "\n".join(described[:30])

    # -- one surface ---------------------------------------------------------------------------

    def test_format_commands_take_the_common_options(self, converter: Converter) -> None:
        """The format's verbs are the core's (`nanorec.cli.hooks`): its group's command of a
        verb (`nanorec rosbag info`) takes the verb's common options, under the same
        spellings, and its own options are declared (and spelled) as the core builds them."""
        from nanorec.cli import _format_group
        from nanorec.cli.dispatch import flattened, hooked_verbs, options_of

        _register()
        for verb in hooked_verbs(self.name):
            options_of(verb, self.name)  # declared, importable
            assert all(self.name in entry.owners for entry in flattened(verb, self.name))
        group = _format_group(self.name)
        for verb in COMMON:
            command = getattr(group, "commands", {}).get(verb)
            if command is not None:
                missing = common_spellings(verb) - option_names(command)
                assert not missing, f"{self.name} {verb} lacks {sorted(missing)}"
                assert getattr(command, "nanorec_pinned", None) == self.name, verb

    @pytest.mark.slow
    def test_every_listed_option_works(self, samples: list[Path], tmp_path: Path) -> None:
        """Every option a verb's `--help` lists is taken with one input of this format (and
        with two where the verb takes many): answered by the verb, never "No such option"."""
        check_every_option(min(samples, key=lambda p: p.stat().st_size), tmp_path)

    @pytest.mark.slow
    def test_common_options_mean_the_same(self, samples: list[Path], tmp_path: Path) -> None:
        """The same command lines give the same kind of answer on every format."""
        check_common_options(min(samples, key=lambda p: p.stat().st_size), tmp_path)


#: Options left out (a value of each is made up: the verb may refuse it, it must parse and
#: reach the verb): a terminal (`--pause`), a pace the check does not wait for.
_SKIPPED = {"--help", "-h", "--pause", "--start-paused", "--rate", "--loop", "--clock", "--delay"}


def check_every_option(sample: Path, work: Path) -> None:
    """Each option of each verb's command, once, on `sample` (and for convert on two copies):
    exit 0, 1 or 2, one line when 2, never a usage error from the parser."""
    from nanorec.cli import _verb_command

    _register()
    many = work / "many"
    many.mkdir()
    copies = [many / ("a-" + sample.name), many / ("b-" + sample.name)]
    for copy in copies:
        (copy.symlink_to(sample.resolve(), target_is_directory=sample.is_dir()))
    for verb in ("info", "cat", "play", "plot", "export", "convert", "verify"):
        command = _verb_command(verb)
        for param in command.params:
            spelling = param.opts[0]
            if param.param_type_name != "option" or spelling in _SKIPPED:
                continue
            flag = getattr(param, "is_flag", False) or getattr(param, "count", False)
            value = None if flag else "1"  # a number, a name, a path: it parses as each
            if param.name in ("output",):
                continue  # given below
            lines = [[sample]] + ([copies] if verb == "convert" else [])
            for inputs in lines:
                out = work / f"{verb}-{param.name}-{len(inputs)}"
                args: list[object] = [verb, *inputs, spelling, *([value] if value else [])]
                if verb in ("plot", "export", "convert"):
                    args += ["-o", out.with_suffix(".png") if verb == "plot" else out]
                if verb in ("cat", "play", "plot", "export"):
                    args += ["--messages", "0:2"] if spelling not in _RANGES else []
                if verb == "play":
                    args.append("--immediate")
                result = _runner.invoke(app, [str(a) for a in args])
                err = result.stderr
                assert isinstance(result.exception, SystemExit | None), (args, result.exception)
                assert "No such option" not in err and "Usage:" not in err, (args, err)
                assert result.exit_code in (0, 1, 2), (args, result.exit_code, err)
                if result.exit_code == 2:
                    assert err.startswith("nanorec: ") and err.count("\n") == 1, (args, err)


_RANGES = {"--messages", "--start", "-s", "--end", "--duration", "-u", "--start-offset"}


def check_common_options(sample: Path, work: Path) -> None:
    """A message range, an empty selection (exit 2, one line naming the option), an unknown
    --format: the same answers from `sample`, whatever its format (an archive too)."""
    _register()

    def run(*args: object) -> tuple[int, str, str]:
        result = _runner.invoke(app, [str(a) for a in args])
        assert isinstance(result.exception, SystemExit | None), (args, result.exception)
        return result.exit_code, result.stdout, result.stderr

    def refused(*args: object, says: str = "") -> None:
        code, _, err = run(*args)
        assert code == 2 and err.startswith("nanorec: ") and err.count("\n") == 1, (args, err)
        assert says in err, (args, err)

    with registry.open(sample) as rec:
        count, kinds = len(rec), rec.table_kinds()
    wanted = min(2, count)
    code, out, err = run("cat", sample, "--messages", "0:2")
    assert code == 0 and len(out.splitlines()) == wanted, (out[:500], err)
    assert all(isinstance(json.loads(line), dict) for line in out.splitlines())
    code, out, err = run("play", sample, "--immediate", "--messages", "0:2")
    assert code == 0 and len(out.splitlines()) == wanted, (out[:500], err)
    assert run("info", sample, "--json")[0] == 0
    if kinds:
        code, out, err = run("cat", sample, "--type", kinds[0], "--messages", "0:50")
        assert code in (0, 2) and (code == 0 or "selects no" in err), err
    far = "--start", "1000000"
    refused("cat", sample, *far, says="--start 1000000 selects no")
    refused("play", sample, "--immediate", *far, says="--start 1000000 selects no")
    refused("cat", sample, "--messages", "5:2", says="--messages 5:2 selects no")
    refused("cat", sample, "-F", "bogus", says="--format")
    outputs = work / "outputs"
    outputs.mkdir()
    out_file = outputs / "out"
    refused("export", sample, "-o", out_file, "-F", "bogus", says="--format")
    refused("export", sample, "-o", out_file, "--storage", "bogus", says="--storage")
    refused("export", sample, "-o", out_file, *far, says="--start 1000000 selects no")
    refused("plot", sample, "-o", outputs / "p.png", *far, says="--start 1000000 selects no")
    foreign = sorted({f for c in registry.converters().values() for f in foreign_forms(c)})
    for form in foreign:  # a ROS bag from any recording: the same rules
        refused("export", sample, "-o", outputs / form, "-F", form, *far, says="selects no")
    assert not list(outputs.iterdir())  # refused: nothing written, not even a partial
    for form in foreign:
        code, _, err = run("export", sample, "-o", outputs / form, "-F", form)
        assert code == 0 or (code == 2 and err.count("\n") == 1), (form, err)
        assert (outputs / form).exists() == (code == 0), form
    code, _, err = run("export", sample, "-o", out_file, "--messages", "0:2")
    assert code == 0, err
    with registry.open(out_file) as cut:
        assert 1 <= len(cut) <= 2 or cut.format == "pbstream"  # a stream keeps its header
