"""Security sweep: every endpoint refuses a missing or wrong token, every door refuses every escape.

1. Endpoints: the routes of a real ``ganymede serve`` (walked in a process of their own from the
   ServerApp's router, jupyter_server's and Ganymede's alike) are each called with no token and
   with a wrong one, for every method the handler defines, websockets by handshake. Each must be
   refused (401/403, or a redirect to the login page), except the few jupyter_server leaves open
   on purpose (``DELIBERATELY_OPEN``, each with its reason).
2. Path escapes: a generated list (``..`` in every position, absolute paths, ``~``, symlinks out
   of the root and out of a granted folder, encoded and double-encoded separators, backslashes,
   NUL, whole-segment near-misses, trailing slashes, unicode look-alikes) goes through every door
   that takes a path: the host responder under a real grant, the grants API and ``ganymede
   grant``, the agent API, the file id API and the contents API. Each must answer with a clear
   error, and never with what lies outside (a marker planted there), nor write there.

    python -m stress.security           # every route, every escape, a sample through the CLI
    python -m stress.security --long    # the CLI door with every escape too
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.parse
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import nbformat
from tornado.httpclient import HTTPClientError, HTTPRequest
from tornado.websocket import websocket_connect

from ganymede.notebook.hashing import source_hash
from stress.gateway import open_document
from tests.serve.conftest import RunningServer, jupyter_env, start_server, stop_server
from tests.serve.websocket import hang_up

MARKER = f"SECRET-{uuid.uuid4().hex}"
"""Planted in every file outside what a door may read: an answer holding it leaked."""
GRANTED = "journal"
CALLER = f"{GRANTED}/me.ipynb"
LINKED = f"{GRANTED}/linked.ipynb"
WRONG_TOKEN = "not-the-token"
METHODS = ("get", "post", "put", "patch", "delete")
REFUSED = frozenset({401, 403})

DELIBERATELY_OPEN = {
    "LoginFormHandler": "the login page must answer before anyone has a token",
    "LogoutHandler": "logging out needs no token (it clears the cookie)",
    "APIVersionHandler": "GET /api gives only the server version, for clients to probe",
    "FileFindHandler": "static files of the web page (scripts, styles), no user data",
    "StaticFileHandler": "static files of the web page, no user data",
    "RedirectWithParams": "redirects / to the default page, which checks the token itself",
    "TrailingSlashHandler": "redirects to the same route without the slash",
    "NotebooksRedirectHandler": "redirects the old /api/notebooks to /api/contents, which checks",
    "FilesRedirectHandler": "redirects to /files/, which checks the token itself",
    "Template404": "the 'not found' page for unknown URLs",
    "NotFoundHandler": "JupyterLab's 'not found' page for unknown /lab/ URLs",
    "PublicStaticFileHandler": "static files of the web page, no user data",
    "ThemesHandler": "JupyterLab's theme CSS, static files shipped with JupyterLab",
}

UPSTREAM_DEFECTS = {
    "LicensesHandler": (
        "jupyterlab_server: its refusal of a stranger fails inside send_error (its finish() "
        "takes an extra argument), so the request is refused but never answered"
    ),
}
"""Endpoints that refuse a stranger but misbehave while doing it, in code we do not own."""
STRANGER_TIMEOUT = 30.0
UPSTREAM_TIMEOUT = 3.0


# ---------------------------------------------------------------------------------------------
# The server under test: a root with a granted folder, a private one beside it, and files
# outside the root that symlinks lead to.


@dataclass
class Layout:
    """Where things are: ``outside`` sits beside ``root``; only ``root/journal`` is granted."""

    home: Path
    root: Path
    outside: Path

    @classmethod
    def make(cls, home: Path) -> Layout:
        root, outside = home / "root", home / "outside"
        for folder in (root / GRANTED, root / f"{GRANTED}-private", outside):
            folder.mkdir(parents=True, exist_ok=True)
        write_notebook(root / CALLER, f"print('{GRANTED}')")
        write_notebook(root / LINKED, "linked = True")
        write_notebook(root / GRANTED / "entry.ipynb", "entry = 1")
        write_notebook(root / f"{GRANTED}-private" / "diary.ipynb", f"# {MARKER}")
        write_notebook(outside / "secret.ipynb", f"# {MARKER}")
        (outside / "secret.txt").write_text(MARKER)
        (root / "link-out").symlink_to(outside, target_is_directory=True)
        (root / GRANTED / "escape.ipynb").symlink_to(outside / "secret.ipynb")
        (root / GRANTED / "to-private").symlink_to(
            root / f"{GRANTED}-private", target_is_directory=True
        )
        return cls(home, root, outside)

    def outside_state(self) -> dict[str, bytes]:
        """Every file outside the root with its bytes: a door that wrote there changes it."""
        state = {}
        for folder in (self.outside, self.root / f"{GRANTED}-private"):
            for path in sorted(folder.iterdir()):
                if path.is_file() and not path.is_symlink():
                    state[str(path)] = path.read_bytes()
        return state


def write_notebook(path: Path, source: str) -> None:
    cell = nbformat.v4.new_code_cell(source)
    cell["id"] = "only"
    path.write_text(nbformat.writes(nbformat.v4.new_notebook(cells=[cell])) + "\n")


# ---------------------------------------------------------------------------------------------
# Escapes


@dataclass(frozen=True)
class Escape:
    """A path a door must refuse: ``leaves`` is ``root`` (out of the served root) or ``grant``
    (in the root, but out of the granted folder: only grant-checking doors refuse those)."""

    path: str
    kind: str
    leaves: str

    @property
    def literal(self) -> bool:
        """Taken as it is, the path names something inside the root (``%2E%2E``, ``~``, a
        look-alike or a backslash are plain characters of a name on POSIX; a leading ``/`` is
        the root): a door may refuse it or take it as that name, never leave the root."""
        return self.kind in ("encoded", "lookalike", "backslash", "tilde") or (
            self.kind == "absolute" and ".." not in self.path
        )


def escapes(layout: Layout) -> list[Escape]:
    out_root = "../outside/secret.ipynb"
    private = f"{GRANTED}-private/diary.ipynb"
    found: list[Escape] = []

    def add(kind: str, leaves: str, *paths: str) -> None:
        found.extend(Escape(path, kind, leaves) for path in paths)

    # `..` in every position of a path inside the grant, leading out of the root
    segments = [GRANTED, "sub", "entry.ipynb"]
    for position in range(len(segments) + 1):
        climbs = [".."] * (position + 1)
        add("dotdot", "root", "/".join([*segments[:position], *climbs, "outside", "secret.ipynb"]))
    add("dotdot", "root", "..", "../", out_root, f"./{out_root}", f"{GRANTED}/../../outside")
    add("dotdot", "grant", f"{GRANTED}/../{private}", f"{GRANTED}/./../{private}")
    # absolute paths
    add("absolute", "root", str(layout.outside / "secret.ipynb"), "/etc/passwd", "//etc/passwd")
    add("absolute", "root", str(layout.outside), f"/..{layout.outside / 'secret.ipynb'}")
    # home directories
    add("tilde", "root", "~", "~/secret.ipynb", "~root/.bashrc", f"{GRANTED}/~/../../outside")
    # symlinks out of the root, out of the grant
    add("symlink", "root", "link-out/secret.ipynb", "link-out", f"{GRANTED}/escape.ipynb")
    add("symlink", "grant", f"{GRANTED}/to-private/diary.ipynb", f"{GRANTED}/to-private")
    # encoded separators and dots, once and twice
    add(
        "encoded",
        "root",
        "%2E%2E/outside/secret.ipynb",
        "..%2Foutside%2Fsecret.ipynb",
        "%2e%2e%2foutside%2fsecret.ipynb",
        "%252E%252E%252Foutside%252Fsecret.ipynb",
        f"{GRANTED}%2F..%2F..%2Foutside%2Fsecret.ipynb",
        "..%5Coutside%5Csecret.ipynb",
        "%c0%ae%c0%ae/outside/secret.ipynb",
    )
    # backslashes
    add("backslash", "root", "..\\outside\\secret.ipynb", f"{GRANTED}\\..\\..\\outside")
    # NUL bytes
    add("nul", "root", f"{out_root}\x00", f"{GRANTED}/entry.ipynb\x00/../../../outside")
    add("nul", "grant", f"{private}\x00.ipynb")
    # whole-segment near-misses of the granted folder
    add("near-miss", "grant", private, f"{GRANTED}-private", f"{GRANTED}x/../{private}")
    # trailing slashes
    add("trailing", "root", "../outside/", "link-out/", f"{out_root}/")
    add("trailing", "grant", f"{GRANTED}-private/", f"{private}/")
    # unicode look-alikes of dots and slashes
    add(
        "lookalike",
        "root",
        "\uff0e\uff0e/outside/secret.ipynb",  # fullwidth full stops
        "\u2025/outside/secret.ipynb",  # two dot leader
        "..\u2215outside\u2215secret.ipynb",  # division slash
        "..\uff0foutside\uff0fsecret.ipynb",  # fullwidth solidus
    )
    add("lookalike", "grant", f"{GRANTED}\u2010private/diary.ipynb")  # hyphen U+2010
    return found


# ---------------------------------------------------------------------------------------------
# Outcomes


@dataclass
class Sweep:
    """Every check made, and those that failed with what happened."""

    checks: int = 0
    failures: list[str] = field(default_factory=list)
    endpoints: int = 0
    open_on_purpose: list[str] = field(default_factory=list)
    doors: dict[str, int] = field(default_factory=dict)
    confirmed: list[str] = field(default_factory=list)
    """What jupyter_server's own contents API does with symlinks in the root (it follows them)."""
    escapes: int = 0

    def check(self, door: str, ok: bool, what: str) -> None:
        self.checks += 1
        self.doors[door] = self.doors.get(door, 0) + 1
        if not ok:
            self.failures.append(f"{door}: {what}")


