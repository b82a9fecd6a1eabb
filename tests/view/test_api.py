"""The view's JSON endpoints on a real server on 127.0.0.1, read with urllib: every sample's
summary, messages (as `nanorec cat` gives them), times, fields and series against the
recording itself; bad requests answered 4xx in one JSON line, nothing in the server's log."""

from __future__ import annotations

import base64
import json
import math
import threading
import urllib.request
from typing import Any

import numpy as np
import pytest

from nanorec.cli.inputs import message_dict
from nanorec.errors import FormatError
from nanorec.outputs.tables import dumps
from nanorec.view.api import ViewApi
from nanorec.view.encode import HEAD, MAX_ITEMS
from nanorec.view.server import ViewServer, serve
from tests.view.conftest import (
    EVERY_SAMPLE,
    ONE_PER_FORMAT,
    Drawn,
    NotDrawn,
    Served,
    drawn_counts,
    open_sample,
)


def _numbers(count: int, seed: int = 37) -> list[int]:
    rng = np.random.default_rng(seed)
    return sorted({0, count - 1, *rng.integers(0, count, 8).tolist()})


@pytest.mark.parametrize("name", EVERY_SAMPLE)
def test_every_sample_answers(name: str, serve: Any, capfd: pytest.CaptureFixture[str]) -> None:
    """Summary from the index, message N as cat writes it, the message at t, the numeric
    fields of a kind and their series; no scene for a recording that draws none."""
    with open_sample(name) as recording:
        served = serve(recording)
        summary = served.ok("/api/summary")
        assert summary["messages"] == len(recording) > 0
        assert summary["format"] == recording.format
        assert summary["duration"] == pytest.approx(recording.duration)
        index = recording.reader.index
        for kind in summary["kinds"]:
            assert kind["count"] == int(index.has_type(kind["name"]).sum()) > 0
            if kind["rate"] is not None:
                span = kind["last"] - kind["first"]
                assert kind["rate"] == pytest.approx((kind["count"] - 1) / span)
        for number in _numbers(len(recording)):
            answer = served.ok(f"/api/message/{number}")
            _same_as_cat(answer, json.loads(dumps(message_dict(recording.message(number)))))
            t = recording.time_of(number)
            assert served.ok(f"/api/at?t={t!r}")["number"] == recording.number_at(t)
        if summary["viewable"]:
            scene = served.ok(f"/api/scene/{len(recording) - 1}")
            assert isinstance(scene["layers"], list)
            assert isinstance(served.ok("/api/overview")["layers"], list)
        else:
            assert served.get("/api/scene/0")[0] == 404
            assert served.get("/api/overview")[0] == 404
        _check_a_series(served, recording, summary["table_kinds"])
    assert capfd.readouterr().err == ""


def _same_as_cat(shown: Any, cat: Any) -> None:
    """`shown` (the inspector's JSON) is `cat`'s, but for long leaves cut to their head and
    integers past 2**53 as their digits."""
    if isinstance(shown, dict) and list(shown) == ["int"]:
        assert isinstance(cat, int) and str(cat) == shown["int"] and abs(cat) > 2**53
    elif isinstance(shown, dict) and "head" in shown and not isinstance(cat, dict | None):
        if "bytes" in shown:
            data = cat.encode("utf-8", "surrogateescape")
            assert shown["bytes"] == len(data) > MAX_ITEMS
            assert base64.b64decode(shown["head"]) == data[:HEAD]
        elif "characters" in shown:
            assert shown["characters"] == len(cat) and cat.startswith(shown["head"])
        else:
            flat = np.asarray(cat, dtype=object).reshape(-1).tolist() if "shape" in shown else cat
            assert shown["items"] == len(flat) > MAX_ITEMS
            for item, whole in zip(shown["head"], flat[:HEAD], strict=True):
                _same_as_cat(item, whole)
    elif isinstance(shown, dict) and isinstance(cat, dict) and "base64" in cat and "bytes" in shown:
        data = base64.b64decode(cat["base64"])
        assert shown["bytes"] == len(data) and base64.b64decode(shown["head"]) == data[:HEAD]
    elif isinstance(shown, dict):
        assert isinstance(cat, dict) and list(shown) == list(cat)
        for key in shown:
            _same_as_cat(shown[key], cat[key])
    elif isinstance(shown, list):
        assert isinstance(cat, list) and len(shown) == len(cat)
        for item, whole in zip(shown, cat, strict=True):
            _same_as_cat(item, whole)
    else:
        assert shown == cat
        assert not isinstance(shown, int) or abs(shown) <= 2**53  # exact in JavaScript


