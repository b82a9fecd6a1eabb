"""Definitions and md5sums of the ROS types the synthetic bags use (as ROS Noetic has them;
made with `rosbags`' typestore, which computes both as ROS does)."""

from __future__ import annotations

from typing import Final

#: type -> (md5sum, message_definition)
STOCK: Final[dict[str, tuple[str, str]]] = {
    "std_msgs/String": (
        "992ce8a1687cec8c8bd883ec73ca41d1",
        ("string data\n"),
    ),
    "std_msgs/Empty": (
        "d41d8cd98f00b204e9800998ecf8427e",
        (""),
    ),
    "sensor_msgs/Imu": (
        "6a62c6daae103f4ff57a132d6f95cec2",
        (
            "std_msgs/Header header\n"
            "geometry_msgs/Quaternion orientation\n"
            "float64[9] orientation_covariance\n"
            "geometry_msgs/Vector3 angular_velocity\n"
            "float64[9] angular_velocity_covariance\n"
            "geometry_msgs/Vector3 linear_acceleration\n"
            "float64[9] linear_acceleration_covariance\n"
            "================================================================================\n"
            "MSG: std_msgs/Header\n"
            "uint32 seq\n"
            "time stamp\n"
            "string frame_id\n"
            "================================================================================\n"
            "MSG: geometry_msgs/Quaternion\n"
            "float64 x\n"
            "float64 y\n"
            "float64 z\n"
            "float64 w\n"
            "================================================================================\n"
            "MSG: geometry_msgs/Vector3\n"
            "float64 x\n"
            "float64 y\n"
            "float64 z\n"
        ),
    ),
    "sensor_msgs/LaserScan": (
        "90c7ef2dc6895d81024acba2ac42f369",
        (
            "std_msgs/Header header\n"
            "float32 angle_min\n"
            "float32 angle_max\n"
            "float32 angle_increment\n"
            "float32 time_increment\n"
            "float32 scan_time\n"
            "float32 range_min\n"
            "float32 range_max\n"
            "float32[] ranges\n"
            "float32[] intensities\n"
            "================================================================================\n"
            "MSG: std_msgs/Header\n"
            "uint32 seq\n"
            "time stamp\n"
            "string frame_id\n"
        ),
    ),
    "sensor_msgs/PointCloud2": (
        "1158d486dd51d683ce2f1be655c3c181",
        (
            "std_msgs/Header header\n"
            "uint32 height\n"
            "uint32 width\n"
            "sensor_msgs/PointField[] fields\n"
            "bool is_bigendian\n"
            "uint32 point_step\n"
            "uint32 row_step\n"
            "uint8[] data\n"
            "bool is_dense\n"
            "================================================================================\n"
            "MSG: std_msgs/Header\n"
            "uint32 seq\n"
            "time stamp\n"
            "string frame_id\n"
            "================================================================================\n"
            "MSG: sensor_msgs/PointField\n"
            "uint8 INT8=1\n"
            "uint8 UINT8=2\n"
            "uint8 INT16=3\n"
            "uint8 UINT16=4\n"
            "uint8 INT32=5\n"
            "uint8 UINT32=6\n"
            "uint8 FLOAT32=7\n"
            "uint8 FLOAT64=8\n"
            "string name\n"
            "uint32 offset\n"
            "uint8 datatype\n"
            "uint32 count\n"
        ),
    ),
    "sensor_msgs/Image": (
        "060021388200f6f0f447d0fcd9c64743",
        (
            "std_msgs/Header header\n"
            "uint32 height\n"
            "uint32 width\n"
            "string encoding\n"
            "uint8 is_bigendian\n"
            "uint32 step\n"
            "uint8[] data\n"
            "================================================================================\n"
            "MSG: std_msgs/Header\n"
            "uint32 seq\n"
            "time stamp\n"
            "string frame_id\n"
        ),
    ),
    "nav_msgs/Odometry": (
        "cd5e73d190d741a2f92e81eda573aca7",
        (
            "std_msgs/Header header\n"
            "string child_frame_id\n"
            "geometry_msgs/PoseWithCovariance pose\n"
            "geometry_msgs/TwistWithCovariance twist\n"
            "================================================================================\n"
            "MSG: std_msgs/Header\n"
            "uint32 seq\n"
            "time stamp\n"
            "string frame_id\n"
            "================================================================================\n"
            "MSG: geometry_msgs/PoseWithCovariance\n"
            "geometry_msgs/Pose pose\n"
            "float64[36] covariance\n"
            "================================================================================\n"
            "MSG: geometry_msgs/Pose\n"
            "geometry_msgs/Point position\n"
            "geometry_msgs/Quaternion orientation\n"
            "================================================================================\n"
            "MSG: geometry_msgs/Point\n"
            "float64 x\n"
            "float64 y\n"
            "float64 z\n"
            "================================================================================\n"
            "MSG: geometry_msgs/Quaternion\n"
            "float64 x\n"
            "float64 y\n"
            "float64 z\n"
            "float64 w\n"
            "================================================================================\n"
            "MSG: geometry_msgs/TwistWithCovariance\n"
            "geometry_msgs/Twist twist\n"
            "float64[36] covariance\n"
            "================================================================================\n"
            "MSG: geometry_msgs/Twist\n"
            "geometry_msgs/Vector3 linear\n"
            "geometry_msgs/Vector3 angular\n"
            "================================================================================\n"
            "MSG: geometry_msgs/Vector3\n"
            "float64 x\n"
            "float64 y\n"
            "float64 z\n"
        ),
    ),
    "rosgraph_msgs/Log": (
        "acffd30cd6b6de30f120938c17c593fb",
        (
            "byte DEBUG=1\n"
            "byte INFO=2\n"
            "byte WARN=4\n"
            "byte ERROR=8\n"
            "byte FATAL=16\n"
            "std_msgs/Header header\n"
            "byte level\n"
            "string name\n"
            "string msg\n"
            "string file\n"
            "string function\n"
            "uint32 line\n"
            "string[] topics\n"
            "================================================================================\n"
            "MSG: std_msgs/Header\n"
            "uint32 seq\n"
            "time stamp\n"
            "string frame_id\n"
        ),
    ),
}
