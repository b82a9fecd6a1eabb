"""The page's JSON endpoints over one open recording: what each answers, and the errors as
4xx JSON with one line (never a traceback, in the answer or the server's log).

| endpoint | answer |
|---|---|
| `/api/summary` | format, messages, times, viewable, kinds with counts and rates (the index) |
| `/api/message/N` | message N decoded as `nanorec cat` writes it |
| `/api/at?t=S` | the number of the message playing at S seconds from the start |
| `/api/overview`, `/api/scene/N` | a `Viewable` recording's layers (404 for another) |
| `/api/fields?kind=K` | the numeric columns of kind K's rows |
| `/api/series?kind=K&field=F&width=W` | F over time, min/max in W buckets (`series`) |

Each answer costs what one screen shows: a message, a scene, W buckets; nothing holds all
messages. The recording is asked under one lock (a format's decoder need not be
thread-safe; the server's threads only overlap on the network).

The recording may be given as the function opening it (`ViewApi.opening`): it is opened in
a thread of its own while the browser loads the page, each answer waiting for it; that is
most of a first paint's server time (the format's modules, the archive's index).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from nanorec.contract import Recording, Viewable
from nanorec.errors import NanorecError, OutOfRangeError, UsageError
from nanorec.view.encode import dumps, layer_json, message_json
from nanorec.view.series import check_width, numeric_fields
from nanorec.view.series import series as series_of

Query = Mapping[str, list[str]]


@dataclass(frozen=True)
class Answer:
    """An HTTP status and its JSON body."""

    status: int
    body: bytes


class NotFound(UsageError):
    """No such endpoint, or one this recording does not offer (a scene of a recording that
    is not `Viewable`)."""


class ViewApi:
    """The endpoints over `recording` (left open: its owner closes it)."""

    def __init__(self, recording: Any) -> None:
        self.recording = recording
        self.viewable = isinstance(recording, Viewable)
        self._lock = threading.Lock()
        self._summary: bytes | None = None
        self._overview: bytes | None = None
        self._opened = threading.Event()
        self._opened.set()
        #: The first screen's answers made before they were asked (`_warm`), by path, and
        #: those of its paths asked already.
        self._early: dict[str, bytes] = {}
        self._answered: set[str] = set()
        #: What opening the recording raised (`opening`), None once it is open.
        self.failure: BaseException | None = None

    @classmethod
    def opening(cls, open_recording: Callable[[], Recording], then: Callable[[], None]) -> ViewApi:
        """The endpoints over the recording `open_recording()` returns, opened in a thread
        now; answers wait for it. `then()` is called if opening raises (the error is kept in
        `failure`, each answer says it): the server is stopped, its owner raises it."""
        api = cls(None)
        api._opened.clear()

        def run() -> None:
            try:
                recording = open_recording()
            except BaseException as error:  # raised again by the server's owner
                api.failure = error
                api._opened.set()
                then()
                return
            api.recording, api.viewable = recording, isinstance(recording, Viewable)
            api._opened.set()
            api._warm()

        threading.Thread(target=run, name="nanorec-view-open", daemon=True).start()
        return api

    def answer(self, path: str, query: Query) -> Answer:
        """The answer to GET `path`?`query` (path starting with /api/)."""
        parts = path.strip("/").split("/")
        handler = self._ROUTES.get(parts[1] if len(parts) > 1 else "")
        self._opened.wait()
        if self.failure is not None:
            return _error(503, f"the recording did not open: {self.failure}")
        try:
            if handler is None or len(parts) > 3:
                raise NotFound(f"no endpoint {path}")
            with self._lock:
                body = self._early.pop(path, None)
                if body is None:
                    body = handler(self, parts[2] if len(parts) == 3 else None, query)
                if path in _FIRST:
                    self._answered.add(path)
            return Answer(200, body)
        except (NotFound, OutOfRangeError) as error:
            return _error(404, str(error))
        except (NanorecError, ValueError) as error:  # bad input, or a damaged message
            return _error(400 if isinstance(error, UsageError) else 422, str(error))
        except Exception as error:  # a bug must not take the page down: said in one line
            return _error(500, f"{type(error).__name__}: {error}")

    def _warm(self) -> None:
        """The answers the page paints first (the summary, message 0 and its scene) made
        now, while the browser is still loading the page: the first message and scene
        import what decodes and draws them (~45 ms CPU for a CARLA frame, of a first paint).
        Each is answered once from here, then made as any other; one the page asked first
        is not made again. A failure is left for the page's own ask to say."""
        for path in _FIRST:
            name, _, arg = path.removeprefix("/api/").partition("/")
            with self._lock:
                if path in self._answered or (name == "scene" and not self.viewable):
                    continue
                try:  # the summary keeps its own answer
                    body = self._ROUTES[name](self, arg or None, {})
                except Exception:  # answered, and said, when asked
                    continue
                if name != "summary":
                    self._early[path] = body

    # -- endpoints --------------------------------------------------------------------------

    def summary(self, arg: str | None, query: Query) -> bytes:
        _no_argument("summary", arg)
        if self._summary is None:
            self._summary = dumps(self._summarise())
        return self._summary

    def message(self, arg: str | None, query: Query) -> bytes:
        number = self._number(arg)
        message = self.recording.message(number)
        return dumps(
            {
                "number": message.number,
                "time": _finite(message.time),
                "kind": message.kind,
                "value": message_json(message.value),
            }
        )

    def at(self, arg: str | None, query: Query) -> bytes:
        _no_argument("at", arg)
        t = _float("t", _one(query, "t"))
        if not len(self.recording):
            raise OutOfRangeError("the recording holds no message")
        number = self.recording.number_at(max(t, 0.0))
        return dumps({"t": t, "number": number, "time": self.recording.time_of(number)})

    def overview(self, arg: str | None, query: Query) -> bytes:
        _no_argument("overview", arg)
        self._check_viewable()
        if self._overview is None:
            self._overview = dumps(layer_json(self.recording.view_overview()))
        return self._overview

    def scene(self, arg: str | None, query: Query) -> bytes:
        number = self._number(arg)
        self._check_viewable()
        scene = layer_json(self.recording.view_scene(number))
        return dumps({"number": number, **scene})

    def fields(self, arg: str | None, query: Query) -> bytes:
        _no_argument("fields", arg)
        kind = _one(query, "kind")
        return dumps({"kind": kind, "fields": numeric_fields(self.recording, kind)})

    def series(self, arg: str | None, query: Query) -> bytes:
        _no_argument("series", arg)
        kind, field = _one(query, "kind"), _one(query, "field")
        width = check_width(_one(query, "width"))
        return dumps(series_of(self.recording, kind, field, width))

    _ROUTES: ClassVar[dict[str, Callable[[ViewApi, str | None, Query], bytes]]] = {
        "summary": summary,
        "message": message,
        "at": at,
        "overview": overview,
        "scene": scene,
        "fields": fields,
        "series": series,
    }

    # -- helpers ----------------------------------------------------------------------------

    def _number(self, arg: str | None) -> int:
        count = len(self.recording)
        if arg is None or not arg.isdigit():
            raise UsageError(f"a message number is 0 to {count - 1}, not {arg!r}")
        number = int(arg)
        if number >= count:
            raise OutOfRangeError(
                f"message {number} is out of range (the recording has {count} messages)"
            )
        return number

    def _check_viewable(self) -> None:
        if not self.viewable:
            raise NotFound(f"a {self.recording.format} recording draws no scene")

    def _summarise(self) -> dict[str, Any]:
        """What the index says: counts, times and rates per kind (no message decoded)."""
        recording = self.recording
        index = recording.reader.index
        stamps = index.timestamp_us
        origin = int(stamps[0]) if len(stamps) else 0
        kinds = []
        for name in sorted({name for types in index.types_table for name in types}):
            times = stamps[index.has_type(name)]
            if not len(times):
                continue
            first, last = (int(times.min()) - origin) / 1e6, (int(times.max()) - origin) / 1e6
            span = last - first
            rate = (len(times) - 1) / span if span > 0 else None
            kinds.append(
                {"name": name, "count": len(times), "first": first, "last": last, "rate": rate}
            )
        return {
            "name": getattr(recording.reader.path, "name", str(recording.reader.path)),
            "format": recording.format,
            "messages": len(recording),
            "start_time": _finite(recording.start_time),
            "end_time": _finite(recording.end_time),
            "duration": _finite(recording.duration),
            "viewable": self.viewable,
            "kinds": kinds,
            "table_kinds": list(recording.table_kinds()),
        }


#: What the page asks first (`ViewApi._warm`).
_FIRST = ("/api/summary", "/api/message/0", "/api/scene/0")


def _error(status: int, message: str) -> Answer:
    return Answer(status, dumps({"error": " ".join(message.split()), "status": status}))


def _no_argument(name: str, arg: str | None) -> None:
    if arg is not None:
        raise NotFound(f"no endpoint /api/{name}/{arg}")


def _one(query: Query, name: str) -> str:
    values = query.get(name)
    if not values:
        raise UsageError(f"the query needs {name}=")
    return values[-1]


def _float(name: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"{name} must be a number of seconds, not {text!r}") from None
    if not math.isfinite(value):
        raise UsageError(f"{name} must be a finite number of seconds, not {text!r}")
    return value


def _finite(value: float) -> float | None:
    value = float(value)
    return value if np.isfinite(value) else None
