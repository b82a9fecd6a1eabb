"""Tests of the ROS family package (converters/ros): what ROS1 and ROS 2 share."""
