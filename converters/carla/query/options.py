"""The options every CARLA text query takes (the server's zone and C library, the release
family and text form), as callers pass them and as the printers use them, resolved once."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import tzinfo
from typing import TypedDict

from nanorec.buffers import Buffer

from ..ids import Family
from ..textfmt import parse_zone
from .base import Labels, TextForm, choose_family, resolve_form


@dataclass(frozen=True)
class QueryOptions:
    """How to print: the server's zone and C library, and the release form."""

    zone: tzinfo
    windows: bool
    family: Family
    form: TextForm


class TextOptions(TypedDict, total=False):
    """The options every CARLA text query takes (`iter_file_info`, `iter_collisions`,
    `iter_actors_blocked`): the server's zone and C library, the release family and form."""

    tz: str | tzinfo | None
    windows: bool
    family: str | Family | None
    form: str | None


class FileInfoOptions(TextOptions, total=False):
    """`file_info`'s options: the text queries', and show_all and the label forms."""

    show_all: bool
    labels: Labels | None


def text_options(
    buf: Buffer,
    start: int,
    *,
    tz: str | tzinfo | None,
    windows: bool,
    fam: str | Family | None,
    labels: Labels | None,
    form: str | None,
) -> QueryOptions:
    zone = tz if isinstance(tz, tzinfo) else parse_zone(tz)
    chosen, has_anims = choose_family(buf, start, fam)
    return QueryOptions(zone, windows, chosen, resolve_form(chosen, has_anims, form, labels))


__all__ = ["FileInfoOptions", "QueryOptions", "TextOptions", "text_options"]