def leaked(text: str) -> bool:
    return MARKER in text


def safe_answer(answer: httpx.Response, escape: Escape) -> bool:
    """A clear refusal (a 4xx whose body says something), or, for a path that is a name
    inside the root when taken literally, an answer about that name; never a server error,
    never what lies outside."""
    if leaked(answer.text):
        return False
    if 400 <= answer.status_code < 500:
        return bool(answer.text)
    if 300 <= answer.status_code < 400:  # jupyter_server drops a trailing slash by redirecting
        return escape.path.endswith("/")
    return escape.literal and answer.status_code < 300


# ---------------------------------------------------------------------------------------------
# 1. Endpoints and tokens


@dataclass(frozen=True)
class Route:
    pattern: str
    handler: str
    methods: tuple[str, ...]
    websocket: bool


def list_routes(layout: Layout, env: dict[str, str]) -> list[Route]:
    """The server's routes, from a ServerApp initialised (never started) in a process of its own."""
    command = [sys.executable, "-m", "stress.security", "--routes", str(layout.root)]
    listed = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return [
        Route(r["pattern"], r["handler"], tuple(r["methods"]), r["websocket"])
        for r in json.loads(listed.stdout.splitlines()[-1])
    ]


def print_routes(root: Path) -> None:
    """Initialise the ServerApp as ``ganymede serve`` does and print its routes as JSON."""
    from jupyter_server.serverapp import ServerApp
    from tornado.web import RequestHandler
    from tornado.websocket import WebSocketHandler

    from ganymede.serve.app import ServeOptions, server_argv, server_extensions
    from ganymede.serve.contents import GanymedeContentsManager

    app = ServerApp.instance(
        jpserver_extensions=server_extensions(),
        contents_manager_class=GanymedeContentsManager,
        default_url="/lab",
    )
    options = ServeOptions(root=root, ip="127.0.0.1", port=0, open_browser=False)
    app.initialize(argv=server_argv(options))
    routes = []
    for pattern, handler in _walk(app.web_app.default_router):
        if not (isinstance(handler, type) and issubclass(handler, RequestHandler)):
            continue
        methods = [m for m in METHODS if getattr(handler, m) is not getattr(RequestHandler, m)]
        websocket = issubclass(handler, WebSocketHandler)
        routes.append(
            {
                "pattern": pattern,
                "handler": handler.__name__,
                "methods": [] if websocket else methods,
                "websocket": websocket,
            }
        )
    print(json.dumps(routes), flush=True)
    os._exit(0)  # the app was never started: nothing to stop


