"""The message definitions of ROS 2 Humble's common packages, bundled.

rosbag2 stored no definitions before Iron (sqlite3 schema < 4), so a Humble bag names its
types only. Writing such a bag as a ROS1 bag needs each type's fields; for the packages
every robot uses, they are here (the `.msg` fields and constants of Humble, comments
dropped), taken from `rosbags`' Humble type store (`rosbags.typesys.Stores.ROS2_HUMBLE`,
rosbags 0.11.9) and checked against it by `tests/converters/ros/test_stock.py`.
A bag's own definition always wins over these.
"""

from __future__ import annotations

from typing import Final

PACKAGES: Final = (
    "builtin_interfaces",
    "std_msgs",
    "geometry_msgs",
    "sensor_msgs",
    "nav_msgs",
    "tf2_msgs",
    "rcl_interfaces",
    "rosgraph_msgs",
    "diagnostic_msgs",
    "visualization_msgs",
    "shape_msgs",
    "trajectory_msgs",
    "unique_identifier_msgs",
    "stereo_msgs",
)

#: `pkg/msg/Type` -> its own `.msg` text (`ros2msg`).
STOCK: Final[dict[str, str]] = {
    "builtin_interfaces/msg/Duration": ("int32 sec\nuint32 nanosec\n"),
    "builtin_interfaces/msg/Time": ("int32 sec\nuint32 nanosec\n"),
    "diagnostic_msgs/msg/DiagnosticArray": (
        "std_msgs/Header header\ndiagnostic_msgs/DiagnosticStatus[] status\n"
    ),
    "diagnostic_msgs/msg/DiagnosticStatus": (
        "byte OK=0\n"
        "byte WARN=1\n"
        "byte ERROR=2\n"
        "byte STALE=3\n"
        "byte level\n"
        "string name\n"
        "string message\n"
        "string hardware_id\n"
        "diagnostic_msgs/KeyValue[] values\n"
    ),
    "diagnostic_msgs/msg/KeyValue": ("string key\nstring value\n"),
    "geometry_msgs/msg/Accel": ("geometry_msgs/Vector3 linear\ngeometry_msgs/Vector3 angular\n"),
    "geometry_msgs/msg/AccelStamped": ("std_msgs/Header header\ngeometry_msgs/Accel accel\n"),
    "geometry_msgs/msg/AccelWithCovariance": (
        "geometry_msgs/Accel accel\nfloat64[36] covariance\n"
    ),
    "geometry_msgs/msg/AccelWithCovarianceStamped": (
        "std_msgs/Header header\ngeometry_msgs/AccelWithCovariance accel\n"
    ),
    "geometry_msgs/msg/Inertia": (
        "float64 m\n"
        "geometry_msgs/Vector3 com\n"
        "float64 ixx\n"
        "float64 ixy\n"
        "float64 ixz\n"
        "float64 iyy\n"
        "float64 iyz\n"
        "float64 izz\n"
    ),
    "geometry_msgs/msg/InertiaStamped": ("std_msgs/Header header\ngeometry_msgs/Inertia inertia\n"),
    "geometry_msgs/msg/Point": ("float64 x\nfloat64 y\nfloat64 z\n"),
    "geometry_msgs/msg/Point32": ("float32 x\nfloat32 y\nfloat32 z\n"),
    "geometry_msgs/msg/PointStamped": ("std_msgs/Header header\ngeometry_msgs/Point point\n"),
    "geometry_msgs/msg/Polygon": "geometry_msgs/Point32[] points\n",
    "geometry_msgs/msg/PolygonStamped": ("std_msgs/Header header\ngeometry_msgs/Polygon polygon\n"),
    "geometry_msgs/msg/Pose": (
        "geometry_msgs/Point position\ngeometry_msgs/Quaternion orientation\n"
    ),
    "geometry_msgs/msg/Pose2D": ("float64 x\nfloat64 y\nfloat64 theta\n"),
    "geometry_msgs/msg/PoseArray": ("std_msgs/Header header\ngeometry_msgs/Pose[] poses\n"),
    "geometry_msgs/msg/PoseStamped": ("std_msgs/Header header\ngeometry_msgs/Pose pose\n"),
    "geometry_msgs/msg/PoseWithCovariance": ("geometry_msgs/Pose pose\nfloat64[36] covariance\n"),
    "geometry_msgs/msg/PoseWithCovarianceStamped": (
        "std_msgs/Header header\ngeometry_msgs/PoseWithCovariance pose\n"
    ),
    "geometry_msgs/msg/Quaternion": ("float64 x\nfloat64 y\nfloat64 z\nfloat64 w\n"),
    "geometry_msgs/msg/QuaternionStamped": (
        "std_msgs/Header header\ngeometry_msgs/Quaternion quaternion\n"
    ),
    "geometry_msgs/msg/Transform": (
        "geometry_msgs/Vector3 translation\ngeometry_msgs/Quaternion rotation\n"
    ),
    "geometry_msgs/msg/TransformStamped": (
        "std_msgs/Header header\nstring child_frame_id\ngeometry_msgs/Transform transform\n"
    ),
    "geometry_msgs/msg/Twist": ("geometry_msgs/Vector3 linear\ngeometry_msgs/Vector3 angular\n"),
    "geometry_msgs/msg/TwistStamped": ("std_msgs/Header header\ngeometry_msgs/Twist twist\n"),
    "geometry_msgs/msg/TwistWithCovariance": (
        "geometry_msgs/Twist twist\nfloat64[36] covariance\n"
    ),
    "geometry_msgs/msg/TwistWithCovarianceStamped": (
        "std_msgs/Header header\ngeometry_msgs/TwistWithCovariance twist\n"
    ),
    "geometry_msgs/msg/Vector3": ("float64 x\nfloat64 y\nfloat64 z\n"),
    "geometry_msgs/msg/Vector3Stamped": ("std_msgs/Header header\ngeometry_msgs/Vector3 vector\n"),
    "geometry_msgs/msg/Wrench": ("geometry_msgs/Vector3 force\ngeometry_msgs/Vector3 torque\n"),
    "geometry_msgs/msg/WrenchStamped": ("std_msgs/Header header\ngeometry_msgs/Wrench wrench\n"),
    "nav_msgs/msg/GridCells": (
        "std_msgs/Header header\n"
        "float32 cell_width\n"
        "float32 cell_height\n"
        "geometry_msgs/Point[] cells\n"
    ),
    "nav_msgs/msg/MapMetaData": (
        "builtin_interfaces/Time map_load_time\n"
        "float32 resolution\n"
        "uint32 width\n"
        "uint32 height\n"
        "geometry_msgs/Pose origin\n"
    ),
    "nav_msgs/msg/OccupancyGrid": (
        "std_msgs/Header header\nnav_msgs/MapMetaData info\nint8[] data\n"
    ),
    "nav_msgs/msg/Odometry": (
        "std_msgs/Header header\n"
        "string child_frame_id\n"
        "geometry_msgs/PoseWithCovariance pose\n"
        "geometry_msgs/TwistWithCovariance twist\n"
    ),
    "nav_msgs/msg/Path": ("std_msgs/Header header\ngeometry_msgs/PoseStamped[] poses\n"),
    "rcl_interfaces/msg/FloatingPointRange": (
        "float64 from_value\nfloat64 to_value\nfloat64 step\n"
    ),
    "rcl_interfaces/msg/IntegerRange": ("int64 from_value\nint64 to_value\nuint64 step\n"),
    "rcl_interfaces/msg/ListParametersResult": ("string[] names\nstring[] prefixes\n"),
    "rcl_interfaces/msg/Log": (
        "byte DEBUG=10\n"
        "byte INFO=20\n"
        "byte WARN=30\n"
        "byte ERROR=40\n"
        "byte FATAL=50\n"
        "builtin_interfaces/Time stamp\n"
        "uint8 level\n"
        "string name\n"
        "string msg\n"
        "string file\n"
        "string function\n"
        "uint32 line\n"
    ),
    "rcl_interfaces/msg/Parameter": ("string name\nrcl_interfaces/ParameterValue value\n"),
    "rcl_interfaces/msg/ParameterDescriptor": (
        "string name\n"
        "uint8 type\n"
        "string description\n"
        "string additional_constraints\n"
        "bool read_only\n"
        "bool dynamic_typing\n"
        "rcl_interfaces/FloatingPointRange[<=1] floating_point_range\n"
        "rcl_interfaces/IntegerRange[<=1] integer_range\n"
    ),
    "rcl_interfaces/msg/ParameterEvent": (
        "builtin_interfaces/Time stamp\n"
        "string node\n"
        "rcl_interfaces/Parameter[] new_parameters\n"
        "rcl_interfaces/Parameter[] changed_parameters\n"
        "rcl_interfaces/Parameter[] deleted_parameters\n"
    ),
    "rcl_interfaces/msg/ParameterEventDescriptors": (
        "rcl_interfaces/ParameterDescriptor[] new_parameters\n"
        "rcl_interfaces/ParameterDescriptor[] changed_parameters\n"
        "rcl_interfaces/ParameterDescriptor[] deleted_parameters\n"
    ),
    "rcl_interfaces/msg/ParameterType": (
        "uint8 PARAMETER_NOT_SET=0\n"
        "uint8 PARAMETER_BOOL=1\n"
        "uint8 PARAMETER_INTEGER=2\n"
        "uint8 PARAMETER_DOUBLE=3\n"
        "uint8 PARAMETER_STRING=4\n"
        "uint8 PARAMETER_BYTE_ARRAY=5\n"
        "uint8 PARAMETER_BOOL_ARRAY=6\n"
        "uint8 PARAMETER_INTEGER_ARRAY=7\n"
        "uint8 PARAMETER_DOUBLE_ARRAY=8\n"
        "uint8 PARAMETER_STRING_ARRAY=9\n"
    ),
    "rcl_interfaces/msg/ParameterValue": (
        "uint8 type\n"
        "bool bool_value\n"
        "int64 integer_value\n"
        "float64 double_value\n"
        "string string_value\n"
        "byte[] byte_array_value\n"
        "bool[] bool_array_value\n"
        "int64[] integer_array_value\n"
        "float64[] double_array_value\n"
        "string[] string_array_value\n"
    ),
    "rcl_interfaces/msg/SetParametersResult": ("bool successful\nstring reason\n"),
    "rosgraph_msgs/msg/Clock": "builtin_interfaces/Time clock\n",
    "sensor_msgs/msg/BatteryState": (
        "uint8 POWER_SUPPLY_STATUS_UNKNOWN=0\n"
        "uint8 POWER_SUPPLY_STATUS_CHARGING=1\n"
        "uint8 POWER_SUPPLY_STATUS_DISCHARGING=2\n"
        "uint8 POWER_SUPPLY_STATUS_NOT_CHARGING=3\n"
        "uint8 POWER_SUPPLY_STATUS_FULL=4\n"
        "uint8 POWER_SUPPLY_HEALTH_UNKNOWN=0\n"
        "uint8 POWER_SUPPLY_HEALTH_GOOD=1\n"
        "uint8 POWER_SUPPLY_HEALTH_OVERHEAT=2\n"
        "uint8 POWER_SUPPLY_HEALTH_DEAD=3\n"
        "uint8 POWER_SUPPLY_HEALTH_OVERVOLTAGE=4\n"
        "uint8 POWER_SUPPLY_HEALTH_UNSPEC_FAILURE=5\n"
        "uint8 POWER_SUPPLY_HEALTH_COLD=6\n"
        "uint8 POWER_SUPPLY_HEALTH_WATCHDOG_TIMER_EXPIRE=7\n"
        "uint8 POWER_SUPPLY_HEALTH_SAFETY_TIMER_EXPIRE=8\n"
        "uint8 POWER_SUPPLY_TECHNOLOGY_UNKNOWN=0\n"
        "uint8 POWER_SUPPLY_TECHNOLOGY_NIMH=1\n"
        "uint8 POWER_SUPPLY_TECHNOLOGY_LION=2\n"
        "uint8 POWER_SUPPLY_TECHNOLOGY_LIPO=3\n"
        "uint8 POWER_SUPPLY_TECHNOLOGY_LIFE=4\n"
        "uint8 POWER_SUPPLY_TECHNOLOGY_NICD=5\n"
        "uint8 POWER_SUPPLY_TECHNOLOGY_LIMN=6\n"
        "std_msgs/Header header\n"
        "float32 voltage\n"
        "float32 temperature\n"
        "float32 current\n"
        "float32 charge\n"
        "float32 capacity\n"
        "float32 design_capacity\n"
        "float32 percentage\n"
        "uint8 power_supply_status\n"
        "uint8 power_supply_health\n"
        "uint8 power_supply_technology\n"
        "bool present\n"
        "float32[] cell_voltage\n"
        "float32[] cell_temperature\n"
        "string location\n"
        "string serial_number\n"
    ),
    "sensor_msgs/msg/CameraInfo": (
        "std_msgs/Header header\n"
        "uint32 height\n"
        "uint32 width\n"
        "string distortion_model\n"
        "float64[] d\n"
        "float64[9] k\n"
        "float64[9] r\n"
        "float64[12] p\n"
        "uint32 binning_x\n"
        "uint32 binning_y\n"
        "sensor_msgs/RegionOfInterest roi\n"
    ),
    "sensor_msgs/msg/ChannelFloat32": ("string name\nfloat32[] values\n"),
    "sensor_msgs/msg/CompressedImage": ("std_msgs/Header header\nstring format\nuint8[] data\n"),
    "sensor_msgs/msg/FluidPressure": (
        "std_msgs/Header header\nfloat64 fluid_pressure\nfloat64 variance\n"
    ),
    "sensor_msgs/msg/Illuminance": (
        "std_msgs/Header header\nfloat64 illuminance\nfloat64 variance\n"
    ),
    "sensor_msgs/msg/Image": (
        "std_msgs/Header header\n"
        "uint32 height\n"
        "uint32 width\n"
        "string encoding\n"
        "uint8 is_bigendian\n"
        "uint32 step\n"
        "uint8[] data\n"
    ),
    "sensor_msgs/msg/Imu": (
        "std_msgs/Header header\n"
        "geometry_msgs/Quaternion orientation\n"
        "float64[9] orientation_covariance\n"
        "geometry_msgs/Vector3 angular_velocity\n"
        "float64[9] angular_velocity_covariance\n"
        "geometry_msgs/Vector3 linear_acceleration\n"
        "float64[9] linear_acceleration_covariance\n"
    ),
    "sensor_msgs/msg/JointState": (
        "std_msgs/Header header\n"
        "string[] name\n"
        "float64[] position\n"
        "float64[] velocity\n"
        "float64[] effort\n"
    ),
    "sensor_msgs/msg/Joy": ("std_msgs/Header header\nfloat32[] axes\nint32[] buttons\n"),
    "sensor_msgs/msg/JoyFeedback": (
        "uint8 TYPE_LED=0\n"
        "uint8 TYPE_RUMBLE=1\n"
        "uint8 TYPE_BUZZER=2\n"
        "uint8 type\n"
        "uint8 id\n"
        "float32 intensity\n"
    ),
    "sensor_msgs/msg/JoyFeedbackArray": "sensor_msgs/JoyFeedback[] array\n",
    "sensor_msgs/msg/LaserEcho": "float32[] echoes\n",
    "sensor_msgs/msg/LaserScan": (
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
    ),
    "sensor_msgs/msg/MagneticField": (
        "std_msgs/Header header\n"
        "geometry_msgs/Vector3 magnetic_field\n"
        "float64[9] magnetic_field_covariance\n"
    ),
    "sensor_msgs/msg/MultiDOFJointState": (
        "std_msgs/Header header\n"
        "string[] joint_names\n"
        "geometry_msgs/Transform[] transforms\n"
        "geometry_msgs/Twist[] twist\n"
        "geometry_msgs/Wrench[] wrench\n"
    ),
    "sensor_msgs/msg/MultiEchoLaserScan": (
        "std_msgs/Header header\n"
        "float32 angle_min\n"
        "float32 angle_max\n"
        "float32 angle_increment\n"
        "float32 time_increment\n"
        "float32 scan_time\n"
        "float32 range_min\n"
        "float32 range_max\n"
        "sensor_msgs/LaserEcho[] ranges\n"
        "sensor_msgs/LaserEcho[] intensities\n"
    ),
    "sensor_msgs/msg/NavSatFix": (
        "uint8 COVARIANCE_TYPE_UNKNOWN=0\n"
        "uint8 COVARIANCE_TYPE_APPROXIMATED=1\n"
        "uint8 COVARIANCE_TYPE_DIAGONAL_KNOWN=2\n"
        "uint8 COVARIANCE_TYPE_KNOWN=3\n"
        "std_msgs/Header header\n"
        "sensor_msgs/NavSatStatus status\n"
        "float64 latitude\n"
        "float64 longitude\n"
        "float64 altitude\n"
        "float64[9] position_covariance\n"
        "uint8 position_covariance_type\n"
    ),
    "sensor_msgs/msg/NavSatStatus": (
        "int8 STATUS_NO_FIX=-1\n"
        "int8 STATUS_FIX=0\n"
        "int8 STATUS_SBAS_FIX=1\n"
        "int8 STATUS_GBAS_FIX=2\n"
        "uint16 SERVICE_GPS=1\n"
        "uint16 SERVICE_GLONASS=2\n"
        "uint16 SERVICE_COMPASS=4\n"
        "uint16 SERVICE_GALILEO=8\n"
        "int8 status\n"
        "uint16 service\n"
    ),
    "sensor_msgs/msg/PointCloud": (
        "std_msgs/Header header\n"
        "geometry_msgs/Point32[] points\n"
        "sensor_msgs/ChannelFloat32[] channels\n"
    ),
    "sensor_msgs/msg/PointCloud2": (
        "std_msgs/Header header\n"
        "uint32 height\n"
        "uint32 width\n"
        "sensor_msgs/PointField[] fields\n"
        "bool is_bigendian\n"
        "uint32 point_step\n"
        "uint32 row_step\n"
        "uint8[] data\n"
        "bool is_dense\n"
    ),
    "sensor_msgs/msg/PointField": (
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
    "sensor_msgs/msg/Range": (
        "uint8 ULTRASOUND=0\n"
        "uint8 INFRARED=1\n"
        "std_msgs/Header header\n"
        "uint8 radiation_type\n"
        "float32 field_of_view\n"
        "float32 min_range\n"
        "float32 max_range\n"
        "float32 range\n"
    ),
    "sensor_msgs/msg/RegionOfInterest": (
        "uint32 x_offset\nuint32 y_offset\nuint32 height\nuint32 width\nbool do_rectify\n"
    ),
    "sensor_msgs/msg/RelativeHumidity": (
        "std_msgs/Header header\nfloat64 relative_humidity\nfloat64 variance\n"
    ),
    "sensor_msgs/msg/Temperature": (
        "std_msgs/Header header\nfloat64 temperature\nfloat64 variance\n"
    ),
    "sensor_msgs/msg/TimeReference": (
        "std_msgs/Header header\nbuiltin_interfaces/Time time_ref\nstring source\n"
    ),
    "shape_msgs/msg/Mesh": (
        "shape_msgs/MeshTriangle[] triangles\ngeometry_msgs/Point[] vertices\n"
    ),
    "shape_msgs/msg/MeshTriangle": "uint32[3] vertex_indices\n",
    "shape_msgs/msg/Plane": "float64[4] coef\n",
    "shape_msgs/msg/SolidPrimitive": (
        "uint8 BOX=1\n"
        "uint8 SPHERE=2\n"
        "uint8 CYLINDER=3\n"
        "uint8 CONE=4\n"
        "uint8 PRISM=5\n"
        "uint8 BOX_X=0\n"
        "uint8 BOX_Y=1\n"
        "uint8 BOX_Z=2\n"
        "uint8 SPHERE_RADIUS=0\n"
        "uint8 CYLINDER_HEIGHT=0\n"
        "uint8 CYLINDER_RADIUS=1\n"
        "uint8 CONE_HEIGHT=0\n"
        "uint8 CONE_RADIUS=1\n"
        "uint8 PRISM_HEIGHT=0\n"
        "uint8 type\n"
        "float64[<=3] dimensions\n"
        "geometry_msgs/Polygon polygon\n"
    ),
    "std_msgs/msg/Bool": "bool data\n",
    "std_msgs/msg/Byte": "byte data\n",
    "std_msgs/msg/ByteMultiArray": ("std_msgs/MultiArrayLayout layout\nbyte[] data\n"),
    "std_msgs/msg/Char": "char data\n",
    "std_msgs/msg/ColorRGBA": ("float32 r\nfloat32 g\nfloat32 b\nfloat32 a\n"),
    "std_msgs/msg/Empty": "",
    "std_msgs/msg/Float32": "float32 data\n",
    "std_msgs/msg/Float32MultiArray": ("std_msgs/MultiArrayLayout layout\nfloat32[] data\n"),
    "std_msgs/msg/Float64": "float64 data\n",
    "std_msgs/msg/Float64MultiArray": ("std_msgs/MultiArrayLayout layout\nfloat64[] data\n"),
    "std_msgs/msg/Header": ("builtin_interfaces/Time stamp\nstring frame_id\n"),
    "std_msgs/msg/Int16": "int16 data\n",
    "std_msgs/msg/Int16MultiArray": ("std_msgs/MultiArrayLayout layout\nint16[] data\n"),
    "std_msgs/msg/Int32": "int32 data\n",
    "std_msgs/msg/Int32MultiArray": ("std_msgs/MultiArrayLayout layout\nint32[] data\n"),
    "std_msgs/msg/Int64": "int64 data\n",
    "std_msgs/msg/Int64MultiArray": ("std_msgs/MultiArrayLayout layout\nint64[] data\n"),
    "std_msgs/msg/Int8": "int8 data\n",
    "std_msgs/msg/Int8MultiArray": ("std_msgs/MultiArrayLayout layout\nint8[] data\n"),
    "std_msgs/msg/MultiArrayDimension": ("string label\nuint32 size\nuint32 stride\n"),
    "std_msgs/msg/MultiArrayLayout": ("std_msgs/MultiArrayDimension[] dim\nuint32 data_offset\n"),
    "std_msgs/msg/String": "string data\n",
    "std_msgs/msg/UInt16": "uint16 data\n",
    "std_msgs/msg/UInt16MultiArray": ("std_msgs/MultiArrayLayout layout\nuint16[] data\n"),
    "std_msgs/msg/UInt32": "uint32 data\n",
    "std_msgs/msg/UInt32MultiArray": ("std_msgs/MultiArrayLayout layout\nuint32[] data\n"),
    "std_msgs/msg/UInt64": "uint64 data\n",
    "std_msgs/msg/UInt64MultiArray": ("std_msgs/MultiArrayLayout layout\nuint64[] data\n"),
    "std_msgs/msg/UInt8": "uint8 data\n",
    "std_msgs/msg/UInt8MultiArray": ("std_msgs/MultiArrayLayout layout\nuint8[] data\n"),
    "stereo_msgs/msg/DisparityImage": (
        "std_msgs/Header header\n"
        "sensor_msgs/Image image\n"
        "float32 f\n"
        "float32 t\n"
        "sensor_msgs/RegionOfInterest valid_window\n"
        "float32 min_disparity\n"
        "float32 max_disparity\n"
        "float32 delta_d\n"
    ),
    "tf2_msgs/msg/TF2Error": (
        "uint8 NO_ERROR=0\n"
        "uint8 LOOKUP_ERROR=1\n"
        "uint8 CONNECTIVITY_ERROR=2\n"
        "uint8 EXTRAPOLATION_ERROR=3\n"
        "uint8 INVALID_ARGUMENT_ERROR=4\n"
        "uint8 TIMEOUT_ERROR=5\n"
        "uint8 TRANSFORM_ERROR=6\n"
        "uint8 error\n"
        "string error_string\n"
    ),
    "tf2_msgs/msg/TFMessage": "geometry_msgs/TransformStamped[] transforms\n",
    "trajectory_msgs/msg/JointTrajectory": (
        "std_msgs/Header header\n"
        "string[] joint_names\n"
        "trajectory_msgs/JointTrajectoryPoint[] points\n"
    ),
    "trajectory_msgs/msg/JointTrajectoryPoint": (
        "float64[] positions\n"
        "float64[] velocities\n"
        "float64[] accelerations\n"
        "float64[] effort\n"
        "builtin_interfaces/Duration time_from_start\n"
    ),
    "trajectory_msgs/msg/MultiDOFJointTrajectory": (
        "std_msgs/Header header\n"
        "string[] joint_names\n"
        "trajectory_msgs/MultiDOFJointTrajectoryPoint[] points\n"
    ),
    "trajectory_msgs/msg/MultiDOFJointTrajectoryPoint": (
        "geometry_msgs/Transform[] transforms\n"
        "geometry_msgs/Twist[] velocities\n"
        "geometry_msgs/Twist[] accelerations\n"
        "builtin_interfaces/Duration time_from_start\n"
    ),
    "unique_identifier_msgs/msg/UUID": "uint8[16] uuid\n",
    "visualization_msgs/msg/ImageMarker": (
        "int32 CIRCLE=0\n"
        "int32 LINE_STRIP=1\n"
        "int32 LINE_LIST=2\n"
        "int32 POLYGON=3\n"
        "int32 POINTS=4\n"
        "int32 ADD=0\n"
        "int32 REMOVE=1\n"
        "std_msgs/Header header\n"
        "string ns\n"
        "int32 id\n"
        "int32 type\n"
        "int32 action\n"
        "geometry_msgs/Point position\n"
        "float32 scale\n"
        "std_msgs/ColorRGBA outline_color\n"
        "uint8 filled\n"
        "std_msgs/ColorRGBA fill_color\n"
        "builtin_interfaces/Duration lifetime\n"
        "geometry_msgs/Point[] points\n"
        "std_msgs/ColorRGBA[] outline_colors\n"
    ),
    "visualization_msgs/msg/InteractiveMarker": (
        "std_msgs/Header header\n"
        "geometry_msgs/Pose pose\n"
        "string name\n"
        "string description\n"
        "float32 scale\n"
        "visualization_msgs/MenuEntry[] menu_entries\n"
        "visualization_msgs/InteractiveMarkerControl[] controls\n"
    ),
    "visualization_msgs/msg/InteractiveMarkerControl": (
        "uint8 INHERIT=0\n"
        "uint8 FIXED=1\n"
        "uint8 VIEW_FACING=2\n"
        "uint8 NONE=0\n"
        "uint8 MENU=1\n"
        "uint8 BUTTON=2\n"
        "uint8 MOVE_AXIS=3\n"
        "uint8 MOVE_PLANE=4\n"
        "uint8 ROTATE_AXIS=5\n"
        "uint8 MOVE_ROTATE=6\n"
        "uint8 MOVE_3D=7\n"
        "uint8 ROTATE_3D=8\n"
        "uint8 MOVE_ROTATE_3D=9\n"
        "string name\n"
        "geometry_msgs/Quaternion orientation\n"
        "uint8 orientation_mode\n"
        "uint8 interaction_mode\n"
        "bool always_visible\n"
        "visualization_msgs/Marker[] markers\n"
        "bool independent_marker_orientation\n"
        "string description\n"
    ),
    "visualization_msgs/msg/InteractiveMarkerFeedback": (
        "uint8 KEEP_ALIVE=0\n"
        "uint8 POSE_UPDATE=1\n"
        "uint8 MENU_SELECT=2\n"
        "uint8 BUTTON_CLICK=3\n"
        "uint8 MOUSE_DOWN=4\n"
        "uint8 MOUSE_UP=5\n"
        "std_msgs/Header header\n"
        "string client_id\n"
        "string marker_name\n"
        "string control_name\n"
        "uint8 event_type\n"
        "geometry_msgs/Pose pose\n"
        "uint32 menu_entry_id\n"
        "geometry_msgs/Point mouse_point\n"
        "bool mouse_point_valid\n"
    ),
    "visualization_msgs/msg/InteractiveMarkerInit": (
        "string server_id\nuint64 seq_num\nvisualization_msgs/InteractiveMarker[] markers\n"
    ),
    "visualization_msgs/msg/InteractiveMarkerPose": (
        "std_msgs/Header header\ngeometry_msgs/Pose pose\nstring name\n"
    ),
    "visualization_msgs/msg/InteractiveMarkerUpdate": (
        "uint8 KEEP_ALIVE=0\n"
        "uint8 UPDATE=1\n"
        "string server_id\n"
        "uint64 seq_num\n"
        "uint8 type\n"
        "visualization_msgs/InteractiveMarker[] markers\n"
        "visualization_msgs/InteractiveMarkerPose[] poses\n"
        "string[] erases\n"
    ),
    "visualization_msgs/msg/Marker": (
        "int32 ARROW=0\n"
        "int32 CUBE=1\n"
        "int32 SPHERE=2\n"
        "int32 CYLINDER=3\n"
        "int32 LINE_STRIP=4\n"
        "int32 LINE_LIST=5\n"
        "int32 CUBE_LIST=6\n"
        "int32 SPHERE_LIST=7\n"
        "int32 POINTS=8\n"
        "int32 TEXT_VIEW_FACING=9\n"
        "int32 MESH_RESOURCE=10\n"
        "int32 TRIANGLE_LIST=11\n"
        "int32 ADD=0\n"
        "int32 MODIFY=0\n"
        "int32 DELETE=2\n"
        "int32 DELETEALL=3\n"
        "std_msgs/Header header\n"
        "string ns\n"
        "int32 id\n"
        "int32 type\n"
        "int32 action\n"
        "geometry_msgs/Pose pose\n"
        "geometry_msgs/Vector3 scale\n"
        "std_msgs/ColorRGBA color\n"
        "builtin_interfaces/Duration lifetime\n"
        "bool frame_locked\n"
        "geometry_msgs/Point[] points\n"
        "std_msgs/ColorRGBA[] colors\n"
        "string texture_resource\n"
        "sensor_msgs/CompressedImage texture\n"
        "visualization_msgs/UVCoordinate[] uv_coordinates\n"
        "string text\n"
        "string mesh_resource\n"
        "visualization_msgs/MeshFile mesh_file\n"
        "bool mesh_use_embedded_materials\n"
    ),
    "visualization_msgs/msg/MarkerArray": "visualization_msgs/Marker[] markers\n",
    "visualization_msgs/msg/MenuEntry": (
        "uint8 FEEDBACK=0\n"
        "uint8 ROSRUN=1\n"
        "uint8 ROSLAUNCH=2\n"
        "uint32 id\n"
        "uint32 parent_id\n"
        "string title\n"
        "string command\n"
        "uint8 command_type\n"
    ),
    "visualization_msgs/msg/MeshFile": ("string filename\nuint8[] data\n"),
    "visualization_msgs/msg/UVCoordinate": ("float32 u\nfloat32 v\n"),
}
