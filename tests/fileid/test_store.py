"""The file id store against real files and a real SQLite database, including its fallbacks."""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ganymede.errors import NotebookNotFound, PathError
from ganymede.fileid import DB_NAME, FileIdStore, default_db_path


@pytest.fixture
def root(tmp_path: Path) -> Path:
    served = tmp_path / "root"
    (served / "journal").mkdir(parents=True)
    (served / "a.ipynb").write_text("{}")
    (served / "journal" / "x.ipynb").write_text("{}")
    (served / "journal" / "y.txt").write_text("y")
    return served


@pytest.fixture
def store(root: Path) -> Iterator[FileIdStore]:
    opened = FileIdStore(root)
    yield opened
    opened.close()


def test_the_database_lives_in_the_jupyter_data_dir(isolated_jupyter: Path) -> None:
    assert default_db_path() == isolated_jupyter / "data" / DB_NAME


def test_index_gives_a_uuid4_once_and_keeps_it(store: FileIdStore) -> None:
    first = store.index("a.ipynb")
    assert uuid.UUID(first).version == 4
    assert store.index("/a.ipynb") == first
    assert store.get_id("a.ipynb") == first
    assert store.get_path(first) == "a.ipynb"
    assert store.index("journal/x.ipynb") != first


def test_ids_survive_a_new_store_on_the_same_database(root: Path, store: FileIdStore) -> None:
    file_id = store.index("journal/x.ipynb")
    store.close()
    reopened = FileIdStore(root)
    try:
        assert reopened.get_path(file_id) == "journal/x.ipynb"
        assert not reopened.in_memory
    finally:
        reopened.close()
    assert (Path(os.environ["JUPYTER_DATA_DIR"]) / DB_NAME).is_file()


def test_two_roots_share_the_database_without_colliding(tmp_path: Path, root: Path) -> None:
    other_root = tmp_path / "other"
    other_root.mkdir()
    (other_root / "a.ipynb").write_text("{}")
    here, there = FileIdStore(root), FileIdStore(other_root)
    try:
        assert here.index("a.ipynb") != there.index("a.ipynb")
        # A root inside another sees the same file under a shorter path, with the same id.
        inner = FileIdStore(root / "journal")
        assert inner.index("x.ipynb") == here.index("journal/x.ipynb")
        inner.close()
    finally:
        here.close()
        there.close()


def test_unknown_paths_and_ids_resolve_to_none(store: FileIdStore) -> None:
    assert store.get_id("a.ipynb") is None
    assert store.get_id("missing.ipynb") is None
    assert store.get_path(str(uuid.uuid4())) is None


def test_indexing_a_missing_file_is_not_found(store: FileIdStore) -> None:
    with pytest.raises(NotebookNotFound):
        store.index("missing.ipynb")


@pytest.mark.parametrize("path", ["../outside.ipynb", "journal/../../outside.ipynb", "a\0b"])
def test_paths_that_leave_the_root_are_refused(store: FileIdStore, path: str) -> None:
    with pytest.raises(PathError):
        store.index(path)
    with pytest.raises(PathError):
        store.get_id(path)