def _walk(router: Any) -> Iterator[tuple[str, Any]]:
    for rule in getattr(router, "rules", []):
        target = rule.target
        regex = getattr(rule.matcher, "regex", None)
        if hasattr(target, "rules"):
            yield from _walk(target)
        elif regex is not None:
            yield regex.pattern, target


def concrete_url(pattern: str, samples: list[str]) -> str | None:
    """A URL the pattern matches, each group filled with the first sample it accepts."""
    url, index = "", 0
    body = pattern.removesuffix("$")
    while index < len(body):
        char = body[index]
        if char == "(":
            end = _group_end(body, index)
            group = body[index : end + 1]
            inner = re.sub(r"^\((\?P<\w+>|\?:)?", "(", group)
            choice = next((s for s in samples if re.fullmatch(inner, s)), None)
            if choice is None:
                return None
            url += choice
            index = end + 1
        elif char == "\\":
            url += body[index + 1]
            index += 2
        elif char in "?*+" or (char == "$" and index == len(body) - 1):
            url = url[:-1] if char in "?*" and url.endswith("/") else url
            index += 1
        else:
            url += char
            index += 1
    return url if re.fullmatch(pattern, url) else None


def _group_end(pattern: str, start: int) -> int:
    depth = 0
    index = start
    while index < len(pattern):
        if pattern[index] == "\\":
            index += 2
            continue
        if pattern[index] == "(":
            depth += 1
        elif pattern[index] == ")":
            depth -= 1
            if depth == 0:
                return index
        index += 1
    raise ValueError(f"unbalanced group in {pattern}")


