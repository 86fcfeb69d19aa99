"""The pure grant path rules, each as one golden table: a case per line, its answer beside it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ganymede.errors import PathError
from ganymede.grant.model import Grant
from ganymede.grant.paths import covers, intersect, minimal, normalize_granted, normalize_target
from tests.notebook.golden import assert_golden

GOLDEN = Path(__file__).parent.parent / "golden" / "grant"

PATHS = [
    "",
    "/",
    "journal",
    "journal/",
    "/journal/x.ipynb",
    "./journal//x.ipynb",
    "journal/../secret",
    "..",
    "/etc/passwd",
    "C:/Users/x.ipynb",
    "~/x.ipynb",
    "journal\\x.ipynb",
    "journal%2Fx.ipynb",
    "journal%2fx.ipynb",
    "journal%5Cx.ipynb",
    "%2E%2E/secret",
    "a..b/c..",
    "100%25.ipynb",
    "été/x.ipynb",
    "nul\x00.ipynb",
]

COVERS = [
    ("", ""),
    ("", "journal/x.ipynb"),
    ("journal", "journal"),
    ("journal", "journal/x.ipynb"),
    ("journal", "journal/2026/deep/x.ipynb"),
    ("journal", "journal-private/x.ipynb"),
    ("journal", "journal.ipynb"),
    ("journal", "journalx"),
    ("journal", ""),
    ("journal/2026", "journal"),
    ("journal/x.ipynb", "journal/x.ipynb"),
    ("journal/x.ipynb", "journal/x.ipynb.bak"),
    ("a.ipynb", "b.ipynb"),
]

SETS = [
    ([""], ["journal"]),
    (["journal"], [""]),
    (["journal"], ["journal/2026"]),
    (["journal/2026"], ["journal"]),
    (["journal"], ["journal-private"]),
    (["journal", "reports"], ["reports/q1", "journal/x.ipynb", "other"]),
    ([], [""]),
    ([""], [""]),
    (["a", "a/b", "c"], ["a/b/c", "c"]),
]


def _outcome(rule: Callable[[str], str], path: str) -> str:
    try:
        return repr(rule(path))
    except PathError as error:
        return f"PathError: {error.reason}"


def test_normalizing_targets_and_granted_paths() -> None:
    lines = [
        f"{path!r:24} target {_outcome(normalize_target, path):60} "
        f"granted {_outcome(normalize_granted, path)}"
        for path in PATHS
    ]
    assert_golden("\n".join(lines) + "\n", GOLDEN / "normalize.txt")


def test_whole_segment_coverage() -> None:
    lines = [
        f"{granted!r:18} covers {path!r:30} {covers(granted, path)}" for granted, path in COVERS
    ]
    assert_golden("\n".join(lines) + "\n", GOLDEN / "covers.txt")


def test_intersections_keep_what_both_cover() -> None:
    lines = []
    for left, right in SETS:
        both = intersect(left, right)
        assert both == intersect(right, left), "intersection is symmetric"
        lines.append(f"{left!r:24} & {right!r:40} = {list(both)!r}")
    assert_golden("\n".join(lines) + "\n", GOLDEN / "intersect.txt")


def test_minimal_drops_entries_another_covers() -> None:
    assert minimal(["journal/x", "journal", "reports", "journal"]) == ("journal", "reports")
    assert minimal(["b", "", "a"]) == ("",)
    assert minimal([]) == ()


def test_grant_intersection_narrows_every_key() -> None:
    caller = Grant(read=("journal",), run=("reports",), edit_self=True)
    called = Grant(read=("journal/2026", "secret"), run=("",), edit_self=False)
    assert caller.intersect(called) == Grant(
        read=("journal/2026",), run=("reports",), edit_self=False
    )
    assert Grant().intersect(Grant()) == Grant()
