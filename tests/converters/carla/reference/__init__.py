"""Reference implementations that only tests (and benchmarks) compare nanorec with."""
