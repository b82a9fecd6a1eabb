"""What the command line says of the ROS formats before importing any of them: their titles,
which `nanorec --help` lists `nanorec rosbag` and `nanorec ros2` by (see
`nanorec.contract.COMMANDS_GROUP`)."""

ROS1_TITLE = "ROS1 bag"
ROS2_TITLE = "ROS 2 bag"
#: The ROS 2 releases whose message definitions are bundled (`ros2/bundle.py`), named by
#: `--distro` (here: the verbs' command lines name them without importing the bundle).
ROS2_DISTROS = ("humble", "iron", "jazzy", "kilted", "lyrical", "rolling")
