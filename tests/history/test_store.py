"""The SQLite history store: points survive a reopen, bounds hold, a corrupt file is moved aside."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from pycrdt import Doc, Text

from ganymede.history import Bounds, HistoryStore, NewPoint, PointKind
from ganymede.history.points import SECONDS_PER_DAY


def text_updates(count: int, size: int) -> list[bytes]:
    """``count`` updates of one document, each replacing its text with ``size`` fresh bytes."""
    doc = Doc()
    doc["source"] = text = Text()
    updates: list[bytes] = []
    doc.observe(lambda event: updates.append(event.update))
    for index in range(count):
        with doc.transaction():
            del text[:]
            text += f"{index:08d}" + "x" * (size - 8)
    return updates


def points(updates: list[bytes], start: float = 1000.0, epoch: str = "e1") -> list[NewPoint]:
    return [
        NewPoint("f1", epoch, start + i, "ann", PointKind.LOAD if i == 0 else PointKind.EDIT, u)
        for i, u in enumerate(updates)
    ]


def test_points_survive_a_reopen_and_replay_to_any_point(tmp_path: Path) -> None:
    db = tmp_path / "history.db"
    store = HistoryStore(db, clock=lambda: 2000.0)
    store.append(points(text_updates(5, 20)))
    store.close()
    again = HistoryStore(db, clock=lambda: 2000.0)
    known = again.points("f1")
    assert [p.kind for p in known] == [PointKind.LOAD] + [PointKind.EDIT] * 4
    doc = again.document_at("f1", known[2], known)
    assert str(doc.get("source", type=Text)).startswith("00000002")
    assert again.points("another") == []


def test_past_its_size_the_history_compacts_its_oldest_points_and_stays_under(
    tmp_path: Path,
) -> None:
    bound = Bounds(max_age_days=30, max_mb_per_document=0.05)  # about 52 KB
    store = HistoryStore(tmp_path / "history.db", bound, clock=lambda: 2000.0)
    updates = text_updates(200, 2000)  # about 400 KB of updates
    for start in range(0, len(updates), 20):
        batch = points(updates)[start : start + 20]
        store.append(batch)
    assert store.size("f1") <= bound.max_bytes
    known = store.points("f1")
    assert known[0].kind is PointKind.SNAPSHOT
    latest = store.document_at("f1", known[-1], known)
    assert str(latest.get("source", type=Text)).startswith("00000199")


def test_points_older_than_the_age_bound_are_dropped_whole_epochs_first(tmp_path: Path) -> None:
    now = 100 * SECONDS_PER_DAY
    store = HistoryStore(tmp_path / "history.db", Bounds(30, 50), clock=lambda: now)
    store.append(points(text_updates(3, 10), start=10 * SECONDS_PER_DAY, epoch="old"))
    store.append(points(text_updates(3, 10), start=now - 10, epoch="new"))
    assert {p.epoch for p in store.points("f1")} == {"new"}


def test_a_corrupt_database_is_moved_aside_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "history.db"
    db.write_bytes(b"this is no database at all" * 100)
    with caplog.at_level(logging.WARNING):
        store = HistoryStore(db, clock=lambda: 2000.0)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "moved it to" in warnings[0].getMessage()
    aside = list(tmp_path.glob("history.db.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_bytes().startswith(b"this is no database")
    store.append(points(text_updates(2, 10)))
    assert len(store.points("f1")) == 2
    assert not store.in_memory


def test_a_database_that_cannot_be_opened_keeps_history_in_memory(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "history.db").mkdir()  # a directory where the file should be
    with caplog.at_level(logging.WARNING):
        store = HistoryStore(tmp_path / "history.db", clock=lambda: 2000.0)
    assert store.in_memory
    assert "kept in memory" in caplog.text
    store.append(points(text_updates(2, 10)))
    assert len(store.points("f1")) == 2


def test_the_history_connection_keeps_a_small_page_cache(tmp_path: Path) -> None:
    """SQLite's 2 MB default would fill with the first whole documents recorded and stay."""
    store = HistoryStore(tmp_path / "history.db", clock=lambda: 2000.0)
    store.append(points(text_updates(40, 100_000)))
    cache = store._run(lambda db: db.execute("PRAGMA cache_size").fetchone()[0])
    assert cache == -256  # KiB
    assert len(store.points("f1")) == 40
    store.close()
