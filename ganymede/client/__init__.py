"""Clients of a running server: finding it (``discover``) and calling its HTTP API (``http``).

Shared by ``trust``, ``grant``, ``mcp`` and the CLI; it imports nothing of ``ganymede.serve``.
"""
