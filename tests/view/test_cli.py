"""`nanorec view` as a user runs it: the URL on one line, the page and the API served from
it, Ctrl-C stops it in one line with exit 0; bad input is one `nanorec: ...` line, exit 2."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SAMPLES

STATIC = SAMPLES.parent / "nanorec" / "view" / "static"
#: The page's files (static/ is also a package: its __init__.py).
PAGE = sorted(p.name for p in STATIC.iterdir() if p.suffix != ".py" and p.is_file())
NANOREC = [sys.executable, "-c", "import sys, _nanorec_entry; sys.exit(_nanorec_entry.main())"]


def _start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*NANOREC, "view", *args, "--no-browser"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_serves_until_ctrl_c() -> None:
    """A native file (converted on the fly): the URL printed, the page and its summary
    served; SIGINT: "nanorec: stopped", exit 0, no traceback."""
    process = _start(str(SAMPLES / "ros2-robot.db3"))
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert found, line
        url = found.group(0)
        with urllib.request.urlopen(url, timeout=60) as page:
            assert b'<input type="range" id="timeline"' in page.read()
        with urllib.request.urlopen(url + "api/summary", timeout=60) as answer:
            assert json.loads(answer.read())["format"] == "ros2"
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert err == "nanorec: stopped\n"
    assert out == ""


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["nowhere.bag"], "nowhere.bag: no such file"),
        ([str(SAMPLES / "README.md")], "README.md"),
        ([str(SAMPLES / "ros2-robot.db3"), "--port", "70000"], "--port takes 0 to 65535"),
    ],
)
def test_bad_input_is_one_line(args: list[str], says: str) -> None:
    process = _start(*args)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 2, (out, err)
    assert err.startswith("nanorec: ") and err.count("\n") == 1 and says in err, err


def test_a_taken_port_is_one_line() -> None:
    """Another server on the port: one line naming the problem, exit 2."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        process = _start(str(SAMPLES / "ros2-robot.db3"), "--port", port)
        out, err = process.communicate(timeout=60)
    assert process.returncode == 2, (out, err)
    assert err.startswith("nanorec: ") and err.count("\n") == 1, err
    assert os.strerror(98) in err or "in use" in err.lower(), err


def test_help_lists_view() -> None:
    result = subprocess.run([*NANOREC, "--help"], capture_output=True, text=True, check=True)
    assert re.search(r"^\s+view\s+Scrub a recording in the browser", result.stdout, re.M)
    result = subprocess.run(
        [*NANOREC, "view", "--help"], capture_output=True, text=True, check=True
    )
    assert "--no-browser" in result.stdout and "--port" in result.stdout


def test_assets_ship_with_the_package() -> None:
    """The page's files are package data (pyproject lists each one) and read through
    importlib.resources, as an installed wheel serves them; the page weighs < 150 KB."""
    tomllib = pytest.importorskip("tomllib")

    from nanorec.view.server import ASSETS, asset, page_weight

    project = tomllib.loads((SAMPLES.parent / "pyproject.toml").read_text())
    shipped = project["tool"]["setuptools"]["package-data"]["nanorec.view.static"]
    assert sorted(shipped) == PAGE
    assert sorted({name for name, _ in ASSETS.values()}) == PAGE
    assert "nanorec.view.static" in project["tool"]["setuptools"]["packages"]
    for name, _ in ASSETS.values():
        assert asset(name)
    assert page_weight() < 150_000
    for name in ("index.html", "app.js", "style.css"):  # offline: nothing from elsewhere
        assert not re.search(rb"(src|href)=\"?(https?:)?//", asset(name)), name


def test_the_build_ships_the_page(tmp_path: Path) -> None:
    """What setuptools puts in a wheel (`build_py`, which `pip install .` runs) holds every
    static file, with no warning that one is shipped by accident."""
    script = (
        "import setuptools, sys; sys.argv[1:] = ['-q', 'build_py', '-d', sys.argv[1]]; "
        "setuptools.setup()"
    )
    result = subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning", "-c", script, str(tmp_path)],
        cwd=SAMPLES.parent,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "Package would be ignored" not in result.stderr, result.stderr
    built = tmp_path / "nanorec" / "view" / "static"
    assert sorted(p.name for p in built.iterdir() if p.suffix != ".py") == PAGE


