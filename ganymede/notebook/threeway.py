"""Three-way decisions for the parts of a document rooms know only by their shape.

A chat, a CAD model or any other type registered in the ``jupyter_ydoc`` entry points is, to a
room, a few shared roots: maps, arrays and texts. When another program rewrites such a file,
each root is merged three ways, ``base`` (the file as the room last read or wrote it), ``ours``
(the room) and ``theirs`` (the file now), on the JSON of each value:

- a map, key by key: a key only one side changed takes that side's value (a deletion too); a key
  both changed differently takes the file's, and is a conflict;
- an array, element by element: runs of elements only one side changed take that side's; runs
  both changed differently take the file's (a conflict); elements both sides added at the same
  place are all kept, the file's first, and an element both added is kept once.

Keeping both sides' additions is what a chat needs (a message sent in the room while another
program appended one to the file must survive) and what keeps a merge from ever doubling
content: an element both sides hold is matched, not added twice. Pure: values in, choices out.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from enum import Enum


class Side(Enum):
    OURS = "ours"
    THEIRS = "theirs"


@dataclass(frozen=True)
class Pick:
    """One element of a merged array: ``side``'s element at ``index``."""

    side: Side
    index: int


@dataclass(frozen=True)
class SequenceMerge:
    picks: tuple[Pick, ...]
    conflicted: bool  # both changed the same run differently: the file's run won


@dataclass(frozen=True)
class KeysMerge:
    picks: dict[str, Side]  # the merged map's keys, each with the side whose value it takes
    conflicts: tuple[str, ...]  # keys both changed differently: the file's value won


@dataclass(frozen=True)
class _Hunk:
    """``base[base_start:base_end]`` became ``side[start:end]``."""

    side: Side
    base_start: int
    base_end: int
    start: int
    end: int


_MISSING = object()


def merge_keys(
    base: Mapping[str, Hashable], ours: Mapping[str, Hashable], theirs: Mapping[str, Hashable]
) -> KeysMerge:
    """Merge three versions of a map whose values are compared as given (JSON text, say)."""
    picks: dict[str, Side] = {}
    conflicts: list[str] = []
    for key in dict.fromkeys([*base, *ours, *theirs]):
        was, mine, file = (side.get(key, _MISSING) for side in (base, ours, theirs))
        if mine == file or file == was:
            winner = Side.OURS
        else:
            winner = Side.THEIRS
            if mine != was:
                conflicts.append(key)
        if (ours if winner is Side.OURS else theirs).get(key, _MISSING) is not _MISSING:
            picks[key] = winner
    return KeysMerge(picks, tuple(conflicts))


def merge_sequences(
    base: Sequence[Hashable], ours: Sequence[Hashable], theirs: Sequence[Hashable]
) -> SequenceMerge:
    """Merge three versions of an array whose elements are compared as given."""
    hunks = sorted(
        [*_hunks(base, ours, Side.OURS), *_hunks(base, theirs, Side.THEIRS)],
        key=lambda hunk: (hunk.base_start, hunk.base_end),
    )
    picks: list[Pick] = []
    conflicted = False
    position = 0  # in base: everything before it is merged
    offset = {Side.OURS: 0, Side.THEIRS: 0}  # side index minus base index past the last hunk
    for cluster in _clusters(hunks):
        start = min(hunk.base_start for hunk in cluster)
        end = max(hunk.base_end for hunk in cluster)
        picks.extend(Pick(Side.OURS, i + offset[Side.OURS]) for i in range(position, start))
        spans = {side: _span(cluster, side, start, end, offset[side]) for side in Side}
        mine = ours[spans[Side.OURS][0] : spans[Side.OURS][1]]
        file = theirs[spans[Side.THEIRS][0] : spans[Side.THEIRS][1]]
        sides = {hunk.side for hunk in cluster}
        if sides == {Side.OURS} or list(mine) == list(file):
            picks.extend(_run(Side.OURS, spans[Side.OURS]))
        elif sides == {Side.THEIRS}:
            picks.extend(_run(Side.THEIRS, spans[Side.THEIRS]))
        elif start == end:
            picks.extend(_union(file, mine, spans[Side.THEIRS][0], spans[Side.OURS][0]))
        else:
            picks.extend(_run(Side.THEIRS, spans[Side.THEIRS]))
            conflicted = True
        for side in Side:
            offset[side] = spans[side][1] - end
        position = end
    picks.extend(Pick(Side.OURS, i + offset[Side.OURS]) for i in range(position, len(base)))
    return SequenceMerge(tuple(picks), conflicted)


def _hunks(base: Sequence[Hashable], side: Sequence[Hashable], name: Side) -> list[_Hunk]:
    """What ``side`` changed of the base. A run of elements each replaced by one is split into
    one hunk per element, so a message edited in the room beside one the file edited is not
    lost with it."""
    hunks: list[_Hunk] = []
    matcher = SequenceMatcher(None, list(base), list(side), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "replace" and i2 - i1 == j2 - j1:
            hunks.extend(
                _Hunk(name, i1 + k, i1 + k + 1, j1 + k, j1 + k + 1) for k in range(i2 - i1)
            )
        elif tag != "equal":
            hunks.append(_Hunk(name, i1, i2, j1, j2))
    return hunks


def _clusters(hunks: list[_Hunk]) -> list[list[_Hunk]]:
    """Hunks (sorted by base position) grouped where they touch the same part of the base."""
    clusters: list[list[_Hunk]] = []
    for hunk in hunks:
        if clusters and any(_overlap(hunk, other) for other in clusters[-1]):
            clusters[-1].append(hunk)
        else:
            clusters.append([hunk])
    return clusters


def _overlap(first: _Hunk, second: _Hunk) -> bool:
    """Whether two hunks change the same part of the base: their ranges overlap, or both insert
    at one place, or one inserts inside the range the other replaces. Hunks that only touch
    end to start change different parts."""
    if max(first.base_start, second.base_start) < min(first.base_end, second.base_end):
        return True
    for inserted, other in ((first, second), (second, first)):
        if inserted.base_start == inserted.base_end and (
            other.base_start < inserted.base_start < other.base_end
            or other.base_start == other.base_end == inserted.base_start
        ):
            return True
    return False


def _span(cluster: list[_Hunk], side: Side, start: int, end: int, offset: int) -> tuple[int, int]:
    """Where base[start:end] is in ``side``, its hunks in the cluster applied."""
    own = [hunk for hunk in cluster if hunk.side is side]
    if not own:
        return start + offset, end + offset
    return own[0].start - (own[0].base_start - start), own[-1].end + (end - own[-1].base_end)


def _run(side: Side, span: tuple[int, int]) -> list[Pick]:
    return [Pick(side, index) for index in range(*span)]


def _union(
    file: Sequence[Hashable], mine: Sequence[Hashable], file_at: int, mine_at: int
) -> list[Pick]:
    """Both sides' insertions at one place: each element once, the file's first."""
    picks: list[Pick] = []
    matcher = SequenceMatcher(None, list(file), list(mine), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        picks.extend(Pick(Side.THEIRS, file_at + i) for i in range(i1, i2))
        if tag in ("insert", "replace"):
            picks.extend(Pick(Side.OURS, mine_at + j) for j in range(j1, j2))
    return picks
