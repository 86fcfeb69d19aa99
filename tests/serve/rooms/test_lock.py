"""The room lock: a flock that one process holds at a time and the OS drops when it exits."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ganymede.serve.rooms.lock import RoomLock, lock_path

pytestmark = pytest.mark.slow

# Takes the lock, says whether it got it, and holds it until its stdin closes.
HOLDER = """
import sys
from pathlib import Path
from ganymede.serve.rooms.lock import RoomLock
lock = RoomLock(Path(sys.argv[1]), Path(sys.argv[2]))
print("held" if lock.try_acquire() else "refused", flush=True)
sys.stdin.read()
"""


@pytest.fixture
def notebook(tmp_path: Path) -> Path:
    path = tmp_path / "root" / "nb.ipynb"
    path.parent.mkdir()
    path.write_text("{}")
    return path


@pytest.fixture
def runtime_dir(tmp_path: Path) -> Path:
    return tmp_path / "runtime"


def holder(notebook: Path, runtime_dir: Path) -> tuple[subprocess.Popen[str], str]:
    """Another process trying the lock, and what it answered."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(notebook), str(runtime_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait()
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                stream.close()


def test_the_lock_file_is_named_by_the_sha256_of_the_real_path(runtime_dir: Path) -> None:
    path = lock_path(Path("/srv/nb.ipynb"), runtime_dir)
    assert (
        path
        == runtime_dir / "ganymede-rooms" / f"{hashlib.sha256(b'/srv/nb.ipynb').hexdigest()}.lock"
    )


def test_acquire_and_release(notebook: Path, runtime_dir: Path) -> None:
    lock = RoomLock(notebook, runtime_dir)
    assert not lock.held
    assert lock.try_acquire()
    assert lock.held and lock.path.exists()
    lock.release()
    assert not lock.held
    assert lock.path.exists()  # never deleted: a waiter would lock a stale inode
    assert lock.try_acquire()
    lock.release()


def test_a_second_process_cannot_acquire_while_the_first_holds_it(
    notebook: Path, runtime_dir: Path, processes: list[subprocess.Popen[str]]
) -> None:
    lock = RoomLock(notebook, runtime_dir)
    assert lock.try_acquire()
    try:
        process, answer = holder(notebook, runtime_dir)
        processes.append(process)
        assert answer == "refused"
    finally:
        lock.release()
    process, answer = holder(notebook, runtime_dir)
    processes.append(process)
    assert answer == "held"
    assert not RoomLock(notebook, runtime_dir).try_acquire()


def test_the_lock_is_released_when_its_process_is_killed(
    notebook: Path, runtime_dir: Path, processes: list[subprocess.Popen[str]]
) -> None:
    process, answer = holder(notebook, runtime_dir)
    processes.append(process)
    assert answer == "held"
    lock = RoomLock(notebook, runtime_dir)
    assert not lock.try_acquire()
    process.kill()
    process.wait()
    assert lock.try_acquire()
    lock.release()


def test_a_replaced_lock_file_is_no_longer_held(notebook: Path, runtime_dir: Path) -> None:
    lock = RoomLock(notebook, runtime_dir)
    assert lock.try_acquire()
    assert lock.still_held()
    lock.path.unlink()
    other = RoomLock(notebook, runtime_dir)
    assert other.try_acquire()  # a new inode: nothing stops another process locking it
    assert not lock.still_held()
    assert not lock.held
    assert not lock.try_acquire()  # the new lock file is the one that counts now
    other.release()
