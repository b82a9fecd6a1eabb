"""`export_from`, the contract's hook for writing a format from a recording of any format
(`nanorec.contract.FOREIGN_FORMATS`), for both ROS converters: the bridge module named by the
converter writes its bag. Imported when used, so listing formats costs nothing."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from nanorec.contract import ExportReport, Progress, Recording

if TYPE_CHECKING:
    from nanorec.selection import Selection


class ExportsFromAnyRecording:
    """Mixed into a ROS converter; `bridge_module` names its writer in `bridge/`."""

    bridge_module: ClassVar[str]

    def export_from(
        self,
        recording: Recording,
        output: Path,
        *,
        selection: Selection | None = None,
        overwrite: bool = False,
        progress: Progress | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> ExportReport:
        """A new bag of this converter's format from `recording` (`converters/ros/bridge`)."""
        bridge = importlib.import_module(f"..bridge.{self.bridge_module}", __package__)
        report: ExportReport = bridge.export(
            recording,
            output,
            selection=selection,
            overwrite=overwrite,
            progress=progress,
            options=options,
        )
        return report
