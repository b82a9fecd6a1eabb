"""What ROS1 and ROS 2 bags share: the ROS picture (`rosplot`), topic lines for `cat`/`play`,
rosbag2's sort order (`cxxsort`), nesting bounds (`depth`), exports from any recording."""
