"""An example scenario_runner metric that needs no map, for `nanorec carla metrics`:

    nanorec carla metrics run.log --metric nanorec.converters.carla.metrics_example

It has the shape of scenario_runner's metrics (`srunner/metrics/examples`): one class whose
`_create_metric(town_map, log, criteria)` reads a `MetricsLog` and prints its result. It
uses only the log (poses and times, which every recording has), so it runs anywhere.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nanorec.untyped import Json

    from .metrics import MetricsLog
    from .metrics_types import CarlaObject


class EgoDistance:
    """The hero's distance driven and top speed (from its poses: velocities need the
    recorder's additional data)."""

    def _create_metric(self, town_map: CarlaObject, log: MetricsLog, criteria: Json) -> None:
        ego = log.get_ego_vehicle_id()
        first, last = log.get_actor_alive_frames(ego)
        assert first is not None and last is not None  # the ego is a recorded actor
        distance = top = 0.0
        previous: CarlaObject | None = None  # a carla.Location
        previous_time = 0.0
        for frame in range(first, last + 1):
            transform = log.get_actor_transform(ego, frame)
            if transform is None:
                continue
            here, now = transform.location, log.get_elapsed_time(frame)
            if previous is not None:
                step = math.dist((here.x, here.y, here.z), (previous.x, previous.y, previous.z))
                distance += step
                if now > previous_time:
                    top = max(top, step / (now - previous_time))
            previous, previous_time = here, now
        print(f"ego {ego}: frames {first}-{last}, {distance:.1f} m driven, top speed {top:.1f} m/s")
