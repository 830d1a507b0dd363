"""Benchmarks: speed and memory goals live here, not in timed tests. Run with `make bench`."""
