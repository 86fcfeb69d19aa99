"""Three-way merging, ``base`` against ``ours`` (the room) and ``theirs`` (the file), for every
merge the project makes: a notebook's parts, a map's keys, a text's lines, an array's elements.

One decision serves a single part (a cell's source, a metadata key, a map's key): a part only
one side changed takes that side's value (a deletion too), a part both changed the same way is
no conflict, and a part both changed differently takes the file's and is a conflict.

One merge serves sequences. What each side changed of the base is matched, its edits are
grouped where they touch the same part of the base, and each such region takes the one side
that changed it (or either, when both made it the same); a region both changed differently is
what a ``SequenceRule`` decides, with how edits are told apart. For the roots of a document
known only by its shape (a chat, a CAD model), an array merges with ``ELEMENTS``:

- runs of elements both changed differently take the file's (a conflict), but elements both
  sides added at the same place are all kept, the file's first, and an element both added is
  kept once;
- edits that only touch end to start, and elements each replaced by one, merge separately.

Keeping both sides' additions is what a chat needs (a message sent in the room while another
program appended one to the file must survive) and what keeps a merge from ever doubling
content: an element both sides hold is matched, not added twice. Text lines merge by diff3's
stricter rule (``ganymede.notebook.textmerge``). Pure: values in, choices out.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from enum import Enum


class Side(Enum):
    OURS = "ours"
    THEIRS = "theirs"


def decide(base: object, ours: object, theirs: object, *, alike: Side) -> tuple[Side, bool]:
    """Which side one part is taken from, and whether both changed it differently.

    ``alike`` is the side a part both hold the same is taken from: values that compare equal
    may still be written differently (a list of lines, one string), and each caller knows
    which writing it must keep.
    """
    if ours == theirs:
        return alike, False
    if ours == base:
        return Side.THEIRS, False
    if theirs == base:
        return Side.OURS, False
    return Side.THEIRS, True


@dataclass(frozen=True)
class KeysMerge:
    picks: dict[str, Side]  # the merged map's keys, each with the side whose value it takes
    conflicts: tuple[str, ...]  # keys both changed differently: the file's value won


_MISSING = object()


def merge_keys(
    base: Mapping[str, Hashable], ours: Mapping[str, Hashable], theirs: Mapping[str, Hashable]
) -> KeysMerge:
    """Merge three versions of a map whose values are compared as given (JSON text, say).

    A key both hold alike takes the room's value: the document holds it already.
    """
    picks: dict[str, Side] = {}
    conflicts: list[str] = []
    for key in dict.fromkeys([*base, *ours, *theirs]):
        was, mine, file = (side.get(key, _MISSING) for side in (base, ours, theirs))
        winner, clash = decide(was, mine, file, alike=Side.OURS)
        if clash:
            conflicts.append(key)
        if (mine if winner is Side.OURS else file) is not _MISSING:
            picks[key] = winner
    return KeysMerge(picks, tuple(conflicts))


@dataclass(frozen=True)
class Run:
    """A stretch of a merged sequence: ``side``'s elements from ``start`` up to ``end``."""

    side: Side
    start: int
    end: int


@dataclass(frozen=True)
class Region:
    """A part of the base one side or both changed: ``base`` (its elements) became ``ours`` in
    the room, starting there at ``ours_at``, and ``theirs`` in the file, at ``theirs_at``."""

    base: Sequence[Hashable]
    ours: Sequence[Hashable]
    theirs: Sequence[Hashable]
    ours_at: int
    theirs_at: int

    def taken_from(self, side: Side) -> Run:
        """The region as ``side`` has it."""
        if side is Side.OURS:
            return Run(side, self.ours_at, self.ours_at + len(self.ours))
        return Run(side, self.theirs_at, self.theirs_at + len(self.theirs))


Resolution = tuple[tuple[Run, ...], bool]
"""What a region becomes, and whether that is a conflict (the file won the room's change)."""


@dataclass(frozen=True)
class SequenceRule:
    """How one kind of sequence merges where both sides changed it."""

    on_conflict: Callable[[Region], Resolution]
    # Replacing n elements by n splits into n one-element edits, so an element changed beside
    # one the other side changed is not lost with it.
    split_replacements: bool
    # Edits touching end to start change one region (diff3), not two.
    touching_edits_clash: bool
    # Match only what lies between the elements all three share at the start and the end:
    # a small edit to a long text stays cheap. (It moves where an ambiguous edit is placed.)
    trim_shared_ends: bool


@dataclass(frozen=True)
class _Hunk:
    """``base[base_start:base_end]`` became ``side[start:end]``."""

    side: Side
    base_start: int
    base_end: int
    start: int
    end: int


