"""What a server's search keeps between searches: same answers, and never an outdated file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import nbformat
import pytest

from ganymede.core import Notebooks
from ganymede.core.search import SearchableNotebook
from ganymede.core.search_cache import FileStamp, SearchCache
from tests.core.disk import code, display, error, markdown, raw, stream, write_notebook

HOUR_NS = 3600 * 10**9


def searchable(text: str) -> SearchableNotebook:
    return SearchableNotebook.of(
        json.loads(
            nbformat.writes(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(text)]))
        )
    )


def stamp_of(path: Path) -> FileStamp:
    return FileStamp.of(os.stat(path))


def places(answer: dict[str, Any]) -> list[tuple[str, int, str]]:
    return [(hit["path"], hit["index"], hit["in"]) for hit in answer["hits"]]


def test_a_kept_notebook_comes_back_only_for_the_same_stamp(root: Path) -> None:
    stamp = stamp_of(write_notebook(root / "n.ipynb", code("x")))
    later = stamp.changed_ns + HOUR_NS
    kept = searchable("x")
    for field in FileStamp._fields:
        cache = SearchCache()
        cache.put("n", stamp, kept, later)
        assert cache.get("n", stamp) is kept
        assert cache.get("n", stamp._replace(**{field: getattr(stamp, field) + 1})) is None
        assert len(cache) == 0
        assert cache.chars == 0


def test_a_file_written_within_the_settle_time_is_not_kept(root: Path) -> None:
    stamp = stamp_of(write_notebook(root / "n.ipynb", code("x")))
    cache = SearchCache(settle_ns=HOUR_NS)
    cache.put("n", stamp, searchable("x"), stamp.changed_ns + HOUR_NS - 1)
    assert len(cache) == 0
    cache.put("n", stamp, searchable("x"), stamp.changed_ns + HOUR_NS)
    assert len(cache) == 1


def test_only_settled_files_no_larger_than_the_cache_would_be_kept(root: Path) -> None:
    stamp = stamp_of(write_notebook(root / "n.ipynb", code("x")))
    later = stamp.changed_ns + HOUR_NS
    cache = SearchCache(max_chars=stamp.size, settle_ns=HOUR_NS)
    assert cache.would_keep(stamp, later)
    assert not cache.would_keep(stamp, later - 1)
    assert not cache.would_keep(stamp._replace(size=stamp.size + 1), later)


def test_the_least_recently_used_notebooks_make_room(root: Path) -> None:
    stamp = stamp_of(write_notebook(root / "n.ipynb", code("x")))
    later = stamp.changed_ns + HOUR_NS
    one = searchable("a" * 100)
    cache = SearchCache(max_chars=2 * one.size)
    cache.put("a", stamp, one, later)
    cache.put("b", stamp, searchable("b" * 100), later)
    assert cache.get("a", stamp) is one
    cache.put("c", stamp, searchable("c" * 100), later)
    assert cache.get("b", stamp) is None
    assert cache.get("a", stamp) is one
    assert cache.get("c", stamp) is not None
    assert cache.chars == 2 * one.size


def test_a_notebook_larger_than_the_cache_is_not_kept_and_drops_its_older_version(
    root: Path,
) -> None:
    stamp = stamp_of(write_notebook(root / "n.ipynb", code("x")))
    later = stamp.changed_ns + HOUR_NS
    small = searchable("x")
    cache = SearchCache(max_chars=small.size + 10)
    cache.put("n", stamp, small, later)
    cache.put("n", stamp._replace(size=stamp.size + 1), searchable("x" * 1000), later)
    assert len(cache) == 0
    assert cache.chars == 0


def mixed_tree(root: Path) -> None:
    """Each kind of file search treats apart (older nbformats are left out: upgrading one makes
    up new cell ids each time, so two reads of the same file never answer alike)."""
    write_notebook(root / "été.ipynb", markdown("# Été"), code("# Température en été"))
    escaped = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('été "quoted" a/b')])
    (root / "escaped.ipynb").write_text(json.dumps(escaped, ensure_ascii=True))
    write_notebook(
        root / "journal" / "day.ipynb",
        markdown("# Monday notes", cell_id="head"),
        code("sales = load()\n# The weekday drop again", stream("weekday drop out\n")),
        code("d()", display({"text/plain": "plain words"}), error("ValueError", "error words")),
        raw("raw words"),
    )
    write_notebook(root / "kelvin.ipynb", code("\u212a marks a temperature"))
    (root / "bad.ipynb").write_text('{"cells": [{"source": "words"')
    (root / "foreign.ipynb").write_text('{"words": true}')


@pytest.mark.parametrize(
    ("query", "options"),
    [
        ("ÉTÉ", {}),
        ('"quoted" a/b', {}),
        ("weekday  drop", {"outputs": True}),
        ("words", {"outputs": True}),
        ("words", {"cell_type": "raw"}),
        ("k", {}),
        ("e", {"limit": 2}),
    ],
)
def test_a_kept_tree_answers_as_a_freshly_read_one(
    root: Path, query: str, options: dict[str, Any]
) -> None:
    mixed_tree(root)
    expected = Notebooks(root).search(query, **options)
    cache = SearchCache(settle_ns=0)
    cached = Notebooks(root, search_cache=cache)
    assert cached.search(query, **options) == expected
    assert len(cache) == 6
    assert cached.search(query, **options) == expected


def test_a_rewritten_file_is_read_again(root: Path) -> None:
    path = write_notebook(root / "n.ipynb", code("first words"))
    notebooks = Notebooks(root, search_cache=SearchCache(settle_ns=0))
    assert notebooks.search("first")["total"] == 1
    write_notebook(path, code("second, longer words"))
    assert notebooks.search("first")["total"] == 0
    assert notebooks.search("second")["total"] == 1
    replacement = root / "replacement.tmp"
    write_notebook(replacement, code("fourth, longer words"))
    assert replacement.stat().st_size == path.stat().st_size
    os.replace(replacement, path)
    assert notebooks.search("second")["total"] == 0
    assert notebooks.search("fourth")["total"] == 1


def test_a_fresh_file_is_read_again_until_it_settles(root: Path) -> None:
    path = write_notebook(root / "n.ipynb", code("first words"))
    cache = SearchCache(settle_ns=HOUR_NS)
    notebooks = Notebooks(root, search_cache=cache)
    assert notebooks.search("first")["total"] == 1
    assert len(cache) == 0
    with path.open("r+b") as rewrite:
        rewrite.write(path.read_bytes().replace(b"first", b"fresh"))
    assert notebooks.search("first")["total"] == 0
    assert notebooks.search("fresh")["total"] == 1


def test_a_deleted_file_is_no_longer_found(root: Path) -> None:
    write_notebook(root / "kept.ipynb", code("needle"))
    gone = write_notebook(root / "gone.ipynb", code("needle"))
    notebooks = Notebooks(root, search_cache=SearchCache(settle_ns=0))
    assert notebooks.search("needle")["total"] == 2
    gone.unlink()
    assert places(notebooks.search("needle")) == [("kept.ipynb", 0, "source")]


def test_a_file_grown_past_the_bound_is_still_searched(root: Path) -> None:
    path = write_notebook(root / "n.ipynb", code("needle"))
    cache = SearchCache(max_chars=1000, settle_ns=0)
    notebooks = Notebooks(root, search_cache=cache)
    assert notebooks.search("needle")["total"] == 1
    assert len(cache) == 1
    write_notebook(path, code("x" * 2000 + " needle"))
    assert notebooks.search("needle")["total"] == 1
    assert len(cache) == 0
    assert cache.chars == 0


def test_an_open_room_is_searched_instead_of_its_kept_file(root: Path) -> None:
    write_notebook(root / "n.ipynb", code("stale words"))
    cache = SearchCache(settle_ns=0)
    assert Notebooks(root, search_cache=cache).search("stale")["total"] == 1
    live = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("fresh words")])
    documents = {"n.ipynb": json.loads(json.dumps(live))}
    notebooks = Notebooks(root, open_document=documents.get, search_cache=cache)
    assert notebooks.search("stale")["total"] == 0
    assert notebooks.search("fresh")["total"] == 1