def call(client: httpx.Client, method: str, url: str, params: dict[str, str]) -> str:
    """The status of one request without the token, with where it redirects to, or what
    went wrong on the way (an endpoint that hangs for a stranger is a finding too)."""
    try:
        answer = client.request(method.upper(), url, params=params, content=b"{}")
    except httpx.HTTPError as error:
        return f"no answer ({type(error).__name__})"
    location = answer.headers.get("location", "")
    return f"{answer.status_code} {location}".strip()


def status_refused(status: str) -> bool:
    code, _, location = status.partition(" ")
    if code.isdigit() and int(code) in REFUSED:
        return True
    return code in ("301", "302", "303", "307") and "/login" in location


async def refused_websocket(url: str, headers: dict[str, str]) -> bool:
    try:
        connection = await websocket_connect(HTTPRequest(url, headers=headers))
    except HTTPClientError as error:
        return error.code in REFUSED
    try:
        frame = await asyncio.wait_for(connection.read_message(), 10)
        return frame is None  # closed at once, nothing said
    except TimeoutError:
        return False
    finally:
        await hang_up(connection)


def sweep_endpoints(
    server: RunningServer, layout: Layout, sweep: Sweep, env: dict[str, str]
) -> None:
    routes = list_routes(layout, env)
    with server.client() as api:
        kernel_id = str(api.post("api/kernels", json={"name": "python3"}).json()["id"])
        file_id = str(api.post("api/fileid/index", params={"path": CALLER}).json()["id"])
        samples = [
            kernel_id,
            f"/{CALLER}",
            CALLER,
            "python3",
            f"json:notebook:{file_id}",
            "0123456789abcdef",
            "lab",
            "restart",
            "robots.txt",
            "favicon.ico",
            "/workspaces/default",
            "/tree/x",
            "1",
            "x",
            "",
        ]
        base = server.base.rstrip("/")
        without = {"": {}, "wrong": {"Authorization": f"token {WRONG_TOKEN}"}}
        try:
            for route in routes:
                url = concrete_url(route.pattern, samples)
                name = f"{route.handler} {route.pattern}"
                if url is None:
                    sweep.check("endpoints", False, f"{name}: no URL could be made for it")
                    continue
                sweep.endpoints += 1
                if route.handler in DELIBERATELY_OPEN:
                    sweep.open_on_purpose.append(f"{url} ({route.handler})")
                    continue
                if route.handler in UPSTREAM_DEFECTS:
                    with httpx.Client(timeout=UPSTREAM_TIMEOUT) as stranger:
                        status = call(stranger, "get", base + url, {})
                    ok = status_refused(status) or status.startswith("no answer")
                    sweep.check("endpoints", ok, f"{name}: GET {url} with no token → {status}")
                    reason = UPSTREAM_DEFECTS[route.handler]
                    sweep.confirmed.append(f"{url} ({route.handler}) → {status}: {reason}")
                    continue
                for label, headers in without.items():
                    if route.websocket:
                        ws_url = base.replace("http", "ws", 1) + url
                        ok = asyncio.run(refused_websocket(ws_url, headers))
                        sweep.check("endpoints", ok, f"{name}: websocket {label or 'no'} token")
                        continue
                    with httpx.Client(headers=headers, timeout=STRANGER_TIMEOUT) as stranger:
                        for method in route.methods:
                            what = f"{name}: {method.upper()} {url} with {label or 'no'} token"
                            status = call(stranger, method, base + url, {})
                            sweep.check("endpoints", status_refused(status), f"{what} → {status}")
                # the same through the query string
                with httpx.Client(timeout=STRANGER_TIMEOUT) as stranger:
                    for method in route.methods:
                        status = call(stranger, method, base + url, {"token": WRONG_TOKEN})
                        what = f"{name}: {method.upper()} {url}?token=wrong"
                        sweep.check("endpoints", status_refused(status), f"{what} → {status}")
        finally:
            api.delete(f"api/kernels/{kernel_id}")


