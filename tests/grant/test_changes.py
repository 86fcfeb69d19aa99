"""KEY=PATH arguments and what granting and revoking them does to a notebook's own grant."""

from __future__ import annotations

import pytest

from ganymede.errors import UsageError
from ganymede.grant import Change, Grant, NotebookGrant, granting, parse_change, revoking


def changes(*words: str, revoke: bool = False) -> list[Change]:
    return [parse_change(word, revoking=revoke) for word in words]


def test_parsing_normalizes_paths_and_booleans() -> None:
    assert changes("read=journal/", "run=", "edit_self=FALSE") == [
        Change("read", "journal"),
        Change("run", ""),
        Change("edit_self", "false"),
    ]
    assert changes("read", "edit_self", revoke=True) == [
        Change("read", None),
        Change("edit_self", None),
    ]


def test_the_first_path_for_a_key_replaces_the_default_and_later_ones_add() -> None:
    defaults = Grant(read=("",), run=(), edit_self=True)
    own = granting(NotebookGrant(), changes("read=journal"))
    assert own.over(defaults) == Grant(read=("journal",), run=(), edit_self=True)
    own = granting(own, changes("read=reports", "read=journal/2026", "run=reports"))
    assert own == NotebookGrant(read=("journal", "reports"), run=("reports",))
    assert granting(own, changes("edit_self=false")).over(defaults).edit_self is False


def test_revoking_a_path_a_key_or_edit_self() -> None:
    own = NotebookGrant(read=("journal", "reports"), run=("reports",), edit_self=False)
    assert revoking(own, changes("read=reports", revoke=True)).read == ("journal",)
    assert revoking(own, changes("run=reports", revoke=True)).run == (), "an empty list stays own"
    assert revoking(own, changes("run", "edit_self=true", revoke=True)) == NotebookGrant(
        read=("journal", "reports")
    )
    with pytest.raises(UsageError, match="read=journal/x is not granted as such"):
        revoking(own, changes("read=journal/x", revoke=True))


@pytest.mark.parametrize(
    ("word", "message"),
    [
        ("write=x", "KEY one of read, run, edit_self"),
        ("read", "expected read=PATH"),
        ("edit_self", "expected edit_self=true or edit_self=false"),
        ("edit_self=yes", "edit_self must be true or false"),
        ("run=../x", "'..' not allowed"),
        ("run=/abs", "absolute path not allowed"),
    ],
)
def test_bad_arguments_say_what_was_expected(word: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_change(word)
