"""A room's file on real disk: read with the contents API's hash, written only if unchanged."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from jupyter_server.services.contents.filemanager import FileContentsManager

from ganymede.errors import NotebookNotFound
from ganymede.fileid import FileIdStore
from ganymede.serve.rooms.file import RoomFile, WriteOutcome
from tests.serve.rooms.conftest import notebook_bytes, write


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "root"


@pytest.fixture
def file_ids(root: Path) -> Iterator[FileIdStore]:
    root.mkdir()
    store = FileIdStore(root)
    yield store
    store.close()


def contents_api_hash(root: Path, path: str, algorithm: str) -> str:
    manager = FileContentsManager(root_dir=str(root), hash_algorithm=algorithm)
    return str(manager.get(path, content=False, require_hash=True)["hash"])


@pytest.mark.parametrize("algorithm", ["sha256", "md5"])
@pytest.mark.parametrize(("path", "data"), [("n.ipynb", notebook_bytes("1")), ("t.py", b"x\n")])
def test_the_hash_is_the_contents_apis(
    root: Path, file_ids: FileIdStore, algorithm: str, path: str, data: bytes
) -> None:
    write(root / path, data)
    file = RoomFile(file_ids.index(path), file_ids, algorithm)
    snapshot = file.read()
    assert (snapshot.path, snapshot.data) == (path, data)
    assert snapshot.hash == contents_api_hash(root, path, algorithm)


def test_a_write_lands_only_on_the_file_the_room_last_saw(
    root: Path, file_ids: FileIdStore
) -> None:
    path = write(root / "w.py", b"one\n")
    file = RoomFile(file_ids.index("w.py"), file_ids, "sha256")
    seen = file.read().hash

    outcome, written = file.write_if_unchanged(b"two\n", seen)
    assert (outcome, path.read_bytes()) == (WriteOutcome.WRITTEN, b"two\n")
    assert written == contents_api_hash(root, "w.py", "sha256")

    assert file.write_if_unchanged(b"two\n", seen) == (WriteOutcome.ALREADY_THERE, written)

    path.write_bytes(b"theirs\n")
    outcome, now = file.write_if_unchanged(b"three\n", written)
    assert (outcome, path.read_bytes()) == (WriteOutcome.CHANGED_ON_DISK, b"theirs\n")
    assert now == file.hash_of(b"theirs\n")


def test_a_renamed_file_is_followed_and_a_deleted_one_is_gone(
    root: Path, file_ids: FileIdStore
) -> None:
    write(root / "before.py", b"x\n")
    file = RoomFile(file_ids.index("before.py"), file_ids, "sha256")
    (root / "before.py").rename(root / "after.py")
    file_ids.move("before.py", "after.py")
    assert file.read().path == "after.py"

    (root / "after.py").unlink()
    with pytest.raises(NotebookNotFound):
        file.read()
    assert file.write_if_unchanged(b"y\n", "any")[0] is WriteOutcome.GONE
    assert not (root / "after.py").exists()
