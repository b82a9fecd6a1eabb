"""`export_from`, the contract's hook for writing a format from a recording of any format
(`nanorec.contract.ForeignWriter`), for both ROS converters: the bridge module named by the
converter writes its bag. Imported when used, so listing formats costs nothing."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import ClassVar

from nanorec.contract import ExportReport, ExportRequest, Recording


class ExportsFromAnyRecording:
    """Mixed into a ROS converter; `bridge_module` names its writer in `bridge/`."""

    bridge_module: ClassVar[str]

    def export_from(
        self, recording: Recording, output: Path, request: ExportRequest
    ) -> ExportReport:
        """A new bag of this converter's format from `recording` (`converters/ros/bridge`)."""
        bridge = importlib.import_module(f"..bridge.{self.bridge_module}", __package__)
        report: ExportReport = bridge.export(recording, output, request)
        return report
