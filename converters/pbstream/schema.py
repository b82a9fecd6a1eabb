"""The Cartographer messages this package decodes, as field tables (spec §5).

`SCHEMA[message][field number] = (name, type, repeated)`; a type is a scalar name or
another message's name. Scalars named `packed_*` are packed repeated fields decoded into
numpy arrays. Fields not listed are kept under `_unknown` by the decoder, never dropped.
Only what Cartographer's serialization uses is listed; builder options (hundreds of tuning
fields) are kept as raw bytes below their first level.
"""

from __future__ import annotations

from typing import Final

Spec = dict[int, tuple[str, str, bool]]

_ID_SUBMAP: Final[Spec] = {
    1: ("trajectory_id", "int32", False),
    2: ("submap_index", "int32", False),
}
_ID_NODE: Final[Spec] = {1: ("trajectory_id", "int32", False), 2: ("node_index", "int32", False)}
_TIMED_POSE: Final[Spec] = {1: ("timestamp", "int64", False), 2: ("pose", "Rigid3d", False)}

SCHEMA: Final[dict[str, Spec]] = {
    "Vector2d": {1: ("x", "double", False), 2: ("y", "double", False)},
    "Vector3d": {1: ("x", "double", False), 2: ("y", "double", False), 3: ("z", "double", False)},
    "Quaterniond": {
        1: ("x", "double", False),
        2: ("y", "double", False),
        3: ("z", "double", False),
        4: ("w", "double", False),
    },
    "Rigid3d": {1: ("translation", "Vector3d", False), 2: ("rotation", "Quaterniond", False)},
    "SubmapId": _ID_SUBMAP,
    "NodeId": _ID_NODE,
    "SerializationHeader": {1: ("format_version", "uint32", False)},
    "PoseGraph": {
        2: ("constraint", "Constraint", True),
        4: ("trajectory", "Trajectory", True),
        5: ("landmark_poses", "LandmarkPose", True),
    },
    "Constraint": {
        1: ("submap_id", "SubmapId", False),
        2: ("node_id", "NodeId", False),
        3: ("relative_pose", "Rigid3d", False),
        5: ("tag", "enum", False),
        6: ("translation_weight", "double", False),
        7: ("rotation_weight", "double", False),
    },
    "LandmarkPose": {1: ("landmark_id", "string", False), 2: ("global_pose", "Rigid3d", False)},
    "Trajectory": {
        1: ("node", "TrajectoryNode", True),
        2: ("submap", "TrajectorySubmap", True),
        3: ("trajectory_id", "int32", False),
    },
    "TrajectoryNode": {
        1: ("timestamp", "int64", False),
        5: ("pose", "Rigid3d", False),
        7: ("node_index", "int32", False),
    },
    "TrajectorySubmap": {1: ("pose", "Rigid3d", False), 2: ("submap_index", "int32", False)},
    "AllTrajectoryBuilderOptions": {1: ("options_with_sensor_ids", "OptionsEntry", True)},
    "OptionsEntry": {
        1: ("sensor_id", "SensorId", True),
        2: ("trajectory_builder_options", "TrajectoryBuilderOptions", False),
    },
    "SensorId": {1: ("type", "enum", False), 2: ("id", "string", False)},
    "TrajectoryBuilderOptions": {
        1: ("trajectory_builder_2d_options", "bytes", False),
        2: ("trajectory_builder_3d_options", "bytes", False),
        3: ("pure_localization", "bool", False),
        4: ("initial_trajectory_pose", "InitialTrajectoryPose", False),
        6: ("pure_localization_trimmer", "Trimmer", False),
        7: ("collate_fixed_frame", "bool", False),
        8: ("collate_landmarks", "bool", False),
        9: ("pose_graph_odometry_motion_filter", "bytes", False),
    },
    "InitialTrajectoryPose": {
        1: ("relative_pose", "Rigid3d", False),
        2: ("to_trajectory_id", "int32", False),
        3: ("timestamp", "int64", False),
    },
    "Trimmer": {1: ("max_submaps_to_keep", "int32", False)},
    "Submap": {
        1: ("submap_id", "SubmapId", False),
        2: ("submap_2d", "Submap2D", False),
        3: ("submap_3d", "Submap3D", False),
    },
    "Submap2D": {
        1: ("local_pose", "Rigid3d", False),
        2: ("num_range_data", "int32", False),
        3: ("finished", "bool", False),
        4: ("grid", "Grid2D", False),
    },
    "Submap3D": {
        1: ("local_pose", "Rigid3d", False),
        2: ("num_range_data", "int32", False),
        3: ("finished", "bool", False),
        4: ("high_resolution_hybrid_grid", "HybridGrid", False),
        5: ("low_resolution_hybrid_grid", "HybridGrid", False),
        6: ("rotational_scan_matcher_histogram", "packed_float", False),
    },
    "Grid2D": {
        1: ("limits", "MapLimits", False),
        2: ("cells", "packed_int32", False),
        3: ("known_cells_box", "CellBox", False),
        4: ("probability_grid_2d", "Empty", False),
        5: ("tsdf_2d", "Tsdf2D", False),
        6: ("min_correspondence_cost", "float", False),
        7: ("max_correspondence_cost", "float", False),
    },
    "Empty": {},
    "MapLimits": {
        1: ("resolution", "double", False),
        2: ("max", "Vector2d", False),
        3: ("cell_limits", "CellLimits", False),
    },
    "CellLimits": {1: ("num_x_cells", "int32", False), 2: ("num_y_cells", "int32", False)},
    "CellBox": {
        1: ("max_x", "int32", False),
        2: ("max_y", "int32", False),
        3: ("min_x", "int32", False),
        4: ("min_y", "int32", False),
    },
    "Tsdf2D": {
        1: ("truncation_distance", "float", False),
        2: ("max_weight", "float", False),
        3: ("weight_cells", "packed_int32", False),
    },
    "HybridGrid": {
        1: ("resolution", "float", False),
        3: ("x_indices", "packed_sint32", False),
        4: ("y_indices", "packed_sint32", False),
        5: ("z_indices", "packed_sint32", False),
        6: ("values", "packed_int32", False),
    },
    "Node": {1: ("node_id", "NodeId", False), 5: ("node_data", "TrajectoryNodeData", False)},
    "TrajectoryNodeData": {
        1: ("timestamp", "int64", False),
        2: ("gravity_alignment", "Quaterniond", False),
        3: ("filtered_gravity_aligned_point_cloud", "CompressedPointCloud", False),
        4: ("high_resolution_point_cloud", "CompressedPointCloud", False),
        5: ("low_resolution_point_cloud", "CompressedPointCloud", False),
        6: ("rotational_scan_matcher_histogram", "packed_float", False),
        7: ("local_pose", "Rigid3d", False),
    },
    "CompressedPointCloud": {
        1: ("num_points", "int32", False),
        3: ("point_data", "packed_int32", False),
    },
    "TrajectoryData": {
        1: ("trajectory_id", "int32", False),
        2: ("gravity_constant", "double", False),
        3: ("imu_calibration", "Quaterniond", False),
        4: ("fixed_frame_origin_in_map", "Rigid3d", False),
    },
    "ImuDataRecord": {1: ("trajectory_id", "int32", False), 2: ("imu_data", "ImuData", False)},
    "ImuData": {
        1: ("timestamp", "int64", False),
        2: ("linear_acceleration", "Vector3d", False),
        3: ("angular_velocity", "Vector3d", False),
    },
    "OdometryDataRecord": {
        1: ("trajectory_id", "int32", False),
        2: ("odometry_data", "TimedPose", False),
    },
    "FixedFramePoseDataRecord": {
        1: ("trajectory_id", "int32", False),
        2: ("fixed_frame_pose_data", "TimedPose", False),
    },
    "TimedPose": _TIMED_POSE,
    "LandmarkDataRecord": {
        1: ("trajectory_id", "int32", False),
        2: ("landmark_data", "LandmarkData", False),
    },
    "LandmarkData": {
        1: ("timestamp", "int64", False),
        2: ("landmark_observations", "LandmarkObservation", True),
    },
    "LandmarkObservation": {
        1: ("id", "bytes", False),
        2: ("landmark_to_tracking_transform", "Rigid3d", False),
        3: ("translation_weight", "double", False),
        4: ("rotation_weight", "double", False),
    },
}

#: The message type of each record kind's body.
KIND_MESSAGES: Final = {
    "header": "SerializationHeader",
    "pose_graph": "PoseGraph",
    "all_trajectory_builder_options": "AllTrajectoryBuilderOptions",
    "submap": "Submap",
    "node": "Node",
    "trajectory_data": "TrajectoryData",
    "imu_data": "ImuDataRecord",
    "odometry_data": "OdometryDataRecord",
    "fixed_frame_pose_data": "FixedFramePoseDataRecord",
    "landmark_data": "LandmarkDataRecord",
}

__all__ = ["KIND_MESSAGES", "SCHEMA", "Spec"]