# ---------------------------------------------------------------------------------------------
# 2. Doors that take a path


async def sweep_responder(layout: Layout, found: list[Escape], sweep: Sweep) -> None:
    """The host responder in process: ``journal/me.ipynb``'s kernel under the defaults (read and
    run ``journal``), and ``journal/linked.ipynb``'s under a stored grant that also names the
    symlinks out of the root (where they lead out, they must cover nothing)."""
    from ganymede.core import Notebooks
    from ganymede.errors import HostCallError
    from ganymede.execute.host_runs import run_for_host
    from ganymede.fileid import FileIdStore
    from ganymede.grant import Grant, Grants, GrantStore, NotebookGrant
    from ganymede.host.api import Caller
    from ganymede.host.responder import HostResponder

    defaults = Grant(read=(GRANTED,), run=(GRANTED,), edit_self=False)
    file_ids = FileIdStore(layout.root, layout.home / "responder-ids.db")
    store = GrantStore(layout.home / "responder-grants.toml")
    through_links = (GRANTED, "link-out", f"{GRANTED}/escape.ipynb")
    store.set(file_ids.index(LINKED), NotebookGrant(read=through_links), LINKED)
    grants = Grants(layout.root, defaults, store, file_ids)
    responder = HostResponder(Notebooks(layout.root), grants, run_notebook=run_for_host)
    callers = [Caller("plain", CALLER, defaults), Caller("linked", LINKED, defaults)]
    calls = [
        ("notebooks.read", "path", {}),
        ("notebooks.results", "path", {}),
        ("notebooks.list", "dir", {}),
        ("notebooks.search", "dir", {"query": "SECRET"}),
        ("notebooks.run", "path", {"timeout": 30}),
    ]
    try:
        for escape in found:
            for caller in callers:
                if caller is callers[1] and escape.leaves != "root":
                    continue  # its grant is wider inside the root on purpose
                for method, key, extra in calls:
                    what = f"{caller.notebook}: {method} {key}={escape.path!r} ({escape.kind})"
                    try:
                        answer = await responder.call(caller, method, {key: escape.path, **extra})
                    except HostCallError as error:
                        clear = error.code in ("denied", "failed") and bool(error.message)
                        ok = clear and not leaked(str(error))
                        sweep.check("host responder", ok, f"{what}: {error}")
                    else:
                        sweep.check("host responder", False, f"{what}: answered {answer!s:.120}")
    finally:
        file_ids.close()