def test_a_symlink_out_of_the_root_is_refused(tmp_path: Path, root: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.ipynb").write_text("{}")
    (root / "link").symlink_to(outside)
    store = FileIdStore(root)
    try:
        with pytest.raises(PathError, match="outside the root"):
            store.index("link/secret.ipynb")
    finally:
        store.close()


def test_move_carries_the_id(root: Path, store: FileIdStore) -> None:
    file_id = store.index("a.ipynb")
    (root / "a.ipynb").rename(root / "b.ipynb")
    store.move("a.ipynb", "b.ipynb")
    assert store.get_path(file_id) == "b.ipynb"
    assert store.get_id("b.ipynb") == file_id


def test_moving_a_directory_moves_the_ids_under_it(root: Path, store: FileIdStore) -> None:
    x_id, y_id = store.index("journal/x.ipynb"), store.index("journal/y.txt")
    dir_id = store.index("journal")
    (root / "journal-private").mkdir()
    sibling_id = store.index("journal-private")
    (root / "journal").rename(root / "diary")
    store.move("journal", "diary")
    assert store.get_path(x_id) == "diary/x.ipynb"
    assert store.get_path(y_id) == "diary/y.txt"
    assert store.get_path(dir_id) == "diary"
    assert store.get_path(sibling_id) == "journal-private"


def test_delete_drops_the_id_and_those_under_a_directory(root: Path, store: FileIdStore) -> None:
    a_id, x_id = store.index("a.ipynb"), store.index("journal/x.ipynb")
    (root / "a.ipynb").unlink()
    store.delete("a.ipynb")
    store.delete("journal")
    (root / "a.ipynb").write_text("{}")
    (root / "journal" / "x.ipynb").write_text("{}")
    assert store.get_path(a_id) is None
    assert store.get_path(x_id) is None
    assert store.index("a.ipynb") != a_id


def test_a_file_moved_by_another_program_gets_a_new_id(root: Path, store: FileIdStore) -> None:
    file_id = store.index("a.ipynb")
    (root / "a.ipynb").rename(root / "elsewhere.ipynb")
    assert store.get_path(file_id) is None
    assert store.get_id("elsewhere.ipynb") is None
    assert store.index("elsewhere.ipynb") != file_id


def test_names_with_sql_wildcards_are_matched_literally(root: Path, store: FileIdStore) -> None:
    (root / "a%").mkdir()
    (root / "a%" / "n.ipynb").write_text("{}")
    (root / "ab").mkdir()
    (root / "ab" / "n.ipynb").write_text("{}")
    kept = store.index("ab/n.ipynb")
    store.delete("a%")
    assert store.get_id("ab/n.ipynb") == kept


def fallback_warnings(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno == logging.WARNING and "memory" in r.message]


def exercise(store: FileIdStore, root: Path) -> None:
    """Every operation still answers from memory."""
    file_id = store.index("a.ipynb")
    assert store.get_id("a.ipynb") == file_id
    (root / "a.ipynb").rename(root / "b.ipynb")
    store.move("a.ipynb", "b.ipynb")
    assert store.get_path(file_id) == "b.ipynb"
    store.delete("b.ipynb")
    assert store.get_path(file_id) is None


def test_a_directory_in_place_of_the_database_falls_back_to_memory(
    tmp_path: Path, root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db_path = tmp_path / "db-is-a-dir"
    db_path.mkdir()
    store = FileIdStore(root, db_path)
    exercise(store, root)
    assert store.in_memory
    assert len(fallback_warnings(caplog)) == 1
    assert str(db_path) in fallback_warnings(caplog)[0].message


def test_a_data_dir_under_a_regular_file_falls_back_to_memory(
    tmp_path: Path, root: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Even root cannot create a directory inside a regular file, unlike a chmod'ed directory.
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(blocker / "data"))
    store = FileIdStore(root)
    exercise(store, root)
    assert store.in_memory
    assert len(fallback_warnings(caplog)) == 1


def test_a_corrupt_database_falls_back_to_memory_and_is_left_alone(
    tmp_path: Path, root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db_path = tmp_path / "ids.db"
    garbage = b"this is not a database" * 100
    db_path.write_bytes(garbage)
    store = FileIdStore(root, db_path)
    exercise(store, root)
    assert store.in_memory
    assert len(fallback_warnings(caplog)) == 1
    assert db_path.read_bytes() == garbage


@pytest.mark.parametrize("breakage", ["overwritten", "journal blocked"])
def test_a_database_broken_while_in_use_keeps_the_ids_handed_out(
    tmp_path: Path, root: Path, caplog: pytest.LogCaptureFixture, breakage: str
) -> None:
    db_path = tmp_path / "ids.db"
    store = FileIdStore(root, db_path)
    x_id = store.index("journal/x.ipynb")
    assert not store.in_memory
    if breakage == "overwritten":
        db_path.write_bytes(b"\0" * 4096)
    else:
        # SQLite cannot create its rollback journal where a directory stands: writes fail, root
        # or not.
        (tmp_path / "ids.db-journal").mkdir()
    y_id = store.index("journal/y.txt")
    assert store.in_memory
    assert store.get_path(x_id) == "journal/x.ipynb"
    assert store.get_path(y_id) == "journal/y.txt"
    assert store.index("journal/x.ipynb") == x_id
    exercise(store, root)
    assert len(fallback_warnings(caplog)) == 1
    store.close()


def test_a_symlink_loop_is_refused_not_crashed_on(root: Path, store: FileIdStore) -> None:
    (root / "loop").symlink_to(root / "loop")
    with pytest.raises(PathError):
        store.index("loop/x.ipynb")
