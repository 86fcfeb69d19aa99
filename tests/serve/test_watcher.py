"""The watcher reports a watched file once its changes settle, and nothing else."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from ganymede.serve.rooms.watcher import MAX_DETECTION_LAG, FileWatcher, Settler, change_time


def test_settler_waits_for_quiet_then_reports_once() -> None:
    settler = Settler(settle=0.5, settle_max=5.0)
    path = Path("/r/a.ipynb")
    settler.changed(path, 10.0)
    settler.changed(path, 10.3)
    assert settler.next_due() == 10.8
    assert settler.take_due(10.79) == []
    assert settler.take_due(10.8) == [path]
    assert settler.take_due(20.0) == []
    assert settler.next_due() is None


def test_a_change_is_dated_back_to_its_write_within_the_detection_lag() -> None:
    assert change_time(50.0, 0.03) == 50.0 - 0.03
    assert change_time(50.0, 7.0) == 50.0 - MAX_DETECTION_LAG  # an old file rewritten in place
    assert change_time(50.0, -3.0) == 50.0  # a clock ahead of this machine's
    assert change_time(50.0, None) == 50.0  # gone: dated when seen


def test_a_change_dated_earlier_than_one_seen_before_keeps_the_later_quiet() -> None:
    settler = Settler(settle=0.5, settle_max=5.0)
    path = Path("/r/a.ipynb")
    settler.changed(path, 10.3)
    settler.changed(path, 10.25)
    assert settler.next_due() == 10.8


def test_settler_reports_a_busy_file_after_settle_max() -> None:
    settler = Settler(settle=0.5, settle_max=2.0)
    path = Path("/r/a.ipynb")
    for tick in range(30):
        settler.changed(path, 100.0 + tick * 0.1)
    assert settler.next_due() == 102.0
    assert settler.take_due(102.0) == [path]


def test_settler_hands_out_oldest_change_first() -> None:
    settler = Settler(settle=0.5, settle_max=5.0)
    first, second = Path("/r/1.ipynb"), Path("/r/2.ipynb")
    settler.changed(second, 1.0)
    settler.changed(first, 0.9)
    assert settler.take_due(9.0) == [first, second]


class Reports:
    """The paths a watcher reported, awaitable one by one with a deadline."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[tuple[Path, bool]] = asyncio.Queue()

    async def __call__(self, path: Path) -> None:
        await self.queue.put((path, path.exists()))

    async def next(self, within: float = 10.0) -> tuple[Path, bool]:
        return await asyncio.wait_for(self.queue.get(), within)


async def test_several_writes_are_one_report_and_unwatched_files_none(tmp_path: Path) -> None:
    watched, other = tmp_path / "a.ipynb", tmp_path / "b.ipynb"
    watched.write_text("0")
    reports = Reports()
    async with FileWatcher(reports, settle=0.3, settle_max=5.0) as watcher:
        watcher.watch(watched)
        await asyncio.sleep(0.3)  # let inotify's watch be set up before the first write
        other.write_text("not watched")
        for step in range(3):
            watched.write_text(str(step))
        assert await reports.next() == (watched.absolute(), True)
        with pytest.raises(asyncio.TimeoutError):
            await reports.next(within=1.0)


async def test_each_change_is_heard_at_once_and_reported_once_settled(tmp_path: Path) -> None:
    watched = tmp_path / "a.ipynb"
    watched.write_text("0")
    reports = Reports()
    heard: list[tuple[Path, float]] = []
    settle = 1.0
    async with FileWatcher(
        reports, on_changed=lambda path: heard.append((path, time.monotonic())), settle=settle
    ) as watcher:
        watcher.watch(watched)
        await asyncio.sleep(0.3)
        written = time.monotonic()
        watched.write_text("1")
        assert await reports.next() == (watched.absolute(), True)
        reported = time.monotonic()
    assert heard and all(path == watched.absolute() for path, _ in heard)
    assert written <= heard[0][1] < reported - settle / 2  # heard well before it settled


async def test_a_deleted_file_is_reported_and_unwatch_stops_reports(tmp_path: Path) -> None:
    first, second = tmp_path / "a.ipynb", tmp_path / "sub" / "b.ipynb"
    second.parent.mkdir()
    first.write_text("a")
    second.write_text("b")
    reports = Reports()
    async with FileWatcher(reports, settle=0.2) as watcher:
        watcher.watch(first)
        watcher.watch(second)
        await asyncio.sleep(0.3)
        os.unlink(first)
        assert await reports.next() == (first.absolute(), False)
        watcher.unwatch(second)
        await asyncio.sleep(0.3)
        second.write_text("changed while unwatched")
        with pytest.raises(asyncio.TimeoutError):
            await reports.next(within=1.0)


async def test_a_file_rewritten_continuously_is_reported_by_settle_max(tmp_path: Path) -> None:
    path = tmp_path / "busy.ipynb"
    path.write_text("0")
    reports = Reports()
    async with FileWatcher(reports, settle=0.5, settle_max=1.0) as watcher:
        watcher.watch(path)
        await asyncio.sleep(0.3)
        writes = 0

        async def keep_writing() -> None:
            nonlocal writes
            while True:
                writes += 1
                path.write_text(str(writes))
                await asyncio.sleep(0.1)

        writer = asyncio.create_task(keep_writing())
        try:
            assert (await reports.next())[0] == path.absolute()
            assert not writer.done(), "reported while the file was still being written"
        finally:
            writer.cancel()
