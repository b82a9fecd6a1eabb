"""Container commands: `verify`, `recover` (issue 3)."""

from __future__ import annotations
