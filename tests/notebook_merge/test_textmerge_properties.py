"""Properties of the line-based text merge: a side that changed nothing hands over the other, and
edits to lines apart from each other are all kept."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ganymede.notebook.merge import merge_text

checks = settings(max_examples=200, deadline=None, database=None, print_blob=True)

ACTIONS = ["keep", "replace", "delete", "insert"]
texts = st.lists(st.sampled_from(["a\n", "b\n", "\n", "c", "a\r\n"]), max_size=12).map("".join)


Edits = dict[int, tuple[str, str]]  # base line index -> (action, who)


def edited(base: list[str], edits: Edits) -> str:
    """``base`` with each line's action applied."""
    return "".join(edited_line(base, edits, index) for index in range(len(base)))


def edited_line(base: list[str], edits: Edits, index: int) -> str:
    """What one side made of a base line; new lines name who made them, so are unique."""
    action, tag = edits.get(index, ("keep", ""))
    kept = base[index] if action in ("keep", "insert") else ""
    if action == "replace":
        return f"{tag} replaces {index}\n"
    if action == "insert":
        return kept + f"{tag} after {index}\n"
    return kept


@st.composite
def apart_edits(draw: st.DrawFn) -> tuple[list[str], Edits, Edits]:
    """Unique base lines, and edits per side that never touch neighbouring lines."""
    size = draw(st.integers(1, 30))
    base = [f"line {index}\n" for index in range(size)]
    owners = draw(st.lists(st.sampled_from(["room", "file", None]), min_size=size, max_size=size))
    room: Edits = {}
    file: Edits = {}
    for index, owner in enumerate(owners):
        near = owners[max(0, index - 2) : index + 3]
        if owner is None or any(other not in (owner, None) for other in near):
            continue
        (room if owner == "room" else file)[index] = (draw(st.sampled_from(ACTIONS)), owner)
    return base, room, file


@checks
@given(texts, texts)
def test_a_side_that_changed_nothing_hands_over_the_other(base: str, other: str) -> None:
    assert merge_text(base, other, base) == (other, False)
    assert merge_text(base, base, other) == (other, False)
    assert merge_text(base, other, other) == (other, False)


@checks
@given(apart_edits())
def test_edits_apart_from_each_other_are_all_kept(edits: tuple[list[str], Edits, Edits]) -> None:
    base, room, file = edits

    merged = merge_text("".join(base), edited(base, room), edited(base, file))

    assert merged == (edited(base, room | file), False)


@st.composite
def any_edits(draw: st.DrawFn) -> tuple[list[str], Edits, Edits]:
    """Unique base lines and any edits per side, overlapping or not."""
    size = draw(st.integers(0, 12))
    base = [f"line {index}\n" for index in range(size)]
    actions = st.lists(st.sampled_from(ACTIONS), min_size=size, max_size=size)
    room = {index: (action, "room") for index, action in enumerate(draw(actions))}
    file = {index: (action, "file") for index, action in enumerate(draw(actions))}
    return base, room, file


def diff3_by_hand(base: list[str], room: Edits, file: Edits) -> tuple[str, bool]:
    """diff3 spelled out for unique lines: lines both kept are stable; each chunk between them
    takes the one side that changed it, or the file's lines when both changed it differently."""

    def kept(edits: Edits, index: int) -> bool:
        return edits[index][0] in ("keep", "insert")

    stable = [index for index in range(len(base)) if kept(room, index) and kept(file, index)]
    merged: list[str] = []
    conflict = False
    for start, end in zip([-1, *stable], [*stable, len(base)], strict=True):
        chunk = range(start + 1, end)
        versions = []
        for edits in (room, file):
            text = "".join(edited_line(base, edits, index) for index in chunk)
            if start >= 0 and edits[start][0] == "insert":
                text = f"{edits[start][1]} after {start}\n" + text
            versions.append(text)
        base_text = "".join(base[index] for index in chunk)
        room_text, file_text = versions
        if room_text in (base_text, file_text):
            merged.append(file_text)
        elif file_text == base_text:
            merged.append(room_text)
        else:
            merged.append(file_text)
            conflict = True
        if end < len(base):
            merged.append(base[end])
    return "".join(merged), conflict


@checks
@given(any_edits())
def test_the_merge_is_diff3(edits: tuple[list[str], Edits, Edits]) -> None:
    base, room, file = edits

    merged = merge_text("".join(base), edited(base, room), edited(base, file))

    assert merged == diff3_by_hand(base, room, file)