def test_a_huge_message_is_answered_in_kilobytes(serve: Any) -> None:
    """A 64 MiB image and a 16 M-element array: their heads and sizes, not their text."""
    from nanorec.contract import Message

    class Huge(Drawn):
        def message(self, number: int) -> Message:
            value = {
                "image": {"data": bytes(64 << 20), "width": 8192},
                "cloud": np.zeros((1 << 22, 4), np.float32),
                "ranges": [0.5] * 5000,
                "note": "x" * 20_000,
            }
            return Message(number, 0.0, "image", value)

    with open_sample("ros2-robot.db3") as recording:
        served = serve(Huge(recording))
        status, body = served.get("/api/message/0")
    assert status == 200
    value = body["value"]
    assert value["image"]["data"] == {
        "bytes": 64 << 20,
        "head": base64.b64encode(bytes(HEAD)).decode(),
    }
    assert value["cloud"]["shape"] == [1 << 22, 4] and value["cloud"]["items"] == 1 << 24
    assert value["cloud"]["head"] == [0.0] * HEAD and value["cloud"]["dtype"] == "<f4"
    assert value["ranges"] == {"items": 5000, "head": [0.5] * HEAD}
    assert value["note"]["characters"] == 20_000
    assert len(json.dumps(body)) < 20_000


def _check_a_series(served: Any, recording: Any, kinds: list[str]) -> None:
    """The first numeric field found: its series against every row of its kind."""
    for kind in kinds:
        fields = served.ok(f"/api/fields?kind={kind}")["fields"]
        if fields:
            break
    else:
        return
    field = fields[-1]
    series = served.ok(f"/api/series?kind={kind}&field={field}&width=37")
    values = [
        float(row[field])
        for row in recording.rows(kind)
        if isinstance(row.get(field), int | float | np.number) and math.isfinite(row[field])
    ]
    assert len(series["min"]) == len(series["max"]) == len(series["count"]) == 37
    if series["sampled"]:
        return
    assert sum(series["count"]) == series["rows"] == len(values)
    lows = [v for v in series["min"] if v is not None]
    highs = [v for v in series["max"] if v is not None]
    assert min(lows) == min(values) and max(highs) == max(values)


BAD = [
    ("/api/message/{count}", 404, "out of range"),
    ("/api/message/-1", 400, "a message number"),
    ("/api/message/abc", 400, "a message number"),
    ("/api/message/", 400, "a message number"),
    ("/api/at?t=abc", 400, "t must be a number"),
    ("/api/at?t=nan", 400, "finite"),
    ("/api/at", 400, "needs t="),
    ("/api/series?kind=nope&field=x&width=10", 400, "no kind 'nope'"),
    ("/api/series?kind={kind}&field=x&width=0", 400, "width must be 1 to"),
    ("/api/series?kind={kind}&field=x&width=abc", 400, "whole number"),
    ("/api/series?kind={kind}&width=10", 400, "needs field="),
    ("/api/fields?kind=nope", 400, "no kind"),
    ("/api/scene/0", 404, "draws no scene"),
    ("/api/overview", 404, "draws no scene"),
    ("/api/nope", 404, "no endpoint"),
    ("/api/summary/3", 404, "no endpoint"),
    ("/api/message/1/2", 404, "no endpoint"),
    ("/nope.html", 404, "not found"),
]


