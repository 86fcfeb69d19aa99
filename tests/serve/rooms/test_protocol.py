"""The frame codec and the presence ledger, checked byte for byte against y-protocols."""

from __future__ import annotations

import json

import pytest
from pycrdt import Awareness, Doc, Text, create_awareness_message, create_update_message

from ganymede.errors import FrameError, UnsupportedFrame
from ganymede.serve.rooms import protocol
from ganymede.serve.rooms.awareness import AwarenessLedger, user_name_of
from ganymede.serve.rooms.protocol import (
    AwarenessEntry,
    AwarenessQuery,
    AwarenessUpdate,
    RoomName,
    SaveRequest,
    SyncStep1,
    SyncStep2,
    SyncUpdate,
    decode_frame,
)


def an_update() -> tuple[Doc, bytes]:
    doc = Doc()
    doc["source"] = text = Text()
    text += "print('hi')"
    return doc, doc.get_update()


def test_sync_frames_round_trip_and_match_pycrdts_own_encoding() -> None:
    doc, update = an_update()
    assert protocol.sync_update(update) == create_update_message(update)
    assert decode_frame(protocol.sync_step1(doc.get_state())) == SyncStep1(doc.get_state())
    assert decode_frame(protocol.sync_step2(update)) == SyncStep2(update)
    assert decode_frame(create_update_message(update)) == SyncUpdate(update)


def test_an_awareness_frame_carries_its_entries_and_its_payload() -> None:
    awareness = Awareness(Doc())
    awareness.set_local_state({"user": {"name": "Ada"}})
    payload = awareness.encode_awareness_update([awareness.client_id])
    message = decode_frame(create_awareness_message(payload))
    assert isinstance(message, AwarenessUpdate)
    assert message.payload == payload
    (entry,) = message.entries
    assert entry.client_id == awareness.client_id
    assert json.loads(entry.state) == {"user": {"name": "Ada"}}
    assert protocol.awareness_frame(payload) == create_awareness_message(payload)


def test_save_request_and_query_awareness_decode() -> None:
    assert decode_frame(protocol.save_request(300)) == SaveRequest(300)
    assert decode_frame(bytes([3])) == AwarenessQuery()


def test_save_reply_is_a_raw_frame_of_ascii_json_with_a_char_count_prefix() -> None:
    frame = protocol.save_reply(7, "success")
    assert frame[0] == protocol.MessageType.RAW
    text = json.dumps({"type": "save", "responseTo": 7, "status": "success"})
    assert frame[1] == len(text)
    assert frame[2:] == text.encode("ascii")
    assert protocol.decode_raw_json(frame) == {"type": "save", "responseTo": 7, "status": "success"}


@pytest.mark.parametrize(
    ("frame", "complaint"),
    [
        (b"", "ends inside a number"),
        (b"\x80", "ends inside a number"),
        (b"\xff" * 10, "too large"),
        (bytes([0, 2, 10, 1, 2]), "runs past the end"),
        (bytes([0, 2, 1, 0, 9]), "stray bytes"),
        (bytes([1, 5, 1, 7, 1, 1, ord("{")]), "not JSON"),
        (bytes([2, 4]) + b"sa\xffe" + b"\x01", "not UTF-8"),
        (bytes([2, 4]) + b"save", "ends inside a number"),
    ],
)
def test_malformed_frames_are_refused(frame: bytes, complaint: str) -> None:
    with pytest.raises(FrameError, match=complaint) as raised:
        decode_frame(frame)
    assert not isinstance(raised.value, UnsupportedFrame)


@pytest.mark.parametrize(
    ("frame", "complaint"),
    [
        (bytes([125, 0]), "unknown message type 125"),
        (bytes([0, 7, 0]), "unknown sync step 7"),
        (bytes([2, 4]) + b"load" + b"\x01", "unknown RAW request 'load'"),
    ],
)
def test_well_formed_frames_of_unknown_kinds_are_unsupported(frame: bytes, complaint: str) -> None:
    with pytest.raises(UnsupportedFrame, match=complaint):
        decode_frame(frame)


def test_room_names_split_on_the_first_two_colons() -> None:
    name = RoomName.parse("json:notebook:0b3c-…")
    assert (name.format, name.type, name.file_id, name.is_document) == (
        "json",
        "notebook",
        "0b3c-…",
        True,
    )
    assert RoomName.parse("text:file:a:b").file_id == "a:b"
    assert not RoomName.parse("JupyterLab:globalAwareness").is_document


def entry(client_id: int, clock: int, state: object) -> AwarenessEntry:
    return AwarenessEntry(client_id, clock, json.dumps(state))