def sweep_http_doors(server: RunningServer, found: list[Escape], sweep: Sweep) -> None:
    """The grants, agent, file id and contents APIs, with the token: refused all the same."""
    with server.client() as api:
        session = api.post("api/agent/sessions", json={"agent": "security-sweep"}).json()["session"]
        for escape in (e for e in found if e.leaves == "root"):
            for door, label, answer in _http_calls(api, session, escape):
                what = f"{label} {escape.path!r} ({escape.kind})"
                note = _by_design(door, label, escape, answer)
                if note is not None:
                    sweep.confirmed.append(f"{door} {what} → {answer.status_code}: {note}")
                    continue
                detail = f"{what} → {answer.status_code} {answer.text[:120]}"
                sweep.check(door, safe_answer(answer, escape), detail)
        api.delete(f"api/agent/sessions/{session}")


def _by_design(door: str, label: str, escape: Escape, answer: httpx.Response) -> str | None:
    """Why an answer that is no refusal is still what the door means to do, if it is."""
    if leaked(answer.text) and door != "contents API":
        return None
    if door == "contents API" and escape.kind == "symlink":
        return "jupyter_server follows symlinks placed in the root (its own rule)"
    if door == "contents API" and answer.status_code >= 500:
        return "jupyter_server answers 500 for a path through a file; nothing read"
    stored = door == "grants API" and label in ("PUT read=", "PUT run=")
    if stored and escape.kind in ("symlink", "trailing") and answer.status_code == 200:
        return "stored; a grant is resolved at every call, and one leading out covers nothing"
    return None


def _http_calls(
    api: httpx.Client, session: str, escape: Escape
) -> Iterator[tuple[str, str, httpx.Response]]:
    path = escape.path
    # dots encoded so that the client does not resolve `..` itself: the server must
    in_url = urllib.parse.quote(path, safe="/").replace(".", "%2E")
    agent = {"session": session, "path": path}
    yield "grants API", "GET ?path=", api.get("api/host/grants", params={"path": path})
    yield (
        "grants API",
        "PUT ?path=",
        api.put("api/host/grants", params={"path": path}, json={"read": [GRANTED]}),
    )
    for key in ("read", "run"):
        yield (
            "grants API",
            f"PUT {key}=",
            api.put("api/host/grants", params={"path": CALLER}, json={key: [path]}),
        )
    yield "grants API", "DELETE ?path=", api.delete("api/host/grants", params={"path": path})
    yield "agent API", "read", api.post("api/agent/read", json=agent)
    yield (
        "agent API",
        "cells add",
        api.post("api/agent/cells", json={**agent, "op": "add", "source": "x = 1"}),
    )
    yield "agent API", "create", api.post("api/agent/create", json=agent)
    yield "agent API", "results", api.get("api/agent/results", params={"path": path})
    yield "agent API", "list", api.get("api/agent/notebooks", params={"dir": path})
    yield "file id API", "index", api.post("api/fileid/index", params={"path": path})
    yield "file id API", "id", api.get("api/fileid/id", params={"path": path})
    yield "contents API", "GET", api.get(f"api/contents/{in_url}")
    if escape.kind != "symlink":  # writing through a symlink would change the outside
        yield (
            "contents API",
            "PUT",
            api.put(
                f"api/contents/{in_url}", json={"type": "file", "format": "text", "content": "x"}
            ),
        )


