"""Converters between native recording formats and nanorec archives, one sub-package each."""
