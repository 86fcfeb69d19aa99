"""Documents of types registered in the jupyter_ydoc entry points: a chat (jupyterlab-chat) and
a CAD model (jupytercad-core), loaded, saved and merged with changes to their files."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pycrdt import Map

from ganymede.errors import UnreadableDocument, UsageError
from ganymede.serve.rooms.document import DocumentKind, RoomDocument
from ganymede.serve.rooms.mergein import apply_merge, merge_file_change, restore_roots

CHAT = DocumentKind.of("text", "chat")
JCAD = DocumentKind.of("text", "jcad")


def message(number: int, body: str | None = None) -> dict[str, Any]:
    return {
        "body": body if body is not None else f"message {number}",
        "id": f"m{number}",
        "time": 1700000000.0 + number,
        "sender": "ada",
        "raw_time": False,
    }


def chat_bytes(*messages: dict[str, Any], users: dict[str, Any] | None = None) -> bytes:
    content = {
        "messages": list(messages),
        "users": users if users is not None else {"ada": {"username": "ada"}},
        "attachments": {},
        "metadata": {"id": "chat-1"},
    }
    return json.dumps(content, indent=2).encode()


def loaded(kind: DocumentKind, data: bytes) -> RoomDocument:
    document = RoomDocument(kind)
    document.load(data, "talk.chat", "hash")
    return document


def take_in(document: RoomDocument, base: bytes, theirs: bytes) -> Any:
    merge = merge_file_change(document, base, theirs, "talk.chat")
    with document.doc.transaction():
        apply_merge(document, merge)
    return merge


def bodies(document: RoomDocument) -> list[str]:
    return [m["body"] for m in json.loads(str(document.content()))["messages"]]


def test_registered_types_open_as_text_and_unknown_ones_are_refused_by_name() -> None:
    assert (CHAT.format, CHAT.type, CHAT.registered) == ("text", "chat", True)
    assert DocumentKind.of("json", "notebook") is DocumentKind.NOTEBOOK
    assert DocumentKind.of("text", "file") is DocumentKind.TEXT
    with pytest.raises(UsageError, match=r"'nowhere'.*text:chat"):
        DocumentKind.of("text", "nowhere")
    with pytest.raises(UsageError, match="'json'"):
        DocumentKind.of("json", "chat")


def test_a_chat_loads_through_its_class_and_saves_what_its_class_writes() -> None:
    data = chat_bytes(message(1), message(2))
    document = loaded(CHAT, data)
    assert document.shared.get_messages()[1].body == "message 2"  # type: ignore[attr-defined]
    assert json.loads(document.to_bytes()) == json.loads(data)


def test_a_message_appended_to_the_file_is_added_once_beside_the_rooms_own() -> None:
    base = chat_bytes(message(1))
    document = loaded(CHAT, base)
    with document.doc.transaction():
        document.shared.ymessages.append(Map(message(3)))  # type: ignore[attr-defined]
    merge = take_in(document, base, chat_bytes(message(1), message(2)))
    assert bodies(document) == ["message 1", "message 2", "message 3"]
    assert merge.room_changed and merge.file_changed and not merge.conflicts
    # Taking the same file in again (as after the room saved) changes nothing.
    again = take_in(
        document, chat_bytes(message(1), message(2)), chat_bytes(message(1), message(2))
    )
    assert bodies(document) == ["message 1", "message 2", "message 3"]
    assert not again.room_changed


def test_the_file_wins_a_message_both_changed_and_keeps_what_only_the_room_changed() -> None:
    base = chat_bytes(message(1), message(2))
    document = loaded(CHAT, base)
    with document.doc.transaction():
        document.shared.ymessages[0]["body"] = "room's edit"  # type: ignore[attr-defined]
        document.shared.ymessages[1]["body"] = "room's other edit"  # type: ignore[attr-defined]
    merge = take_in(document, base, chat_bytes(message(1), message(2, "file's edit")))
    assert bodies(document) == ["room's edit", "file's edit"]
    assert [conflict.part for conflict in merge.conflicts] == ["messages"]


def test_a_key_of_a_map_merges_by_itself() -> None:
    base = chat_bytes(message(1))
    document = loaded(CHAT, base)
    with document.doc.transaction():
        document.shared.yusers["bob"] = {"username": "bob"}  # type: ignore[attr-defined]
    both = {"ada": {"username": "ada", "name": "Ada"}}
    take_in(document, base, chat_bytes(message(1), users=both))
    users = json.loads(str(document.content()))["users"]
    assert users == {"ada": {"username": "ada", "name": "Ada"}, "bob": {"username": "bob"}}


def test_a_half_written_file_is_unreadable_not_an_empty_chat() -> None:
    base = chat_bytes(message(1))
    document = loaded(CHAT, base)
    with pytest.raises(UnreadableDocument, match="chat"):
        merge_file_change(document, base, base[: len(base) // 2], "talk.chat")
    assert bodies(document) == ["message 1"]


def jcad_bytes(*names: str, color: str = "#808080") -> bytes:
    objects = [
        {"name": name, "visible": True, "shape": "Part::Box", "parameters": {"Color": color}}
        for name in names
    ]
    content = {"schemaVersion": "3.0.0", "objects": objects, "options": {}, "metadata": {}}
    return json.dumps(content | {"outputs": {}}).encode()


def test_a_cad_model_merges_objects_by_element() -> None:
    base = jcad_bytes("box", "cone")
    document = loaded(JCAD, base)
    objects = document.shared.ydoc["objects"]
    with document.doc.transaction():
        objects[1]["visible"] = False
    take_in(document, base, jcad_bytes("box", "cone", "torus"))
    content = json.loads(str(document.content()))
    assert [(o["name"], o["visible"]) for o in content["objects"]] == [
        ("box", True),
        ("cone", False),
        ("torus", True),
    ]


def test_a_cad_file_its_class_refuses_is_unreadable() -> None:
    with pytest.raises(UnreadableDocument, match="jcad"):
        loaded(JCAD, b'{"schemaVersion": "99.0.0", "objects": []}')


def test_a_read_only_room_puts_a_chat_back_as_it_was() -> None:
    document = loaded(CHAT, chat_bytes(message(1), message(2)))
    before = document.copy()
    with document.doc.transaction():
        document.shared.ymessages[0]["body"] = "an edit to undo"  # type: ignore[attr-defined]
        del document.shared.ymessages[1]  # type: ignore[attr-defined]
        document.shared.yusers["eve"] = {"username": "eve"}  # type: ignore[attr-defined]
    with document.doc.transaction():
        restore_roots(document, before)
    assert json.loads(str(document.content())) == json.loads(str(before.content()))
