"""Start-up (issue 33, item 3): a command imports what it uses and no more.

`nanorec --version` and `--help` import neither numpy nor any format's commands; a verb on a
file imports the commands of that file's format only; `import nanorec` is cheap and its
public names still all resolve. Each command runs in a child process, which prints the
modules it ended with: what one process imported is not visible from another's.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nanorec import registry
from tests.conftest import SAMPLES

SAMPLE = SAMPLES / "carla-0.9.15-crash-town05.log"
#: Runs the command as the console script does and prints the modules imported by the end.
PROBE = """
import json, sys
sys.argv = ["nanorec", *json.loads(sys.argv[1])]
from nanorec.cli import main
try:
    main()
except SystemExit:
    pass
print("\\nMODULES " + json.dumps(sorted(sys.modules)))
"""


def _command(*args: str) -> tuple[str, set[str]]:
    """The output of `nanorec ARGS` and the modules its process imported."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(list(args))],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    out, _, modules = done.stdout.rpartition("\nMODULES ")
    return out, set(json.loads(modules))


def _format_modules(modules: set[str]) -> set[str]:
    """The converter modules among `modules`, but the packages and their `about` titles."""
    return {
        m
        for m in modules
        if m.startswith("nanorec.converters.") and m.count(".") > 2 and not m.endswith(".about")
    }


def test_version_imports_no_format_and_no_numpy() -> None:
    out, modules = _command("--version")
    assert out.startswith("nanorec ")
    assert "numpy" not in modules and "nanorec.converters.carla" not in modules
    assert "importlib.metadata" not in modules  # no format is looked for
    assert not {m for m in modules if m.startswith("nanorec.converters")}
    assert "nanorec.cli.verbs" not in modules and "nanorec.registry" not in modules  # no verb


def test_help_lists_every_format_without_importing_one() -> None:
    out, modules = _command("--help")
    assert "numpy" not in modules
    assert "importlib.metadata" not in modules  # the titles are read by nanorec.plugins
    assert not _format_modules(modules), sorted(_format_modules(modules))
    commands = out.split("Commands:")[1]
    for name, converter in registry.converters().items():
        if converter.commands() is not None:
            assert f"  {name} " in commands and f"{converter.title} commands." in commands


def test_a_verb_imports_only_its_files_format(tmp_path: Path) -> None:
    archive = tmp_path / "small.nanover.zip"
    registry.get("carla").convert(SAMPLE, archive)
    out, modules = _command("info", str(archive))
    assert "Frames:" in out  # CARLA's own info ran
    clis = {m for m in _format_modules(modules) if m.endswith(".cli")}
    assert clis == {"nanorec.converters.carla.cli"}
    assert "nanorec.converters.ros.ros2.bag" not in modules  # read by ROS 2's sniff only


def test_declared_titles_are_the_converters() -> None:
    """What `--help` says of each format (declared beside its entry point) is what its
    converter says: the converters that have commands, each with its own title."""
    expected = {
        name: converter.title
        for name, converter in registry.converters().items()
        if converter.commands() is not None
    }
    assert registry.command_titles() == expected
    assert {"carla", "rosbag", "ros2", "pbstream"} <= expected.keys()


def test_the_package_imports_its_names_on_first_use() -> None:
    probe = (
        "import sys, nanorec; print('numpy' in sys.modules); "
        "import nanorec.maintain.verify, nanorec.maintain.recover; "
        "print(callable(nanorec.verify), callable(nanorec.recover)); "
        "from nanorec import *; here = set(dir()); "
        "print(sorted(n for n in nanorec.__all__ if n not in here))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, check=True
    )
    assert done.stdout.splitlines() == ["False", "True True", "[]"]


@pytest.mark.parametrize("name", ["open", "verify", "recover", "ArchiveReader", "Selection"])
def test_public_names_are_the_modules_objects(name: str) -> None:
    import importlib

    import nanorec

    home = {
        "open": "registry",
        "verify": "maintain.verify",
        "recover": "maintain.recover",
        "ArchiveReader": "archive.reader",
        "Selection": "selection",
    }
    module = importlib.import_module("nanorec." + home.get(name, name))
    assert getattr(nanorec, name) is getattr(module, name)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        nanorec.nope  # noqa: B018


