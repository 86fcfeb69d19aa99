"""Line-based three-way merge of a text file a room holds with the file another program rewrote.

This is diff3 over lines, the project's one sequence merge (``ganymede.notebook.threeway``)
with the ``LINES`` rule: the runs of base lines that both sides kept split the texts into
chunks; a chunk only one side changed takes that side's lines, a chunk both changed the same
way takes those lines, and a chunk both changed differently takes the file's lines (the file
wins on conflict, SPEC §3). As in diff3 and git, edits to adjacent lines fall in one chunk and
so count as overlapping, and lines both sides inserted at one place are a conflict: unlike a
chat's messages, two versions of a paragraph are not both wanted.
"""

from __future__ import annotations

from ganymede.notebook.threeway import SequenceRule, Side, file_wins, merge_runs

LINES = SequenceRule(
    on_conflict=file_wins,
    split_replacements=False,
    touching_edits_clash=True,
    trim_shared_ends=True,
)


def merge_text(base: str, ours: str, theirs: str) -> tuple[str, bool]:
    """The merge of ``ours`` and ``theirs`` since ``base``, and whether a chunk conflicted.

    ``ours`` is the room's text and ``theirs`` the file's; a conflicting chunk takes the file's
    lines. Line endings are kept exactly as each side wrote them.
    """
    if ours in (base, theirs):
        return theirs, False
    if theirs == base:
        return ours, False
    base_lines, ours_lines, theirs_lines = (
        text.splitlines(keepends=True) for text in (base, ours, theirs)
    )
    runs, conflicted = merge_runs(base_lines, ours_lines, theirs_lines, LINES)
    sides = {Side.OURS: ours_lines, Side.THEIRS: theirs_lines}
    merged = "".join(line for run in runs for line in sides[run.side][run.start : run.end])
    return merged, conflicted
