"""The ROS family: ROS1 bags (`ros1`, registered as `rosbag`) and ROS 2 bags (`ros2`).

One package so that the two can share what crossing between them needs (`bridge`): the
type and field mapping, and each side's writer fed from the other side's messages. Every
other converter stays independent of this one, and this one of them.
"""
