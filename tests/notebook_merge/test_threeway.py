"""The three-way decisions for registered document types' roots, on plain values."""

from __future__ import annotations

from ganymede.notebook.threeway import Side, merge_keys, merge_sequences


def merged(base: str, ours: str, theirs: str) -> tuple[str, bool]:
    """Each letter an element; the merge spelled out, and whether the file won a conflict."""
    result = merge_sequences(list(base), list(ours), list(theirs))
    letters = [(ours if pick.side is Side.OURS else theirs)[pick.index] for pick in result.picks]
    return "".join(letters), result.conflicted


def test_what_only_one_side_changed_is_taken_from_it() -> None:
    assert merged("abc", "abc", "abcd") == ("abcd", False)
    assert merged("abc", "abcE", "abc") == ("abcE", False)
    assert merged("abc", "bc", "abc") == ("bc", False)
    assert merged("abcd", "aXcd", "abcY") == ("aXcY", False)
    assert merged("ab", "aX", "abc") == ("aXc", False)


def test_both_adding_at_one_place_keeps_both_the_files_first() -> None:
    assert merged("a", "aA", "aB") == ("aBA", False)
    assert merged("a", "aAB", "aB") == ("aAB", False)


def test_an_element_both_hold_is_never_doubled() -> None:
    assert merged("", "ab", "abc") == ("abc", False)
    assert merged("a", "ab", "ab") == ("ab", False)
    assert merged("", "abc", "abc") == ("abc", False)


def test_the_file_wins_what_both_changed() -> None:
    assert merged("abc", "aXc", "aYc") == ("aYc", True)
    assert merged("abc", "aXc", "ac") == ("ac", True)
    assert merged("abc", "aXc", "aXc") == ("aXc", False)


def test_keys_merge_one_by_one() -> None:
    result = merge_keys(
        {"kept": "1", "room": "1", "file": "1", "both": "1", "gone": "1"},
        {"kept": "1", "room": "2", "file": "1", "both": "2", "gone": "1", "new": "1"},
        {"kept": "1", "room": "1", "file": "2", "both": "3", "added": "1"},
    )
    assert result.picks == {
        "kept": Side.OURS,
        "room": Side.OURS,
        "file": Side.THEIRS,
        "both": Side.THEIRS,
        "new": Side.OURS,
        "added": Side.THEIRS,
    }
    assert result.conflicts == ("both",)


def test_a_key_deleted_on_one_side_and_changed_on_the_other_takes_the_file() -> None:
    room_deleted = merge_keys({"k": "1"}, {}, {"k": "2"})
    assert room_deleted.picks == {"k": Side.THEIRS}
    assert room_deleted.conflicts == ("k",)
    file_deleted = merge_keys({"k": "1"}, {"k": "2"}, {})
    assert file_deleted.picks == {}
    assert file_deleted.conflicts == ("k",)


def test_elements_replaced_one_for_one_merge_one_by_one() -> None:
    assert merged("abc", "XYc", "aZc") == ("XZc", True)
    assert merged("abc", "XbY", "abc") == ("XbY", False)