def merge_runs(
    base: Sequence[Hashable],
    ours: Sequence[Hashable],
    theirs: Sequence[Hashable],
    rule: SequenceRule,
) -> tuple[list[Run], bool]:
    """The merge of three versions of a sequence as runs of the sides' elements, and whether
    a region conflicted. Elements are compared as given."""
    head, tail = _shared_ends(base, ours, theirs) if rule.trim_shared_ends else (0, 0)
    hunks = sorted(
        [
            *_hunks(base, ours, Side.OURS, head, tail, rule.split_replacements),
            *_hunks(base, theirs, Side.THEIRS, head, tail, rule.split_replacements),
        ],
        key=lambda hunk: (hunk.base_start, hunk.base_end),
    )
    runs: list[Run] = []
    conflicted = False
    position = 0  # in base: everything before it is merged
    offset = {Side.OURS: 0, Side.THEIRS: 0}  # side index minus base index past the last hunk
    for cluster in _clusters(hunks, rule.touching_edits_clash):
        start = min(hunk.base_start for hunk in cluster)
        end = max(hunk.base_end for hunk in cluster)
        runs.append(Run(Side.OURS, position + offset[Side.OURS], start + offset[Side.OURS]))
        spans = {side: _span(cluster, side, start, end, offset[side]) for side in Side}
        region = Region(
            base[start:end],
            ours[spans[Side.OURS][0] : spans[Side.OURS][1]],
            theirs[spans[Side.THEIRS][0] : spans[Side.THEIRS][1]],
            spans[Side.OURS][0],
            spans[Side.THEIRS][0],
        )
        taken, both_changed = decide(
            list(region.base), list(region.ours), list(region.theirs), alike=Side.OURS
        )
        if both_changed:
            resolved, clash = rule.on_conflict(region)
            runs.extend(resolved)
            conflicted = conflicted or clash
        else:
            runs.append(region.taken_from(taken))
        for side in Side:
            offset[side] = spans[side][1] - end
        position = end
    runs.append(Run(Side.OURS, position + offset[Side.OURS], len(base) + offset[Side.OURS]))
    return [run for run in runs if run.start < run.end], conflicted


@dataclass(frozen=True)
class Pick:
    """One element of a merged array: ``side``'s element at ``index``."""

    side: Side
    index: int


@dataclass(frozen=True)
class SequenceMerge:
    picks: tuple[Pick, ...]
    conflicted: bool  # both changed the same run differently: the file's run won


def merge_sequences(
    base: Sequence[Hashable], ours: Sequence[Hashable], theirs: Sequence[Hashable]
) -> SequenceMerge:
    """Merge three versions of an array whose elements are compared as given (``ELEMENTS``)."""
    runs, conflicted = merge_runs(base, ours, theirs, ELEMENTS)
    picks = (Pick(run.side, index) for run in runs for index in range(run.start, run.end))
    return SequenceMerge(tuple(picks), conflicted)


def file_wins(region: Region) -> Resolution:
    """A region both changed differently takes the file's version: a conflict."""
    return (region.taken_from(Side.THEIRS),), True


def _both_insertions_kept(region: Region) -> Resolution:
    """Both sides' insertions at one place: each element once, the file's first. A region
    that replaced base elements is the file's."""
    if region.base:
        return file_wins(region)
    runs: list[Run] = []
    matcher = SequenceMatcher(None, list(region.theirs), list(region.ours), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        runs.append(Run(Side.THEIRS, region.theirs_at + i1, region.theirs_at + i2))
        if tag in ("insert", "replace"):
            runs.append(Run(Side.OURS, region.ours_at + j1, region.ours_at + j2))
    return tuple(runs), False


ELEMENTS = SequenceRule(
    on_conflict=_both_insertions_kept,
    split_replacements=True,
    touching_edits_clash=False,
    trim_shared_ends=False,
)


def _shared_ends(*sides: Sequence[Hashable]) -> tuple[int, int]:
    """How many leading and trailing elements all sides share."""
    first, others = sides[0], sides[1:]
    shortest = min(len(side) for side in sides)
    head = 0
    while head < shortest and all(side[head] == first[head] for side in others):
        head += 1
    tail = 0
    while tail < shortest - head and all(side[-1 - tail] == first[-1 - tail] for side in others):
        tail += 1
    return head, tail


def _hunks(
    base: Sequence[Hashable],
    side: Sequence[Hashable],
    name: Side,
    head: int,
    tail: int,
    split_replacements: bool,
) -> list[_Hunk]:
    """What ``side`` changed of the base, matching only what lies between the ``head`` and
    ``tail`` elements all share.

    ``autojunk`` is off: with it, elements common in a long sequence (blank lines, closing
    brackets) would be ignored as junk and the matches would miss real common runs.
    """
    hunks: list[_Hunk] = []
    middles = (list(sequence[head : len(sequence) - tail]) for sequence in (base, side))
    matcher = SequenceMatcher(None, *middles, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        i1, i2, j1, j2 = i1 + head, i2 + head, j1 + head, j2 + head
        if split_replacements and tag == "replace" and i2 - i1 == j2 - j1:
            hunks.extend(
                _Hunk(name, i1 + k, i1 + k + 1, j1 + k, j1 + k + 1) for k in range(i2 - i1)
            )
        elif tag != "equal":
            hunks.append(_Hunk(name, i1, i2, j1, j2))
    return hunks


def _clusters(hunks: list[_Hunk], touching_clash: bool) -> list[list[_Hunk]]:
    """Hunks (sorted by base position) grouped where they touch the same part of the base."""
    clusters: list[list[_Hunk]] = []
    for hunk in hunks:
        if clusters and any(_overlap(hunk, other, touching_clash) for other in clusters[-1]):
            clusters[-1].append(hunk)
        else:
            clusters.append([hunk])
    return clusters


def _overlap(first: _Hunk, second: _Hunk, touching_clash: bool) -> bool:
    """Whether two hunks change the same part of the base: their ranges overlap, or both insert
    at one place, or one inserts inside the range the other replaces. Hunks that only touch
    end to start change different parts, unless ``touching_clash``."""
    if touching_clash:
        return max(first.base_start, second.base_start) <= min(first.base_end, second.base_end)
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
