"""Line-based three-way merge of a text file a room holds with the file another program rewrote.

This is diff3 over lines: the runs of base lines that both sides kept split the texts into
chunks; a chunk only one side changed takes that side's lines, a chunk both changed the same
way takes those lines, and a chunk both changed differently takes the file's lines (the file
wins on conflict, SPEC §3). As in diff3 and git, edits to adjacent lines fall in one chunk and
so count as overlapping.
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher


@dataclass(frozen=True)
class _StableRun:
    """Base lines both sides kept unchanged, with where that run starts in each text."""

    base: int
    ours: int
    theirs: int
    length: int


def merge_text(base: str, ours: str, theirs: str) -> tuple[str, bool]:
    """The merge of ``ours`` and ``theirs`` since ``base``, and whether a chunk conflicted.

    ``ours`` is the room's text and ``theirs`` the file's; a conflicting chunk takes the file's
    lines. Line endings are kept exactly as each side wrote them.
    """
    if ours in (base, theirs):
        return theirs, False
    if theirs == base:
        return ours, False
    texts = [text.splitlines(keepends=True) for text in (base, ours, theirs)]
    head, tail = _shared_ends(texts)
    base_lines, ours_lines, theirs_lines = (lines[head : len(lines) - tail] for lines in texts)
    merged: list[str] = texts[0][:head]
    had_conflict = False
    base_at = ours_at = theirs_at = 0
    for run in _stable_runs(base_lines, ours_lines, theirs_lines):
        chunk, conflicted = _resolve_chunk(
            base_lines[base_at : run.base],
            ours_lines[ours_at : run.ours],
            theirs_lines[theirs_at : run.theirs],
        )
        merged.extend(chunk)
        had_conflict = had_conflict or conflicted
        merged.extend(base_lines[run.base : run.base + run.length])
        base_at = run.base + run.length
        ours_at = run.ours + run.length
        theirs_at = run.theirs + run.length
    merged.extend(texts[0][len(texts[0]) - tail :])
    return "".join(merged), had_conflict


def _shared_ends(texts: list[list[str]]) -> tuple[int, int]:
    """How many leading and trailing lines all texts share; matching only the middle keeps a
    small edit to a long file cheap."""
    first, others = texts[0], texts[1:]
    shortest = min(len(lines) for lines in texts)
    head = 0
    while head < shortest and all(lines[head] == first[head] for lines in others):
        head += 1
    tail = 0
    while tail < shortest - head and all(lines[-1 - tail] == first[-1 - tail] for lines in others):
        tail += 1
    return head, tail


def _stable_runs(base: list[str], ours: list[str], theirs: list[str]) -> list[_StableRun]:
    """Where both sides' matches with the base overlap, in order, ending with an empty run.

    ``autojunk`` is off: with it, lines common in a long file (blank lines, closing brackets)
    would be ignored as junk and the matches would miss real common runs.
    """
    ours_blocks = SequenceMatcher(None, base, ours, autojunk=False).get_matching_blocks()
    theirs_blocks = SequenceMatcher(None, base, theirs, autojunk=False).get_matching_blocks()
    runs: list[_StableRun] = []
    ours_index = theirs_index = 0
    while ours_index < len(ours_blocks) and theirs_index < len(theirs_blocks):
        ours_block = ours_blocks[ours_index]
        theirs_block = theirs_blocks[theirs_index]
        ours_end = ours_block.a + ours_block.size
        theirs_end = theirs_block.a + theirs_block.size
        start = max(ours_block.a, theirs_block.a)
        end = min(ours_end, theirs_end)
        if start < end:
            runs.append(
                _StableRun(
                    base=start,
                    ours=ours_block.b + start - ours_block.a,
                    theirs=theirs_block.b + start - theirs_block.a,
                    length=end - start,
                )
            )
        if ours_end < theirs_end:
            ours_index += 1
        else:
            theirs_index += 1
    runs.append(_StableRun(len(base), len(ours), len(theirs), 0))
    return runs


def _resolve_chunk(base: list[str], ours: list[str], theirs: list[str]) -> tuple[list[str], bool]:
    """The lines a chunk between two stable runs merges to, and whether both sides clashed."""
    if ours in (base, theirs):
        return theirs, False
    if theirs == base:
        return ours, False
    return theirs, True