def test_verbs_listed_before_they_are_built_read_as_built() -> None:
    """`--help` lists a verb from its docstring without building it: the same line as the
    built command gives."""
    from nanorec import cli

    cli._register()
    group = cli._RoutingGroup(name="nanorec", commands={})
    for verb in cli.VERBS:
        built = cli._verb_command(verb)
        assert built is not None, verb
        assert group.help_line(None, verb) == (
            built.short_help or cli.first_sentence(built.help or "")
        ), verb
    assert group.list_commands(None)[: len(cli.VERBS)] == list(cli.VERBS)
    assert not group.commands  # nothing was built to list them


#: What a format declares for the command line before it is imported (titles, verb options).
_DECLARATIONS = (".about", ".verb_options")


def test_info_of_a_carla_archive_imports_no_other_format_and_no_pydantic(
    tmp_path: Path,
) -> None:
    """Routing one command loads its file's converter only (the others' declarations, light
    modules, are read to parse the command line); typer's pydantic conversion is not built
    for a string and unset options (issue 33 item 4)."""
    archive = tmp_path / "small.nanover.zip"
    registry.get("carla").convert(SAMPLE, archive)
    out, modules = _command("info", str(archive))
    assert "Frames:" in out
    declared = {m for m in modules if m.endswith(_DECLARATIONS)}
    packages = {d.rsplit(".", k)[0] for d in declared for k in range(1, d.count("."))}
    others = {
        m
        for m in modules - declared - packages
        if m.startswith(("nanorec.converters.ros", "nanorec.converters.pbstream"))
    }
    assert not others, sorted(others)
    assert "nanorec.converters.carla.converter" in modules
    assert not {m for m in modules if m.split(".")[0] == "pydantic"}
    # what CARLA's info prints needs its own query only (info and the modules it was split
    # into), not collisions or blocked; a local archive, no URL's threads
    queries = {m for m in modules if m.startswith("nanorec.converters.carla.query.")}
    own = ("base", "info", "info_physics", "options", "framing")
    assert queries == {f"nanorec.converters.carla.query.{m}" for m in own}
    assert "concurrent.futures" not in modules


def test_view_with_its_default_port_imports_no_pydantic(tmp_path: Path) -> None:
    """An option left unset whose default is of its plain type (`view`'s port: 0, an int)
    is passed through as a string is: pydantic and its schemas (~0.15 s CPU, of a first
    paint that must come within 1 s) are not built for it."""
    archive = tmp_path / "small.nanover.zip"
    registry.get("carla").convert(SAMPLE, archive)
    served = "import nanorec.view.server as s\ns.serve = lambda recording, **options: None\n"
    done = subprocess.run(
        [sys.executable, "-c", served + PROBE, json.dumps(["view", str(archive), "--no-browser"])],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    modules = set(json.loads(done.stdout.rpartition("\nMODULES ")[2]))
    assert "nanorec.view.server" in modules
    assert not {m for m in modules if m.split(".")[0] == "pydantic"}
    # OpenSSL's hmac, for a token os.urandom gives as well (numpy < 2 imports it itself)
    assert "secrets" not in modules or _imported_by_numpy("secrets")


def _imported_by_numpy(module: str) -> bool:
    """Whether `import numpy` alone brings `module` in (numpy 1.x imports numpy.random)."""
    probe = f"import sys, numpy; print({module!r} in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return done.stdout.strip() == "True"


def test_values_other_than_strings_still_convert_as_typer_says(tmp_path: Path) -> None:
    """A number given to a verb is converted (and refused) by the installed typer's own
    conversion: only strings and unset options skip it."""
    archive = tmp_path / "small.nanover.zip"
    registry.get("carla").convert(SAMPLE, archive)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(["cat", str(archive), "--start", "soon"])],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.stderr.startswith("nanorec: Invalid value for '--start'"), done.stderr
    out, _ = _command("cat", str(archive), "--start", "0.5", "--end", "0.6")
    assert out.strip()


def test_routing_a_verb_builds_that_verb_only(tmp_path: Path) -> None:
    """Finding whether the file's format has a command of its own by the verb's name reads
    its typer app: its group (every verb it hooks, each built with every format's options)
    is not built for `nanorec info FILE`."""
    archive = tmp_path / "small.nanover.zip"
    registry.get("carla").convert(SAMPLE, archive)
    probe = (
        "import sys\n"
        "from nanorec import cli\n"
        "built = []\n"
        "real = cli._verb_command\n"
        "def counted(name, pinned=None):\n"
        "    built.append((name, pinned))\n"
        "    return real(name, pinned)\n"
        "cli._verb_command = counted\n"
        f"try:\n    cli.main(['info', {str(archive)!r}])\nexcept SystemExit:\n    pass\n"
        "print(built)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, check=True
    )
    assert done.stdout.splitlines()[-1] == "[('info', None)]"
