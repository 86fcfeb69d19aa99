"""Shared fixtures: every test gets its own Jupyter data, runtime and config dirs."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from ganymede.fileid import FileIdStore
from ganymede.grant import Grant, Grants, GrantStore
from ganymede.serve.rooms import RoomManager

pytest_plugins = ["tests.scheduling"]

GOLDEN = Path(__file__).parent / "golden"


def pytest_configure() -> None:
    """Servers and kernels the tests start hear Ctrl-C even when the suite does not.

    A shell starts a background job (``make test &``, ``nohup``) with SIGINT ignored, and
    children inherit that; ``ganymede serve`` then rightly leaves SIGINT alone, as it does for
    whoever ignores it, and every test that stops a server with Ctrl-C waits out its timeout.
    """
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def isolated_jupyter(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Point Jupyter's dirs at a fresh temporary tree so tests never touch the user's files."""
    home = tmp_path_factory.mktemp("jupyter")
    for name in ("data", "runtime", "config"):
        (home / name).mkdir()
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(home / "data"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(home / "runtime"))
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(home / "config"))
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    monkeypatch.delenv("GANYMEDE_PARAMS", raising=False)
    return home


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Callable[[int], Path]]:
    """Mount a tmpfs of the given size in KiB: a real full disk (ENOSPC). Needs root, as CI runs."""
    mounted: list[Path] = []

    def mount(kib: int) -> Path:
        disk = tmp_path / f"disk{len(mounted)}"
        disk.mkdir()
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={kib}k", "tmpfs", str(disk)], capture_output=True
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
        mounted.append(disk)
        return disk

    yield mount
    for disk in mounted:
        subprocess.run(["umount", "--lazy", str(disk)], check=True)


# Grants over a served root: the module that asks for them defines ``root``, the tree it serves.


@pytest.fixture
def file_ids(root: Path, tmp_path: Path) -> Iterator[FileIdStore]:
    store = FileIdStore(root, tmp_path / "ids.db")
    yield store
    store.close()


@pytest.fixture
def grant_store(tmp_path: Path) -> GrantStore:
    return GrantStore(tmp_path / "grants.toml")


@pytest.fixture
def grants(root: Path, grant_store: GrantStore, file_ids: FileIdStore) -> Grants:
    """The defaults (read everything, run nothing) over an empty per-notebook store."""
    return Grants(root, Grant(), grant_store, file_ids)


@pytest.fixture
async def rooms(file_ids: FileIdStore, tmp_path: Path) -> AsyncIterator[RoomManager]:
    """The server's rooms over ``root``, in process; autosave far off, so tests save on purpose."""
    manager = RoomManager(file_ids, save_delay=60.0, runtime_dir=tmp_path / "runtime")
    yield manager
    await manager.stop()
