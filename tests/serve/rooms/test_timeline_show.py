"""``timeline.show``: a room document brought to an earlier version by edits of its own."""

from __future__ import annotations

import nbformat
from jupyter_ydoc import YNotebook, YUnicode
from jupyterlab_chat.models import NewMessage
from jupyterlab_chat.ychat import YChat
from pycrdt import Doc

from ganymede.serve.rooms.document import DocumentKind, RoomDocument
from ganymede.serve.rooms.timeline import show


def test_a_notebook_shows_an_earlier_version_keeping_its_own_history() -> None:
    then = YNotebook()
    then.set(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("old", id="c1")]))
    document = RoomDocument(DocumentKind.NOTEBOOK)
    assert isinstance(document.shared, YNotebook)
    later = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("new", id="c1"), nbformat.v4.new_markdown_cell("x")]
    )
    document.shared.set(later)
    page = Doc()
    page.apply_update(document.doc.get_update())  # a page holding the room's history
    show(document, then.ydoc)
    assert [c["source"] for c in document.shared.get()["cells"]] == ["old"]
    page.apply_update(document.doc.get_update())
    assert [c["source"] for c in YNotebook(page).get()["cells"]] == ["old"]


def test_a_text_file_shows_an_earlier_version() -> None:
    then = YUnicode()
    then.set("first line\n")
    document = RoomDocument(DocumentKind.TEXT)
    document.shared.set("first line\nsecond line\n")
    show(document, then.ydoc)
    assert document.shared.get() == "first line\n"


def test_a_registered_type_shows_an_earlier_version() -> None:
    kind = DocumentKind.of("text", "chat")
    then = kind.new_shared()
    assert isinstance(then, YChat)
    then.add_message(NewMessage(body="first", sender="ann"))
    document = RoomDocument(kind)
    assert isinstance(document.shared, YChat)
    document.doc.apply_update(then.ydoc.get_update())
    document.shared.add_message(NewMessage(body="second", sender="bob"))
    show(document, then.ydoc)
    assert [m.body for m in document.shared.get_messages()] == ["first"]
