"""``ganymede execute``: placeholder replaced by the execute work."""