def sweep_grant_cli(
    server: RunningServer, found: list[Escape], sweep: Sweep, env: dict[str, str]
) -> None:
    """``ganymede grant`` against the running server: an escape as the notebook or the grant."""
    for escape in (e for e in found if e.leaves == "root" and "\x00" not in e.path):
        for args in ([escape.path, f"read={GRANTED}"], [CALLER, f"read={escape.path}"]):
            command = [
                sys.executable,
                "-m",
                "ganymede",
                "grant",
                *args,
                "--url",
                server.base,
                "--token",
                server.token,
            ]
            done = subprocess.run(
                command, env=env, cwd=server.root, capture_output=True, text=True, timeout=120
            )
            said = done.stdout + done.stderr
            refused = done.returncode != 0 and done.stderr.strip() != ""
            # a grant through a symlink is stored, and covers nothing (see _by_design)
            through_link = args[0] == CALLER and escape.kind in ("symlink", "trailing")
            stored = done.returncode == 0 and (escape.literal or through_link)
            clear = (refused or stored) and "Traceback" not in said
            what = f"grant {args!r} → {done.returncode} {done.stderr.strip()[:120]}"
            sweep.check("ganymede grant", clear and not leaked(said), what)


# ---------------------------------------------------------------------------------------------
# 3. Request cells: only a person's edit through a room client asks the agent anything


KERNEL_PRINTS = "print('@agent from a kernel')"
KERNEL_ADDS = (
    "from ganymede.kernel import host\n"
    "host().self.add('@agent from a kernel self.add', cell_type='markdown')\n"
    "print('added')"
)


async def sweep_requests(server: RunningServer, sweep: Sweep) -> None:
    """``@agent`` cells written by another program, printed by a kernel and added by another
    agent are text; the same cell added by a person in a room is the one request reported, by
    ``/api/agent/read`` since a mark and by ``/api/agent/watch``. So is a cell the notebook's own
    kernel adds through the host API (``self.add``)."""
    from tests.serve.test_agent_api import Agent, notebook_file, person

    path = notebook_file(server.root, "requests.ipynb", KERNEL_PRINTS, KERNEL_ADDS)
    with server.client() as api:
        agent, other = Agent(api, "claude-code"), Agent(api, "another-agent")
        observer = Agent(api, "observer")  # reads the room without moving the agent's mark

        def shown(cell_id: str) -> bool:
            return f'"{cell_id}"' in json.dumps(observer.read(path))

        mark = agent.read(path)["mark"]
        watch = {"agent": "claude-code", "settle": "0.5"}
        epoch = api.get("api/agent/watch", params={**watch, "wait": "0"}).json()["epoch"]

        on_disk = nbformat.read(server.root / path, as_version=4)
        planted = nbformat.v4.new_markdown_cell("@agent from another program", id="by-file")
        on_disk.cells.append(planted)
        (server.root / path).write_text(nbformat.writes(on_disk) + "\n")
        await _until(lambda: shown("by-file"), "the file's cell to reach the room")

        # the notebook's own kernel (its session), so self.* calls edit this notebook
        notebook_session = {"path": path, "type": "notebook", "kernel": {"name": "python3"}}
        kernel_id = str(api.post("api/sessions", json=notebook_session).json()["kernel"]["id"])
        document = open_document(api, path)
        cells = [("cell-0", KERNEL_PRINTS), ("cell-1", KERNEL_ADDS)]
        body = {
            "document_id": document,
            "cells": [{"cell_id": i, "source_hash": source_hash(source)} for i, source in cells],
            "request_id": "r1",
            "wait": 120,
        }
        ran = api.post(f"api/kernels/{kernel_id}/execute", json=body, timeout=180).json()
        if "cells" not in ran:
            raise AssertionError(f"the execute endpoint refused the run: {ran}")
        printed = ["".join(o.get("text", "") for o in c["outputs"]) for c in ran["cells"]]
        expected = ["@agent from a kernel\n", "added\n"]
        sweep.check("requests", printed == expected, f"the kernel printed {printed!r}")
        api.delete(f"api/kernels/{kernel_id}")

        added = other.cells(
            path=path, op="add", cell_type="markdown", source="@agent from an agent"
        )
        sweep.check("requests", added.status_code == 200, f"another agent's add → {added.text}")

        async with person(server, path, "Thomas") as thomas:
            ask = {"cell_type": "markdown", "id": "by-person", "source": "@agent from a person"}
            thomas.shared.append_cell({**ask, "metadata": {}})  # type: ignore[attr-defined]
            await _until(lambda: shown("by-person"), "the person's cell to reach the room")

        changes = agent.read(since=mark)["changes"]
        requests = sorted(c["id"] for c in changes if "request" in c["change"])
        others = sorted(c["id"] for c in changes if "request" not in c["change"])
        sweep.check("requests", requests == ["by-person"], f"read since: requests {requests}")
        kernel_added = [c for c in changes if c.get("by") == "kernel"]
        sweep.check("requests", len(kernel_added) == 1, f"the kernel's cell: {kernel_added}")
        sweep.check("requests", "by-file" in others and "cell-0" in others, f"text: {others}")
        watched = api.get(
            "api/agent/watch", params={**watch, "epoch": epoch, "wait": "20"}, timeout=40
        ).json()
        events = [(e["id"], e["change"]) for e in watched["events"]]
        sweep.check("requests", events == [("by-person", ["added", "request"])], f"watch: {events}")


