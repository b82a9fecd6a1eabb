"""What CARLA recordings add to the core's verbs, declared without importing the format (the
core builds the verbs' command lines from it: `nanorec.cli.hooks`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from nanorec.cli.hooks import option

from .ids import FAMILIES

FAMILY_HELP = "Force a release family instead of detecting it: " + ", ".join(FAMILIES) + "."
_TZ_HELP = (
    "The server's local time zone for the Date line: an IANA name (Europe/Berlin) or an "
    "offset (+02:00). CARLA prints local time; default UTC."
)
_WINDOWS_HELP = (
    "Format as a Windows server does: exact ties round half away from zero "
    "(-9144.125 -> -9144.13), NaNs print the MSVC way; blocked rows use MSVC's hash order."
)
_FORM_HELP = "Force a whole text form: 0.9.4, 0.9.5, 0.9.6, 0.9.15 or 2026 (default: by family)."
_LABELS_HELP = (
    "Label form: old (`Rotation (`, `Brake `; 0.9.6-0.9.14) or new (`Rotation: (`, "
    "`Brake: `; 0.9.15+). Default: by release family."
)

Family = Annotated[str | None, option("--family", help=FAMILY_HELP, metavar="NAME")]


@dataclass(frozen=True)
class CarlaInfoOptions:
    """`nanorec info x.log`: what show_recorder_file_info depends on."""

    show_all: Annotated[
        bool, option("--show-all", help="Every packet of every frame, as show_all=True.")
    ] = False
    tz: Annotated[str | None, option("--tz", help=_TZ_HELP, metavar="ZONE")] = None
    windows: Annotated[bool, option("--windows", help=_WINDOWS_HELP)] = False
    family: Family = None
    labels: Annotated[str | None, option("--labels", help=_LABELS_HELP, metavar="old|new")] = None
    form: Annotated[str | None, option("--form", help=_FORM_HELP, metavar="FORM")] = None


@dataclass(frozen=True)
class CarlaCatOptions:
    """`nanorec cat x.log`: one actor's records."""

    actor: Annotated[
        int | None, option("--actor", "-a", help="Only records naming this actor id.", metavar="ID")
    ] = None
    family: Family = None


@dataclass(frozen=True)
class CarlaPlayOptions:
    """`nanorec play x.log`: the parts of the world state (`--type`'s older spelling)."""

    parts: Annotated[
        list[str] | None,
        option(
            "--parts",
            "--types",
            help="Same as --type (its older spelling).",
            metavar="PARTS",
            same_as="kinds",
        ),
    ] = None
    family: Family = None


@dataclass(frozen=True)
class CarlaPlotOptions:
    """`nanorec plot x.log`: which frame, actors and view of the bird's-eye picture."""

    frame: Annotated[
        int | None,
        option(
            "--frame",
            "-n",
            help="Draw footprints at this archive frame (0-based; default: the last one "
            "of the range).",
            metavar="N",
        ),
    ] = None
    actors: Annotated[
        list[int] | None,
        option(
            "--actor",
            "-a",
            help="Draw only this actor id (repeat for more; default: vehicles and walkers).",
            metavar="ID",
        ),
    ] = None
    follow: Annotated[
        int | None,
        option("--follow", help="Frame the view around this actor's path.", metavar="ID"),
    ] = None
    family: Family = None


@dataclass(frozen=True)
class CarlaFamilyOptions:
    """`nanorec convert|export x.log`: the release family, when detecting it is not wanted
    (the same as convert's `-O family=NAME`)."""

    family: Family = None


VERB_OPTIONS: dict[str, type] = {
    "info": CarlaInfoOptions,
    "convert": CarlaFamilyOptions,
    "cat": CarlaCatOptions,
    "play": CarlaPlayOptions,
    "plot": CarlaPlotOptions,
    "export": CarlaFamilyOptions,
}
