"""Ganymede."""