def test_an_archive_by_url(tmp_path: Path) -> None:
    """An archive given by URL is read in place: the page's answers are the local path's."""
    pytest.importorskip("obstore")
    from nanorec import registry
    from tests.remote.servers import RangeServer
    from tests.view.conftest import Served

    archive = tmp_path / "carla.nanover.zip"
    registry.get("carla").convert(SAMPLES / "carla-0.9.15-town03.log", archive)
    with RangeServer(tmp_path).running() as store:
        process = _start(store.url("carla.nanover.zip"))
        try:
            assert process.stdout is not None
            found = re.search(r" at (http://127\.0\.0\.1:\d+/) ", process.stdout.readline())
            assert found
            remote = Served(found.group(1))
            summary = remote.ok("/api/summary")
            message = remote.ok("/api/message/7")
        finally:
            process.send_signal(signal.SIGINT)
            _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    with registry.open(archive) as recording:
        assert summary["messages"] == len(recording) and summary["format"] == "carla"
        assert message["number"] == 7 and message["time"] == recording.time_of(7)


def test_a_damaged_archive_is_one_line_after_its_url(tmp_path: Path) -> None:
    """An archive is opened while the page loads, its URL printed first: what opening it
    raises still stops the command in one `nanorec: ...` line, exit 2."""
    import zipfile

    damaged = tmp_path / "damaged.nanover.zip"
    with zipfile.ZipFile(damaged, "w") as archive:
        archive.writestr("notes.txt", "no messages here")
    process = _start(str(damaged))
    out, err = process.communicate(timeout=60)
    assert process.returncode == 2, (out, err)
    assert err.startswith("nanorec: ") and err.count("\n") == 1, err
    assert "messages.msgpack" in err, err
    assert re.match(r"viewing .* at http://127\.0\.0\.1:\d+/ ", out), out


def test_an_archive_is_opened_while_the_page_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`nanorec view ARCHIVE` hands the server the opening of the archive (done while the
    browser loads the page), a native file the recording converted before the URL."""
    from nanorec import registry
    from nanorec.cli import main
    from nanorec.view import server

    archive = tmp_path / "robot.nanover.zip"
    registry.get("ros2").convert(SAMPLES / "ros2-robot.db3", archive)
    handed: list[tuple[Any, Any]] = []

    def serve(recording: Any, **options: Any) -> None:
        opening = options.get("opening")
        handed.append((recording, None if opening is None else opening()))

    monkeypatch.setattr(server, "serve", serve)
    for source in (archive, SAMPLES / "ros2-robot.db3"):
        with pytest.raises(SystemExit) as done:
            main(["view", str(source), "--no-browser"])
        assert done.value.code == 0
    (lazy, opened), (converted, none) = handed
    assert lazy is None and opened.format == "ros2" and len(opened) == len(converted)
    assert converted.format == "ros2" and none is None


def test_an_archives_url_comes_before_the_servers_modules(tmp_path: Path) -> None:
    """The socket listens and the URL is printed before `http.server` (and the format's
    commands) are imported: the browser starts loading the page meanwhile, its connection
    waiting in the socket's backlog; then the page is served on that socket."""
    from nanorec import registry

    archive = tmp_path / "robot.nanover.zip"
    registry.get("ros2").convert(SAMPLES / "ros2-robot.db3", archive)
    spy = _when_http_server_is_imported("print('importing http.server', flush=True)")
    process = subprocess.Popen(
        [sys.executable, "-c", spy, "view", str(archive), "--no-browser"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        first, second = process.stdout.readline(), process.stdout.readline()
        found = re.search(r" at (http://127\.0\.0\.1:\d+/) ", first)
        assert found, (first, second)
        assert second == "importing http.server\n", (first, second)
        with urllib.request.urlopen(found.group(1) + "api/summary", timeout=60) as answer:
            assert json.loads(answer.read())["format"] == "ros2"
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    assert process.returncode == 0 and err == "nanorec: stopped\n", err


def test_ctrl_c_after_an_archives_url_stops_it_as_when_served(tmp_path: Path) -> None:
    """Ctrl-C once the URL is printed but before the page is served (here: while the
    server's modules are imported) stops the command as it does a served page: "nanorec:
    stopped", exit 0 (not a command cut short's 130)."""
    from nanorec import registry

    archive = tmp_path / "robot.nanover.zip"
    registry.get("ros2").convert(SAMPLES / "ros2-robot.db3", archive)
    interrupt = _when_http_server_is_imported("os.kill(os.getpid(), signal.SIGINT)")
    done = subprocess.run(
        [sys.executable, "-c", interrupt, "view", str(archive), "--no-browser"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert re.match(r"viewing .* at http://127\.0\.0\.1:\d+/ ", done.stdout), done.stdout
    assert done.returncode == 0 and done.stderr == "nanorec: stopped\n", done


def _when_http_server_is_imported(action: str) -> str:
    """A `python -c` program running the `nanorec` console script's entry point that does
    `action` when the command imports `http.server` (the view's server, after the URL)."""
    return (
        "import os, signal, sys\n"
        "class Spy:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'http.server':\n"
        f"            {action}\n"
        "sys.meta_path.insert(0, Spy())\n"
        "import _nanorec_entry\n"
        "sys.exit(_nanorec_entry.main())\n"
    )
