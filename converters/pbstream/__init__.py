"""Google Cartographer `.pbstream` saved SLAM states."""
