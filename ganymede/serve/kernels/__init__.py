"""The server's kernels: the ``manager`` with their host comms, their ``websocket`` and ``output``.

``host_rooms`` makes their ``self.*`` edits; ``notebooks`` finds or starts a notebook's kernel.
"""
