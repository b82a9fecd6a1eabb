"""Crossing between ROS1 and ROS 2: the type mapping and byte-level transcoders.

`nanorec export X.bag --format ros2` and `export BAG2 --format ros1` need, per connection, the
other side's type name and definition text, and a way to turn each payload into the other
wire format. Decoding to values and encoding again would cost a dict per message and lose
nothing but time, so `types` pairs the two layouts once (`Crossing`) and `transcode` compiles
one function per type that copies bytes from one format to the other: ROS1 is packed, CDR
aligns each primitive to its size, and the few fields that differ (`Header.seq`, the
`rosgraph_msgs/Log` levels) are skipped, inserted or mapped on the way.
"""