def test_the_ledger_shows_who_is_present_and_announces_who_left() -> None:
    ledger = AwarenessLedger()
    first, second = object(), object()
    assert ledger.present() is None
    ledger.record(first, (entry(1, 0, {"user": "a"}),))
    ledger.record(second, (entry(2, 4, {"user": "b"}),))
    present = protocol.decode_awareness(ledger.present() or b"")
    assert {(e.client_id, e.clock) for e in present} == {(1, 0), (2, 4)}

    departures = protocol.decode_awareness(ledger.forget(second) or b"")
    assert departures == (AwarenessEntry(2, 5, "null"),)
    assert ledger.forget(second) is None
    assert [e.client_id for e in protocol.decode_awareness(ledger.present() or b"")] == [1]


def test_presence_moves_when_someone_comes_or_a_state_changes_not_on_renewal_or_leaving() -> None:
    ledger = AwarenessLedger()
    browser = object()
    cursor_at = {"user": {"name": "ada"}, "cursors": [{"head": 3}]}
    assert ledger.record(browser, (entry(1, 0, cursor_at),))  # came
    assert not ledger.record(browser, (entry(1, 1, cursor_at),))  # renewed: the same state
    cursor_at["cursors"] = [{"head": 4}]
    assert ledger.record(browser, (entry(1, 2, cursor_at),))  # the cursor moved
    assert not ledger.record(browser, (AwarenessEntry(1, 3, "null"),))  # left
    assert ledger.record(browser, (entry(1, 4, cursor_at),))  # came back


def test_a_user_follows_the_connection_that_spoke_for_it_last() -> None:
    ledger = AwarenessLedger()
    old, new = object(), object()
    ledger.record(old, (entry(1, 0, {}),))
    ledger.record(new, (entry(1, 1, {}),))
    assert ledger.forget(old) is None
    assert protocol.decode_awareness(ledger.forget(new) or b"") == (AwarenessEntry(1, 2, "null"),)


def test_a_server_side_user_stays_its_owners_when_a_browser_relays_it() -> None:
    ledger = AwarenessLedger()
    hold, browser = object(), object()
    ledger.record(hold, (entry(7, 1, {"user": "agent"}),), pin=True)
    ledger.record(browser, (entry(7, 1, {"user": "agent"}),))  # relayed back
    ledger.record(browser, (AwarenessEntry(7, 2, "null"),))  # its timeout, relayed
    assert ledger.has(7)
    assert ledger.forget(browser) is None
    assert protocol.decode_awareness(ledger.forget(hold) or b"") == (AwarenessEntry(7, 2, "null"),)
    assert not ledger.has(7)
    ledger.record(browser, (entry(7, 3, {}),))  # no longer pinned: a client like any other
    assert ledger.forget(browser) is not None


def test_a_user_that_says_goodbye_is_not_announced_again() -> None:
    ledger = AwarenessLedger()
    owner = object()
    ledger.record(owner, (entry(1, 0, {}),))
    ledger.record(owner, (AwarenessEntry(1, 1, "null"),))
    assert ledger.present() is None
    assert ledger.forget(owner) is None


def test_the_ledger_names_the_person_a_connection_speaks_for() -> None:
    ledger = AwarenessLedger()
    lab, bare, odd = object(), object(), object()
    ledger.record(lab, (entry(1, 0, {"user": {"username": "t", "display_name": " Thomas "}}),))
    ledger.record(bare, (entry(2, 0, {"cursors": []}),))
    ledger.record(odd, (entry(3, 0, {"user": "Maya"}), entry(4, 0, {"user": {"name": "Maya"}})))

    assert ledger.user_name(lab) == "Thomas"
    assert ledger.user_name(bare) is None
    assert ledger.user_name(odd) == "Maya"
    assert ledger.user_name(object()) is None
    assert user_name_of("not json") is None and user_name_of("[1]") is None


def test_state_vectors_decode_to_clocks_by_client() -> None:
    doc, _ = an_update()
    assert protocol.decode_state_vector(doc.get_state()) == {doc.client_id: len("print('hi')")}
    assert protocol.decode_state_vector(Doc().get_state()) == {}
    with pytest.raises(FrameError):
        protocol.decode_state_vector(b"\x02\x01")


def test_the_unknown_session_reason_fits_a_close_frame() -> None:
    reason = protocol.unknown_session_reason("0b3c9f5e-0000-4000-8000-000000000000")
    assert json.loads(reason) == {
        "reason": "unknown_session",
        "sessionId": "0b3c9f5e-0000-4000-8000-000000000000",
        "reloadable": True,
    }
    too_long = protocol.unknown_session_reason("x" * 200)
    assert len(too_long.encode()) <= protocol.MAX_CLOSE_REASON
    assert json.loads(too_long) == {"reason": "unknown_session", "reloadable": True}
