"""The run cache's store: shared by processes without a lock, bounded, least recently used out."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

from ganymede.execute.cache import RunCache, digest_inputs, max_bytes
from ganymede.execute.cache_key import InputDigest

KEY = "ab" + "0" * 62


def notebook_text(label: str, size: int) -> str:
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "source": label * size}
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def write_many(directory: str, label: str, rounds: int) -> None:
    cache = RunCache(Path(directory), max_bytes(10))
    for _ in range(rounds):
        cache.store(KEY, notebook_text(label, 200_000))


def test_two_processes_storing_one_key_never_leave_a_torn_entry(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    writers = [
        context.Process(target=write_many, args=(str(tmp_path), label, 40)) for label in "xy"
    ]
    for writer in writers:
        writer.start()
    reader = RunCache(tmp_path, max_bytes(10))
    seen = set()
    while any(writer.is_alive() for writer in writers):
        try:  # the file itself, not load(), which would take a torn entry for a miss
            loaded = json.loads(reader.entry_path(KEY).read_bytes())
        except FileNotFoundError:
            continue
        else:
            source = loaded["cells"][0]["source"]
            assert source in ("x" * 200_000, "y" * 200_000), "a reader saw a torn entry"
            seen.add(source[0])
    for writer in writers:
        writer.join()
        assert writer.exitcode == 0
    assert reader.load(KEY) is not None
    assert [p.name for p in tmp_path.rglob("*")] == ["ab", f"{KEY}.ipynb"], "no temporaries left"
    assert seen, "the reader never saw an entry while the writers ran"


def test_the_least_recently_used_entries_go_first(tmp_path: Path) -> None:
    cache = RunCache(tmp_path, 3 * len(notebook_text("a", 1000)))
    keys = [f"{n:02d}" + "f" * 62 for n in range(4)]
    for age, key in enumerate(keys[:3]):
        cache.store(key, notebook_text("a", 1000))
        os.utime(cache.entry_path(key), ns=(age * 10**9, age * 10**9))
    assert cache.load(keys[0]) is not None  # used: now the most recent
    cache.store(keys[3], notebook_text("a", 1000))
    assert [cache.load(key) is not None for key in keys] == [True, False, True, True]


def test_an_entry_alone_larger_than_the_bound_is_kept_until_the_next(tmp_path: Path) -> None:
    cache = RunCache(tmp_path, 100)
    cache.store("aa" + "1" * 62, notebook_text("a", 500))
    assert cache.load("aa" + "1" * 62) is not None
    cache.store("bb" + "2" * 62, notebook_text("b", 500))
    assert cache.load("aa" + "1" * 62) is None
    assert cache.load("bb" + "2" * 62) is not None


def test_a_damaged_entry_is_a_miss(tmp_path: Path) -> None:
    cache = RunCache(tmp_path, max_bytes(1))
    cache.store(KEY, notebook_text("a", 10))
    cache.entry_path(KEY).write_text('{"cells": ')
    assert cache.load(KEY) is None
    cache.entry_path(KEY).write_text("[]")
    assert cache.load(KEY) is None


def test_inputs_are_digested_by_content_relative_to_their_base(tmp_path: Path) -> None:
    (tmp_path / "data" / "nested").mkdir(parents=True)
    (tmp_path / "data" / "a.csv").write_bytes(b"abc")
    (tmp_path / "data" / "nested" / "b.csv").write_bytes(b"")
    digests = digest_inputs(["data/**", "missing/*.csv"], tmp_path)
    assert digests == [
        InputDigest(
            "data/**",
            (
                ("data/a.csv", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
                (
                    "data/nested/b.csv",
                    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
                ),
            ),
        ),
        InputDigest("missing/*.csv", ()),
    ]
