"""CARLA commands registered on the `nanorec` CLI."""

from __future__ import annotations
