"""Reliability scripts: each runs as ``python -m stress.<name> [--long]`` and prints its figures."""
