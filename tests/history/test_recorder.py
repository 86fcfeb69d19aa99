"""The rooms' recorder: updates batched into points by author and kind, written off the loop."""

from __future__ import annotations

from pathlib import Path

from pycrdt import Doc, Text

from ganymede.history import HistoryStore, PointKind
from ganymede.history.points import replay
from ganymede.serve.rooms.history import HistoryRecorder


def typing(doc: Doc, text: Text, words: list[str]) -> list[bytes]:
    updates: list[bytes] = []
    subscription = doc.observe(lambda event: updates.append(event.update))
    for word in words:
        text += word
    doc.unobserve(subscription)
    return updates


async def test_runs_of_one_author_make_one_point_and_bookkeeping_joins_the_last(
    tmp_path: Path,
) -> None:
    store = HistoryStore(tmp_path / "history.db", clock=lambda: 2000.0)
    now = iter(range(1000, 2000))
    recorder = HistoryRecorder(store, flush_interval=3600, clock=lambda: float(next(now)))
    doc = Doc()
    doc["source"] = text = Text()
    history = recorder.begin("f1", doc.get_update())
    ann = typing(doc, text, ["a", "b", "c"])
    for update in ann[:2]:
        history.record(update, "Ann", PointKind.EDIT)
    history.record(ann[2], "ganymede", PointKind.STATE)  # the saved flag, say
    bob = typing(doc, text, ["d"])
    history.record(bob[0], "Bob", PointKind.EDIT)
    await recorder.flush()
    later = typing(doc, text, ["e"])
    history.record(later[0], "Bob", PointKind.EDIT)  # after a flush: a point of its own
    await recorder.stop()
    points = store.points("f1")
    assert [(p.who, p.kind) for p in points] == [
        ("file", PointKind.LOAD),
        ("Ann", PointKind.EDIT),
        ("Bob", PointKind.EDIT),
        ("Bob", PointKind.EDIT),
    ]
    assert points[1].at == 1002.0  # the time of Ann's last update in the run
    as_of_ann = store.document_at("f1", points[1], points)
    assert str(as_of_ann.get("source", type=Text)) == "abc"
    everything = replay(store.updates(p.id for p in points))
    assert str(everything.get("source", type=Text)) == "abcde"


async def test_each_room_instance_is_an_epoch_of_its_own(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "history.db", clock=lambda: 2000.0)
    recorder = HistoryRecorder(store, clock=lambda: 1000.0)
    first = recorder.begin("f1", Doc().get_update())
    second = recorder.begin("f1", Doc().get_update())
    await recorder.stop()
    assert first.epoch != second.epoch
    assert {p.epoch for p in store.points("f1")} == {first.epoch, second.epoch}
