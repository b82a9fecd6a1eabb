"""The page in a real browser: Debian's Chromium driven by Playwright's Python package
(`executable_path`, no browser download). For a sample of every format, and a synthetic
`Viewable` one: drag the timeline and seek to 20 random frames, check the inspector shows
message N's fields and the scene canvas drew as many items as the scene's JSON holds; step
with the keyboard, play, plot a field; a screenshot per format in the test's tmp dir.
Skipped with a reason where Playwright or Chromium is missing."""

from __future__ import annotations

import base64
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.view.conftest import ONE_PER_FORMAT, Drawn, drawn_counts, open_sample

CHROMIUM = Path("/usr/bin/chromium")
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
if not CHROMIUM.exists():
    pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)", allow_module_level=True)

#: (case, sample, wrapped in the synthetic scene)
CASES = [(name, sample, False) for name, sample in ONE_PER_FORMAT.items()] + [
    ("drawn", "ros2-robot.db3", True)
]
FRAMES = 8


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM))
        yield browser
        browser.close()


@pytest.mark.slow  # ~6 s each (16 seeks checked through the page)
@pytest.mark.parametrize(("case", "sample", "drawn"), CASES, ids=[c[0] for c in CASES])
def test_scrub_every_format(
    case: str, sample: str, drawn: bool, browser: Any, serve: Any, tmp_path: Path
) -> None:
    with open_sample(sample) as recording:
        served = serve(Drawn(recording) if drawn else recording)
        count = len(recording)
        page = browser.new_page(viewport={"width": 1280, "height": 820})
        problems: list[str] = []
        page.on("pageerror", lambda error: problems.append(str(error)))
        page.goto(served.url)
        page.wait_for_selector("body[data-ready='1']")
        viewable = served.ok("/api/summary")["viewable"]
        assert page.locator("#no-scene").is_hidden() == viewable
        slider = page.locator("#timeline")
        rng = random.Random(37)
        for target in rng.sample(range(count), min(FRAMES, count)):
            _drag(page, slider, target, count)
            _check(page, served, int(slider.input_value()), viewable)
            slider.fill(str(target))  # exactly there (a drag lands within a pixel)
            _check(page, served, target, viewable)
            if case == "carla":  # the check: a box per actor of the world at that frame
                boxes = int(page.locator("#scene").get_attribute("data-boxes") or -1)
                assert boxes == len(recording.frame(target).actors), target
        page.screenshot(path=tmp_path / f"{case}.png")
        slider.focus()
        last = int(slider.input_value())
        page.keyboard.press("ArrowLeft" if last == count - 1 else "ArrowRight")
        _check(page, served, last - 1 if last == count - 1 else last + 1, viewable)
        assert not problems, problems


def _drag(page: Any, slider: Any, target: int, count: int) -> None:
    """Drag the thumb from where it is to where `target` is (a pointer, as a user does)."""
    box = slider.bounding_box()
    thumb = 16  # Chromium's range thumb, about
    x_of = lambda n: box["x"] + thumb / 2 + (box["width"] - thumb) * n / max(count - 1, 1)  # noqa: E731
    y = box["y"] + box["height"] / 2
    page.mouse.move(x_of(int(slider.input_value())), y)
    page.mouse.down()
    page.mouse.move(x_of(target), y, steps=4)
    page.mouse.up()


def _check(page: Any, served: Any, number: int, viewable: bool) -> None:
    """The inspector shows message `number` (its kind and top-level fields) and the canvas
    drew that message's scene, item for item."""
    page.wait_for_selector(f"#inspector[data-message='{number}']")
    page.wait_for_selector(f"#scene[data-frame='{number}']")
    message = served.ok(f"/api/message/{number}")
    root = page.locator("#inspector > details, #inspector > .leaf")
    assert root.get_attribute("data-key") == (message["kind"] or "value")
    value = message["value"]
    if isinstance(value, dict):
        keys = page.eval_on_selector_all(
            "#inspector > details > [data-key]", "nodes => nodes.map(n => n.dataset.key)"
        )
        assert keys == list(value)[:100]
    canvas = page.locator("#scene")
    drawn = {key: int(canvas.get_attribute(f"data-{key}") or -1) for key in _KINDS}
    expected = (
        drawn_counts(served.ok(f"/api/scene/{number}")) if viewable else dict.fromkeys(_KINDS, 0)
    )
    assert drawn == expected, number
    follow = served.ok(f"/api/scene/{number}").get("follow") if viewable else None
    if follow is not None and page.locator("#follow").is_checked():
        if isinstance(follow, dict):  # a typed block
            follow = np.frombuffer(base64.b64decode(follow["b64"]), follow["dtype"]).tolist()
        center = [float(v) for v in (canvas.get_attribute("data-center") or "").split(",")]
        assert center == pytest.approx(follow, abs=1e-3), number


_KINDS = ("boxes", "points", "lines", "markers", "images")


def test_play_and_plot(browser: Any, serve: Any) -> None:
    """Play moves the timeline on (at 10x), on from where the user seeks meanwhile, and stops
    on the last message; a plotted field shows the series' rows."""
    with open_sample("ros2-robot.db3") as recording:
        served = serve(recording)
        page = browser.new_page()
        page.goto(served.url)
        page.wait_for_selector("body[data-ready='1']")
        page.select_option("#rate", "10")
        page.click("#play")
        shown = "Number(document.getElementById('inspector').dataset.message)"
        page.wait_for_function(f"{shown} > 3")
        page.locator("#timeline").fill(str(len(recording) - 40))  # seeking while playing
        page.wait_for_function(f"{shown} > {len(recording) - 40}")  # plays on from there
        page.wait_for_function("document.getElementById('play').textContent === '▶'")
        assert page.locator("#inspector").get_attribute("data-message") == str(len(recording) - 1)
        kind = served.ok("/api/summary")["table_kinds"][0]
        page.select_option("#series-kind", kind)
        page.wait_for_function("document.getElementById('series-field').options.length > 0")
        field = page.locator("#series-field").input_value()
        page.click("#series-add")
        page.wait_for_selector(".plot[data-rows]")
        rows = int(page.locator(".plot").get_attribute("data-rows") or -1)
        width = page.evaluate("document.querySelector('.plot canvas').clientWidth")
        series = served.ok(f"/api/series?kind={kind}&field={field}&width={width}")
        assert rows == series["rows"] > 0


def test_first_paint_asks_nothing_else(browser: Any, serve: Any) -> None:
    """Message 0 and its scene are the page's first asks, with the summary: the overview (a
    long recording's whole paths, 0.7 s of server CPU on a 1 GB CARLA archive) and the
    plot's fields are asked once they are drawn, so they cannot take the server's lock
    first (the page asked all four at once before)."""
    with open_sample(ONE_PER_FORMAT["carla"]) as recording:
        served = serve(recording)
        page = browser.new_page()
        events: list[str] = []
        api = lambda url: url.split("/api/", 1)[1] if "/api/" in url else None  # noqa: E731
        page.on("request", lambda r: api(r.url) and events.append(f"ask {api(r.url)}"))
        page.on("response", lambda r: api(r.url) and events.append(f"got {api(r.url)}"))
        page.goto(served.url)
        page.wait_for_selector("body[data-ready='1']")
        painted = max(events.index("got message/0"), events.index("got scene/0"))
        later = [event for event in events[:painted] if "overview" in event or "fields" in event]
        assert not later, events
        assert events.index("ask overview") > painted, events
        # message 0 and its scene are asked with the summary, not once it came
        assert max(events.index("ask message/0"), events.index("ask scene/0")) < events.index(
            "got summary"
        ), events
