"""Opening a chat: `ganymede serve` against jupyter-collaboration, both with jupyterlab-chat.

A `.chat` file is a JSON document jupyterlab-chat's `YChat` reads and writes (the `chat` type of
the `jupyter_ydoc` entry points). Each server serves copies of one generated chat (a thousand
messages by default); one client opens a fresh copy on each in turn, cold, and times the
session PUT, the websocket and the sync until its document holds every message, as the chat
panel's docprovider does. The anchor is the venv bench/rooms.py makes, with jupyterlab-chat
added on first use.

    .venv/bin/python bench/chat.py [--messages 1000] [--opens 7]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

from common import Server, connect_room, start_ganymede
from jupyterlab_chat.models import NewMessage, User
from jupyterlab_chat.ychat import YChat
from pycrdt import Array, Doc
from rooms import ensure_anchor, start_anchor

CHAT_PACKAGE = "jupyterlab-chat"


def chat_file(messages: int) -> str:
    """A chat of ``messages`` messages between two people, as jupyterlab-chat writes it."""
    chat = YChat()
    for name in ("ada", "grace"):
        chat.set_user(User(username=name, name=name.title(), display_name=name.title()))
    for number in range(messages):
        sender = "ada" if number % 2 else "grace"
        chat.add_message(NewMessage(body=f"message {number}: {'words ' * 12}", sender=sender))
    return chat.get()


def ensure_chat_in_anchor(venv: Path) -> None:
    python = venv / "bin" / "python"
    found = subprocess.run([str(python), "-c", "import jupyterlab_chat"], capture_output=True)
    if found.returncode != 0:
        print(f"installing {CHAT_PACKAGE} into {venv} ...", file=sys.stderr)
        install = [str(python), "-m", "pip", "install", "--quiet", CHAT_PACKAGE]
        subprocess.run(install, check=True)


async def open_chat(server: Server, path: str, messages: int) -> float:
    """Seconds from the session request until the client holds every message."""
    started = time.perf_counter()
    doc = Doc()
    # The client's document starts empty, as the chat panel's does before its first sync.
    client = await connect_room(server, path, "text", "chat", SimpleNamespace(ydoc=doc))
    await client.until(
        lambda: len(doc.get("messages", type=Array)) == messages,
        f"{path} to sync",
    )
    elapsed = time.perf_counter() - started
    await client.close()
    return elapsed


async def measure(servers: list[Server], opens: int, messages: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {server.name: [] for server in servers}
    for repetition in range(opens):
        for server in servers:
            times[server.name].append(await open_chat(server, f"c{repetition}.chat", messages))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--opens", type=int, default=7, help="cold opens per server")
    parser.add_argument(
        "--anchor-venv", type=Path, default=Path(".bench-venvs/jupyter-collaboration")
    )
    args = parser.parse_args()
    venv = args.anchor_venv.absolute()
    versions = ensure_anchor(venv)
    ensure_chat_in_anchor(venv)
    text = chat_file(args.messages)
    with tempfile.TemporaryDirectory() as scratch:
        servers: list[Server] = []
        try:
            for name in ("ganymede", "jupyter-collaboration"):
                root = Path(scratch, name, "root")
                root.mkdir(parents=True)
                for repetition in range(args.opens):
                    (root / f"c{repetition}.chat").write_text(text)
                home = Path(scratch, name, "jupyter")
                home.mkdir()
                start = start_ganymede if name == "ganymede" else start_anchor
                servers.append(start(root, home) if name == "ganymede" else start(venv, root, home))
            times = asyncio.run(measure(servers, args.opens, args.messages))
        finally:
            for server in servers:
                server.stop()
    print(f"chat: {args.messages} messages, {len(text) / 1e3:.0f} kB; anchor: {versions}")
    ours, anchor = (statistics.median(times[name]) * 1000 for name in times)
    print(f"open, cold, median of {args.opens} (ms)   ganymede {ours:.1f}   anchor {anchor:.1f}")
    print(f"ratio open  ganymede / jupyter-collaboration {ours / anchor:5.2f}  (target <= 1)")


if __name__ == "__main__":
    main()
