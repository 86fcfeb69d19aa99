"""Points in a document's history, and which of them the bounds let go. Pure: no I/O.

A point is one batch of Yjs updates a room applied, with the time of its last update, who made
it and how (``PointKind``). Points come in *epochs*: one per room instance. An epoch starts with
the room's ``load`` (the whole document as read from the file) and every later point of it is an
update of that very document, so replaying an epoch's points from its start gives the document
as of any of them. Two epochs never mix: a room opened again after a restart is a new document
(new Yjs client ids), and replaying one epoch's updates over another's would duplicate content.

Bounds (``[history] max_age_days``, ``max_mb_per_document``) drop the oldest points first: whole
epochs that are over age or over size go; within the epoch that remains, the oldest points are
compacted into one ``snapshot`` point, the document as of the last of them, so the epoch still
replays.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pycrdt import Doc

SECONDS_PER_DAY = 86_400
BYTES_PER_MB = 1024 * 1024
# A history past its size bound is brought down to this share of it, so the next points do not
# set off another compaction at once.
SIZE_TARGET = 0.8


class PointKind(enum.StrEnum):
    """How a point came about. ``state`` points (the room's own bookkeeping: saved, dirty,
    path, trust marks) are replayed like any other but are not steps of the timeline."""

    LOAD = "load"
    SNAPSHOT = "snapshot"
    EDIT = "edit"
    FILE = "file"
    RESTORE = "restore"
    MERGE = "merge"
    STATE = "state"

    @property
    def starts_epoch(self) -> bool:
        return self in (PointKind.LOAD, PointKind.SNAPSHOT)

    @property
    def is_step(self) -> bool:
        """Whether the point shows in the timeline (and in ``ganymede history``)."""
        return self is not PointKind.STATE


@dataclass(frozen=True)
class NewPoint:
    """A point to store: ``data`` is one Yjs update (a batch merged into one)."""

    file_id: str
    epoch: str
    at: float
    who: str
    kind: PointKind
    data: bytes


@dataclass(frozen=True)
class PointInfo:
    """A stored point without its update; ``id`` orders points (higher is later)."""

    id: int
    epoch: str
    at: float
    who: str
    kind: PointKind
    size: int


@dataclass(frozen=True)
class Bounds:
    max_age_days: float = 30.0
    max_mb_per_document: float = 50.0

    @property
    def max_age_seconds(self) -> float:
        return self.max_age_days * SECONDS_PER_DAY

    @property
    def max_bytes(self) -> int:
        return int(self.max_mb_per_document * BYTES_PER_MB)


@dataclass(frozen=True)
class Plan:
    """What to do to a document's points: ``drop`` these ids outright, and replace each run in
    ``compact`` (the oldest points of one epoch, its start first) by one snapshot."""

    drop: tuple[int, ...] = ()
    compact: tuple[tuple[int, ...], ...] = ()

    @property
    def empty(self) -> bool:
        return not self.drop and not self.compact


def epochs(points: Sequence[PointInfo]) -> list[list[PointInfo]]:
    """``points`` (in id order) grouped by epoch, oldest epoch first."""
    groups: dict[str, list[PointInfo]] = {}
    for point in points:
        groups.setdefault(point.epoch, []).append(point)
    return sorted(groups.values(), key=lambda group: group[0].id)


def plan(points: Sequence[PointInfo], bounds: Bounds, now: float) -> Plan:
    """Which points to drop or compact so that the document's history is within ``bounds``.

    The newest epoch (the room open now, or the last one) is never dropped; it is compacted
    instead. A history past its size is brought down to ``SIZE_TARGET`` of it. A run to compact
    holds at least two points, so a plan applied and planned again converges: a history whose
    newest epoch is one snapshot larger than the size bound is left as it is (it is the
    document itself).
    """
    cutoff = now - bounds.max_age_seconds
    groups = epochs(points)
    drop: list[int] = []
    kept: list[list[PointInfo]] = []
    for index, group in enumerate(groups):
        newest = index == len(groups) - 1
        if not newest and group[-1].at < cutoff:
            drop.extend(point.id for point in group)
        else:
            kept.append(group)
    compact: list[tuple[int, ...]] = []
    total = sum(point.size for group in kept for point in group)
    excess = total - int(bounds.max_bytes * SIZE_TARGET) if total > bounds.max_bytes else 0
    while excess > 0 and len(kept) > 1:
        group = kept.pop(0)
        drop.extend(point.id for point in group)
        excess -= sum(point.size for point in group)
    for index, group in enumerate(kept):
        run = [point for point in group if point.at < cutoff]
        if index == len(kept) - 1 and excess > 0:
            run = _covering(group, excess, len(run))
        if len(run) >= 2:
            compact.append(tuple(point.id for point in run))
    return Plan(tuple(drop), tuple(compact))


def _covering(group: list[PointInfo], excess: int, at_least: int) -> list[PointInfo]:
    """The shortest run of the group's oldest points whose sizes add up past ``excess`` (the
    snapshot replacing them is usually far smaller: deleted content is gone from it), at least
    two points long and no shorter than ``at_least``."""
    total = 0
    for count, point in enumerate(group, start=1):
        total += point.size
        if total > excess and count >= max(at_least, 2):
            return group[:count]
    return group


def replay(updates: Iterable[bytes]) -> Doc:
    """A fresh document holding ``updates`` applied in order (one epoch's, from its start)."""
    doc = Doc()
    for update in updates:
        doc.apply_update(update)
    return doc


def snapshot(updates: Iterable[bytes]) -> bytes:
    """One update holding what ``updates`` amount to, without the content they deleted."""
    return replay(updates).get_update()


def step_points(points: Sequence[PointInfo]) -> list[PointInfo]:
    """The points a timeline shows, oldest first."""
    return [point for point in points if point.kind.is_step]


def point_at(points: Sequence[PointInfo], when: float) -> PointInfo | None:
    """The last step point at or before ``when`` (None: the history starts later)."""
    found = None
    for point in step_points(points):
        if point.at <= when:
            found = point
    return found


def replay_ids(points: Sequence[PointInfo], target: PointInfo) -> list[int]:
    """The ids to replay, in order, for the document as of ``target``: its epoch's points
    from the start up to it, the bookkeeping points right after it included (they belong to
    the same moment)."""
    epoch = [point for point in points if point.epoch == target.epoch]
    ids: list[int] = []
    passed = False
    for point in epoch:
        if passed and point.kind.is_step:
            break
        ids.append(point.id)
        passed = passed or point.id == target.id
    return ids