@pytest.mark.parametrize(("path", "status", "says"), BAD)
def test_bad_requests(
    path: str, status: int, says: str, serve: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    """4xx, a JSON body with one line saying what, and nothing in the server's log."""
    with open_sample("rosbag-robot.bag") as recording:
        served = serve(NotDrawn(recording) if "draws no scene" in says else recording)
        path = path.format(count=len(recording), kind=recording.table_kinds()[0])
        code, body = served.get(path)
    assert (code, body["status"]) == (status, status)
    assert says in body["error"] and "\n" not in body["error"]
    assert capfd.readouterr().err == ""


def test_a_damaged_message_is_422_not_a_traceback() -> None:
    """A message the format cannot decode: 422 and the format's one line."""
    from nanorec.errors import FormatError

    class Broken(Drawn):
        def message(self, number: int) -> Any:
            raise FormatError(f"message {number}: cut short at byte 12")

    with open_sample("ros2-robot.db3") as recording:
        answer = ViewApi(Broken(recording)).answer("/api/message/3", {})
    assert answer.status == 422
    assert json.loads(answer.body)["error"] == "message 3: cut short at byte 12"


def test_scene_arrays_are_typed_blocks(serve: Any) -> None:
    """A `Viewable` scene: each numpy column a little-endian typed block of the same values
    (int64 as float64, which JavaScript reads), bytes as base64, lists as lists."""
    with open_sample("ros2-robot.db3") as recording:
        drawn = Drawn(recording)
        served = serve(drawn)
        assert served.ok("/api/summary")["viewable"] is True
        scene = served.ok("/api/scene/13")
        expected = drawn.view_scene(13)
        for got, want in zip(scene["layers"], expected["layers"], strict=True):
            for key, value in want.items():
                if isinstance(value, np.ndarray) and value.dtype.kind in "US":  # names
                    assert got[key] == {"list": value.tolist()}
                elif isinstance(value, np.ndarray):
                    block = got[key]
                    array = np.frombuffer(base64.b64decode(block["b64"]), block["dtype"])
                    assert block["shape"] == list(value.shape)
                    assert np.array_equal(array, value), key
                    assert block["dtype"] != "<i8"
                else:
                    assert got[key] == value
        assert drawn_counts(scene) == {
            "boxes": 6,
            "points": 3,
            "lines": 1,
            "markers": 1,
            "images": 0,
        }
        image = served.ok("/api/overview")["layers"][1]
        assert base64.b64decode(image["data"]["b64"]).startswith(b"\x89PNG")


def test_series_is_sampled_past_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ROWS rows, each run of messages reads a bounded number of them (whole messages),
    and the answer says it was sampled; below, every row counts."""
    import nanorec.view.series as series_module

    with open_sample("ros2-robot.db3") as recording:
        kind = "/odom"
        api = ViewApi(recording)
        query = {"kind": [kind], "field": ["pose.position.x"], "width": ["10"]}
        whole = json.loads(api.answer("/api/series", query).body)
        monkeypatch.setattr(series_module, "ROWS", 40)
        sampled = json.loads(api.answer("/api/series", query).body)
    assert not whole["sampled"] and sampled["sampled"]
    assert whole["rows"] == 200 and sampled["rows"] == 40


def test_a_series_of_rows_without_time_is_refused() -> None:
    """A pbstream's trajectory table has no time: 400, not W passes over the table."""
    with open_sample("pbstream-small.pbstream") as recording:
        answer = ViewApi(recording).answer(
            "/api/series", {"kind": ["trajectory"], "field": ["x"], "width": ["10"]}
        )
    assert answer.status == 400
    assert json.loads(answer.body)["error"] == "the rows of 'trajectory' have no time: not a series"


def test_another_host_name_is_refused(serve: Any) -> None:
    """A request naming another host (a page elsewhere whose name was pointed at 127.0.0.1:
    DNS rebinding) gets 403; 127.0.0.1 and localhost are answered, on any port (a tunnel)."""
    import http.client
    from urllib.parse import urlsplit

    with open_sample("ros2-robot.db3") as recording:
        served = serve(recording)
        port = urlsplit(served.url).port
        answers = {}
        hosts = (f"evil.example:{port}", f"127.0.0.1:{port}", f"localhost:{port}", None)
        for host in (*hosts, "localhost:9000"):  # through an ssh tunnel's port
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            connection.putrequest("GET", "/api/summary", skip_host=True)
            if host is not None:
                connection.putheader("Host", host)
            connection.endheaders()
            response = connection.getresponse()
            answers[host] = (response.status, json.loads(response.read()).get("error"))
            connection.close()
    assert answers[f"evil.example:{port}"] == (403, "this server answers 127.0.0.1 only")
    assert answers[None][0] == 403
    assert answers[f"127.0.0.1:{port}"][0] == answers[f"localhost:{port}"][0] == 200
    assert answers["localhost:9000"][0] == 200


def test_the_page_is_served_while_the_recording_opens() -> None:
    """`ViewApi.opening`: the page's files are served before the recording is open; its
    answers wait for it, then are the recording's."""
    release = threading.Event()

    def opening() -> Any:
        assert release.wait(60)
        return open_sample(ONE_PER_FORMAT["ros2"])

    server = ViewServer(ViewApi(None), 0)
    server.api = ViewApi.opening(opening, then=server.shutdown)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        served = Served(server.url)
        with urllib.request.urlopen(server.url, timeout=60) as page:
            assert b'id="timeline"' in page.read()
        assert not release.is_set()  # the page came while the recording was opening
        release.set()
        assert served.ok("/api/summary")["format"] == "ros2"
        assert served.ok("/api/message/3")["number"] == 3
    finally:
        server.shutdown()
        server.server_close()
        if server.api.recording is not None:
            server.api.recording.close()


def test_what_opening_raises_stops_the_server_and_is_raised() -> None:
    """The recording opened while the page loads does not open: `serve` stops and raises
    that error (the command line's one line), and answers meanwhile say it."""
    urls: list[str] = []

    def opening() -> Any:
        raise FormatError("damaged.nanover.zip has no messages.msgpack member")

    with pytest.raises(FormatError, match=r"no messages\.msgpack"):
        serve(None, browser=False, ready=urls.append, opening=opening)
    assert len(urls) == 1
    api = ViewApi.opening(opening, then=lambda: None)
    answer = api.answer("/api/summary", {})
    assert answer.status == 503 and b"did not open" in answer.body


class _Counted:
    """`recording`, counting the messages asked of it."""

    def __init__(self, recording: Any) -> None:
        self.recording = recording
        self.asked: list[int] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.recording, name)

    def __len__(self) -> int:
        return len(self.recording)

    def message(self, number: int) -> Any:
        self.asked.append(number)
        return self.recording.message(number)


def test_the_first_screen_is_made_before_it_is_asked() -> None:
    """Once the recording is open, message 0 and its scene are made while the browser still
    loads the page (`_warm`): the page's first asks are answered from them, once, the same."""
    with open_sample(ONE_PER_FORMAT["carla"]) as recording:
        counted = _Counted(recording)
        api = ViewApi(counted)
        assert api.viewable
        api._warm()
        assert counted.asked == [0]
        fresh = ViewApi(recording)
        for path in ("/api/message/0", "/api/scene/0", "/api/summary"):
            assert api.answer(path, {}).body == fresh.answer(path, {}).body, path
        assert counted.asked == [0]
        assert api.answer("/api/message/0", {}).body == fresh.answer("/api/message/0", {}).body
        assert counted.asked == [0, 0]
        asked_first = _Counted(recording)  # the page's ask came before: not made again
        api = ViewApi(asked_first)
        api.answer("/api/message/0", {})
        api._warm()
        assert asked_first.asked == [0] and not api._early.get("/api/message/0")
