"""Tests of the ROS 2 (rosbag2) converter."""
