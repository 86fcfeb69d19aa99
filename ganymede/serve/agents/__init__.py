"""The agent API's server half: sessions, marks, edit checks, change reports (``manager``).

``handlers`` is its ``/api/agent`` door; ``cells``, ``watch`` and ``room_edits`` its parts.
"""
