"""atomic_write: the old file or the new one, never a mix; nothing left behind on failure, and
what a killed writer left behind can be removed without touching a live writer's work."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ganymede.core.files import atomic_write, remove_abandoned_temporaries, temporaries_of


def test_replaces_the_content_and_keeps_the_mode(tmp_path: Path) -> None:
    path = tmp_path / "nb.ipynb"
    path.write_bytes(b"old")
    path.chmod(0o640)
    atomic_write(path, b"new content")
    assert path.read_bytes() == b"new content"
    assert path.stat().st_mode & 0o777 == 0o640
    assert os.listdir(tmp_path) == ["nb.ipynb"]


def test_a_new_file_gets_the_umask_mode(tmp_path: Path) -> None:
    path = tmp_path / "new.ipynb"
    umask = os.umask(0o022)
    try:
        atomic_write(path, b"x")
    finally:
        os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o644


def test_a_full_disk_leaves_the_old_file_and_no_temporary(
    small_disk: Callable[[int], Path],
) -> None:
    disk = small_disk(64)
    path = disk / "nb.ipynb"
    path.write_bytes(b"old")
    with pytest.raises(OSError) as raised:
        atomic_write(path, b"x" * 200_000)
    assert raised.value.strerror == "No space left on device"
    assert path.read_bytes() == b"old"
    assert os.listdir(disk) == ["nb.ipynb"]


WRITER = """
import sys
from pathlib import Path
from ganymede.core.files import atomic_write
payload = b"n" * (64 * 1024 * 1024)
print("ready", flush=True)
while True:
    atomic_write(Path(sys.argv[1]), payload)
"""


@pytest.mark.parametrize("delay", [0.0, 0.05, 0.1, 0.2, 0.4])
def test_a_process_killed_while_writing_leaves_old_or_new(tmp_path: Path, delay: float) -> None:
    """SIGKILL at some moment of a stream of 64 MiB writes: the file is whole, old or new."""
    path = tmp_path / "nb.ipynb"
    path.write_bytes(b"old")
    with subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True
    ) as writer:
        assert writer.stdout is not None
        assert writer.stdout.readline() == "ready\n"
        time.sleep(delay)  # where in the write the kill lands; not a synchronisation
        writer.kill()
    content = path.read_bytes()
    assert content == b"old" or content == b"n" * (64 * 1024 * 1024)


def test_only_temporaries_no_writer_holds_are_removed(tmp_path: Path) -> None:
    path = tmp_path / "nb.ipynb"
    path.write_bytes(b"{}")
    abandoned, held = tmp_path / ".nb.ipynb.k2x9_a0q.tmp", tmp_path / ".nb.ipynb.held0042.tmp"
    others = [tmp_path / name for name in (".other.ipynb.k2x9_a0q.tmp", ".nb.ipynb.tmp")]
    others.append(tmp_path / ".nb.ipynb.x.ipynb.k2x9_a0q.tmp")  # the file "nb.ipynb.x.ipynb"'s
    for file in [abandoned, held, *others]:
        file.write_bytes(b'{"cells": [')
    with held.open("rb") as writer:
        fcntl.flock(writer.fileno(), fcntl.LOCK_EX)  # what a live atomic_write holds
        assert remove_abandoned_temporaries(path) == [abandoned]
    assert sorted(os.listdir(tmp_path)) == sorted(p.name for p in [path, held, *others])


def test_what_a_killed_writer_left_is_removed(tmp_path: Path) -> None:
    path = tmp_path / "nb.ipynb"
    path.write_bytes(b"old")
    with subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True
    ) as writer:
        assert writer.stdout is not None
        assert writer.stdout.readline() == "ready\n"
        while not temporaries_of(path):
            pass  # the kill lands while a write is under way
        writer.kill()
    left = temporaries_of(path)
    assert remove_abandoned_temporaries(path) == left
    assert temporaries_of(path) == []
    assert path.read_bytes() in (b"old", b"n" * (64 * 1024 * 1024))


def test_removing_abandoned_temporaries_never_breaks_a_write_under_way(tmp_path: Path) -> None:
    path = tmp_path / "nb.ipynb"
    payload = b"w" * (8 * 1024 * 1024)
    failures: list[BaseException] = []

    def write_repeatedly() -> None:
        try:
            for _ in range(20):
                atomic_write(path, payload)
        except BaseException as error:
            failures.append(error)

    writer = threading.Thread(target=write_repeatedly)
    writer.start()
    while writer.is_alive():
        remove_abandoned_temporaries(path)  # may take one made but not yet locked: no harm
    writer.join()
    assert failures == []
    assert path.read_bytes() == payload
    assert temporaries_of(path) == []


def test_a_write_landing_during_the_save_is_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "nb.ipynb"
    path.write_bytes(b"seen")

    def another_program_writes_then_the_check_runs() -> bool:
        path.write_bytes(b"written meanwhile")  # lands while the temporary file is synced
        return path.read_bytes() == b"seen"

    assert not atomic_write(path, b"ours", another_program_writes_then_the_check_runs)
    assert path.read_bytes() == b"written meanwhile"
    assert os.listdir(tmp_path) == ["nb.ipynb"]
    assert atomic_write(path, b"ours", lambda: path.read_bytes() == b"written meanwhile")
    assert path.read_bytes() == b"ours"
