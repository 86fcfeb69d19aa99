"""A JupyterLab (or Notebook 7) page in headless Chromium, and what it did on the wire.

The page records its requests, websockets, console errors and failed requests from the moment it
is created, so a test can assert on what the real frontend asked of the server and a failure can
say what went wrong in the browser, not only that a wait timed out.
"""

from __future__ import annotations

import json
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import nbformat
import watchfiles
from playwright.sync_api import (
    BrowserContext,
    ConsoleMessage,
    Locator,
    Page,
    Request,
    Response,
    WebSocket,
    expect,
)

from tests.serve.conftest import RunningServer

# How long JupyterLab may take to load and show a document (the page and its bundles on two
# busy cores, then the session request, the room websocket and its first sync).
OPEN_TIMEOUT_MS = 45_000
# Any later wait on the page: a room round trip, a save, another page catching up.
STEP_TIMEOUT_MS = 20_000
# The autosave writes one second after the last edit; the rest is slack for a loaded machine.
DISK_TIMEOUT_S = 15.0
RAW_MESSAGE = 2
T = TypeVar("T")
AnyLabPage = TypeVar("AnyLabPage", bound="LabPage")

KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


def write_notebook(path: Path, *cells: nbformat.NotebookNode) -> Path:
    """A notebook naming its kernel, so JupyterLab opens it without asking which kernel to start."""
    notebook = nbformat.v4.new_notebook(cells=list(cells), metadata={"kernelspec": KERNELSPEC})
    path.write_text(nbformat.writes(notebook) + "\n")
    return path


def sources_on_disk(path: Path) -> list[str]:
    return [cell["source"] for cell in nbformat.reads(path.read_text(), as_version=4).cells]


def wait_for_disk(path: Path, read: Callable[[Path], T], wanted: T) -> None:
    """Until ``read(path) == wanted``, woken by file-system events on its directory.

    The watcher also wakes every quarter second, so a change made before it started watching is
    still seen.
    """
    deadline = time.monotonic() + DISK_TIMEOUT_S
    seen = read(path)
    watching = watchfiles.watch(path.parent, rust_timeout=250, yield_on_timeout=True)
    for _changes in watching:
        seen = read(path)
        if seen == wanted or time.monotonic() > deadline:
            break
    assert seen == wanted, f"{path.name} on disk after {DISK_TIMEOUT_S} s: {seen!r}"


def expect_source(editor: Locator, source: str, timeout: float = STEP_TIMEOUT_MS) -> None:
    """Until a CodeMirror editor shows ``source``, compared line by line.

    The editor's text content runs its lines together, so compare each ``.cm-line`` instead.
    """
    expect(editor.locator(".cm-line")).to_have_text(source.split("\n"), timeout=timeout)


def raw_message(frame: bytes) -> dict[str, Any] | None:
    """The JSON of a room's RAW frame (type 2, then one length-prefixed string), else None."""
    if not frame or frame[0] != RAW_MESSAGE:
        return None
    length, shift, offset = 0, 0, 1
    while True:
        byte = frame[offset]
        length |= (byte & 0x7F) << shift
        offset += 1
        shift += 7
        if byte < 0x80:
            break
    message: dict[str, Any] = json.loads(frame[offset : offset + length])
    return message


