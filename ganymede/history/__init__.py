"""The history of each document: its updates with who made them and when, kept bounded.

``points`` is the pure part (what a point is, which points the bounds drop or compact, the
document as of a point); ``store`` keeps them in SQLite in the Jupyter data dir, keyed by file id.
The history is a record: nothing replays it into a live room, so whatever happens to it, a
notebook opens as its file says.
"""

from __future__ import annotations

from ganymede.history.points import Bounds, NewPoint, Plan, PointInfo, PointKind, plan, replay
from ganymede.history.store import HistoryStore

__all__ = [
    "Bounds",
    "HistoryStore",
    "NewPoint",
    "Plan",
    "PointInfo",
    "PointKind",
    "plan",
    "replay",
]
