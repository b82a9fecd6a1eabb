"""ROS 2 bags (rosbag2): a bag directory (`metadata.yaml` + split storage files) or one storage
file, sqlite3 (`.db3`) or MCAP storage, converted losslessly and decoded without ROS."""
