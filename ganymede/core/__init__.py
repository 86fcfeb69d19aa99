"""The notebooks core: list, read, search and results over a root, returning data, never text.

The host responder, the MCP tools and the CLI all call this one implementation.
"""