@dataclass
class LabPage:
    """One browser context with JupyterLab open on one file of the served root."""

    server: RunningServer
    path: str
    page: Page
    requests: list[Request] = field(default_factory=list)
    websockets: list[WebSocket] = field(default_factory=list)
    raw_replies: list[dict[str, Any]] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    console_warnings: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)

    @classmethod
    def record(
        cls: type[AnyLabPage], context: BrowserContext, server: RunningServer, path: str
    ) -> AnyLabPage:
        """A new page in ``context`` whose traffic is recorded before it loads anything."""
        context.set_default_timeout(STEP_TIMEOUT_MS)
        lab = cls(server, path, context.new_page())
        lab.page.on("request", lab._on_request)
        lab.page.on("websocket", lab._on_websocket)
        lab.page.on("console", lab._on_console)
        lab.page.on("pageerror", lambda error: lab.console_errors.append(f"uncaught: {error}"))
        lab.page.on("requestfailed", lab._on_request_failed)
        lab.page.on("response", lab._on_response)
        return lab

    def open(self) -> LabPage:
        """Load ``/lab/tree/<path>`` on a fresh workspace and wait until the document shows.

        An empty path loads ``/lab`` and waits for the launcher JupyterLab opens on an empty
        workspace, for a test that creates its document the way a person does.
        """
        query = urllib.parse.urlencode({"reset": "", "token": self.server.token})
        if not self.path:
            self.page.goto(f"{self.server.base}lab?{query}")
            expect(self.launcher).to_be_visible(timeout=OPEN_TIMEOUT_MS)
            return self
        self.page.goto(
            f"{self.server.base}{self.document_route}{urllib.parse.quote(self.path)}?{query}"
        )
        if self.path.endswith(".ipynb"):
            self._wait_for_notebook()
        elif self.path.endswith(".chat"):
            expect(self.chat_messages).to_be_visible(timeout=OPEN_TIMEOUT_MS)
        elif self.path.endswith(".jcad"):
            names = [obj["name"] for obj in json.loads(self.file.read_text())["objects"]]
            expect(self.cad_objects).to_have_text(names, timeout=OPEN_TIMEOUT_MS)
        else:
            self._wait_for_text_file()
        return self

    @property
    def file(self) -> Path:
        return self.server.root / self.path

    @property
    def document_route(self) -> str:
        """Where the frontend opens a file, below the server's base URL."""
        return "lab/tree/"

    @property
    def kernel_idle(self) -> Locator:
        """Shows once the notebook's kernel is connected and idle: in JupyterLab's status bar."""
        idle = f"{KERNELSPEC['display_name']} | Idle"
        return self.page.locator(".jp-StatusBar-Widget").get_by_text(idle, exact=True)

    @property
    def document_tab(self) -> Locator:
        return self.page.locator("#jp-main-dock-panel .lm-TabBar-tab", has_text=self.file.name)

    @property
    def launcher(self) -> Locator:
        return self.page.locator("#jp-main-dock-panel .jp-Launcher")

    def launcher_card(self, caption: str) -> Locator:
        """The launcher's card for a command, found by the command's caption (its tooltip)."""
        return self.launcher.locator(f'.jp-LauncherCard[title="{caption}"]')

    @property
    def cells(self) -> Locator:
        return self.page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell")

    def cell_editor(self, index: int) -> Locator:
        return self.cells.nth(index).locator(".cm-content")

    @property
    def file_editor(self) -> Locator:
        return self.page.locator(".jp-FileEditor .cm-content")

    @property
    def chat_messages(self) -> Locator:
        """jupyterlab-chat's list of messages in the open chat."""
        return self.page.locator(".jp-chat-widget .jp-chat-messages-container")

    @property
    def chat_bodies(self) -> Locator:
        """Each message's rendered body in the open chat, one per message."""
        return self.page.locator(".jp-chat-widget .jp-chat-rendered-message")

    @property
    def chat_input(self) -> Locator:
        return self.page.locator(".jp-chat-widget .jp-chat-input-container textarea").first

    @property
    def cad_objects(self) -> Locator:
        """The top-level entries of JupyterCAD's object tree (its left panel), one per object."""
        return self.page.locator(".jpcad-sidebar-treepanel .jpcad-object-tree-item")

    def type_at_end(self, editor: Locator, text: str) -> None:
        """Click into ``editor``, go to its end and type ``text`` key by key, as a person does."""
        editor.click()
        self.page.keyboard.press("Control+End")
        self.page.keyboard.type(text)

    def session_reply(self) -> dict[str, Any]:
        """The answer to the docprovider's ``PUT api/collaboration/session/<path>``."""
        wanted = f"/api/collaboration/session/{urllib.parse.quote(self.path, safe='')}"
        puts = [
            request
            for request in self.requests
            if request.method == "PUT" and urllib.parse.urlsplit(request.url).path == wanted
        ]
        assert puts, f"no PUT {wanted}\n{self.diagnostics()}"
        response = puts[-1].response()
        assert response is not None, f"PUT {wanted} got no answer\n{self.diagnostics()}"
        assert response.ok, f"PUT {wanted} answered {response.status}\n{self.diagnostics()}"
        reply: dict[str, Any] = response.json()
        return reply

    def wait_for_console_error(self, text: str) -> None:
        """Until the page has logged an error containing ``text``, seen before this call or during.

        The sync driver delivers console events only inside its own calls, so none can slip in
        between looking through those recorded and starting to wait for the next.
        """
        if any(text in error for error in self.console_errors):
            return
        self.page.wait_for_event(
            "console",
            predicate=lambda message: message.type == "error" and text in message.text,
            timeout=STEP_TIMEOUT_MS,
        )

    def room_websockets(self, room: str) -> list[WebSocket]:
        wanted = f"/api/collaboration/room/{room}"
        return [ws for ws in self.websockets if urllib.parse.urlsplit(ws.url).path == wanted]

    def diagnostics(self) -> str:
        """What the browser saw go wrong, and the end of the server's log."""
        sockets = [f"{ws.url} ({'closed' if ws.is_closed() else 'open'})" for ws in self.websockets]
        server_log = self.server.log.read_text(errors="replace").splitlines()[-40:]
        parts = {
            "console errors": self.console_errors,
            "console warnings": self.console_warnings,
            "failed requests": self.failed_requests,
            "websockets": sockets,
            "save replies": [json.dumps(reply) for reply in self.raw_replies],
            "server log (last 40 lines)": server_log,
        }
        return "\n".join(
            f"-- {title}:\n" + ("\n".join(lines) if lines else "(none)")
            for title, lines in parts.items()
        )

    def _wait_for_notebook(self) -> None:
        """Every cell on disk shows, code cells with their source (the room has synced), and
        the kernel is idle: JupyterLab has finished the edits it makes on its own as a kernel
        starts (the notebook's ``language_info``) and no request is still starting one."""
        notebook = nbformat.reads(self.file.read_text(), as_version=4)
        expect(self.cells).to_have_count(len(notebook.cells), timeout=OPEN_TIMEOUT_MS)
        for index, cell in enumerate(notebook.cells):
            if cell.cell_type == "code":
                expect_source(self.cell_editor(index), cell.source)
        expect(self.kernel_idle).to_be_visible(timeout=OPEN_TIMEOUT_MS)

    def _wait_for_text_file(self) -> None:
        first_line = self.file.read_text().splitlines()[0]
        expect(self.file_editor).to_contain_text(first_line, timeout=OPEN_TIMEOUT_MS)

    def _on_request(self, request: Request) -> None:
        self.requests.append(request)

    def _on_websocket(self, websocket: WebSocket) -> None:
        self.websockets.append(websocket)
        if "/api/collaboration/room/" in websocket.url:
            websocket.on("framereceived", self._on_room_frame)

    def _on_room_frame(self, frame: str | bytes) -> None:
        message = raw_message(frame) if isinstance(frame, bytes) else None
        if message is not None:
            self.raw_replies.append(message)

    def _on_console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.console_errors.append(message.text)
        elif message.type == "warning":
            self.console_warnings.append(message.text)

    def _on_request_failed(self, request: Request) -> None:
        self.failed_requests.append(f"{request.method} {request.url}: {request.failure}")

    def _on_response(self, response: Response) -> None:
        if response.status >= 400:
            request = response.request
            self.failed_requests.append(f"{response.status} {request.method} {request.url}")


class NotebookPage(LabPage):
    """Notebook 7 (``jupyter notebook``) open on one notebook.

    Its page is built from JupyterLab's own plugins (the same cells, CodeMirror editors and
    collaboration frontend), so everything but its shell is LabPage's: it opens documents under
    ``notebooks/`` and, having no status bar, shows the kernel's state in the notebook's toolbar.
    """

    @property
    def document_route(self) -> str:
        return "notebooks/"

    @property
    def kernel_idle(self) -> Locator:
        """The toolbar's kernel indicator reads ``unknown`` until the kernel connection is up."""
        return self.page.locator(
            '.jp-NotebookPanel .jp-Notebook-ExecutionIndicator[data-status="idle"]'
        )