async def _until(condition: Any, what: str, timeout: float = 30.0) -> None:
    from tests.serve.rooms.client import eventually

    await eventually(condition, what, timeout)


# ---------------------------------------------------------------------------------------------


def run(home: Path, *, cli_sample: int | None) -> Sweep:
    layout = Layout.make(home)
    env = jupyter_env(home / "jupyter")
    before = layout.outside_state()
    found = escapes(layout)
    sweep = Sweep(escapes=len(found))
    asyncio.run(sweep_responder(layout, found, sweep))
    server = start_server(layout.root, env)
    try:
        sweep_endpoints(server, layout, sweep, env)
        sweep_http_doors(server, found, sweep)
        asyncio.run(sweep_requests(server, sweep))
        cli = [e for e in found if e.leaves == "root"]
        sweep_grant_cli(
            server,
            cli if cli_sample is None else cli[:: max(1, len(cli) // cli_sample)],
            sweep,
            env,
        )
        alive = server.process.poll() is None
        sweep.check("server", alive, "the server stopped during the sweep")
    finally:
        stop_server(server)
    sweep.check("outside", layout.outside_state() == before, "a file outside the root changed")
    return sweep


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--long", action="store_true", help="every escape through the CLI too")
    parser.add_argument("--routes", type=Path, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.routes is not None:
        print_routes(arguments.routes)
        return
    with tempfile.TemporaryDirectory(prefix="ganymede-security-") as scratch:
        sweep = run(Path(scratch), cli_sample=None if arguments.long else 6)
    print(f"endpoints checked: {sweep.endpoints} ({len(sweep.open_on_purpose)} open on purpose)")
    for entry in sweep.open_on_purpose:
        print(f"  open on purpose: {entry}")
    print(f"escapes generated: {sweep.escapes}")
    for entry in sweep.confirmed:
        print(f"  by design or upstream: {entry}")
    for door, count in sorted(sweep.doors.items()):
        print(f"  {door}: {count} checks")
    print(f"checks: {sweep.checks}, failures: {len(sweep.failures)}")
    for failure in sweep.failures:
        print(f"  FAIL {failure}")
    sys.exit(1 if sweep.failures else 0)


if __name__ == "__main__":
    main()
