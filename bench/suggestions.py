"""What an agent's suggestion costs: the fork it makes, and whether accepting or rejecting
leaves anything behind (targets: <= 2 ms plus the fork's document size, nothing left).

A `ganymede serve` of its own holds a generated notebook; an agent session suggests an edit of
one cell over the agent API (`POST /api/agent/cells` with `suggest`) and a person rejects or
accepts it, 1,000 times. The anchor, in the same run: the same edit made directly (no fork). The
fork's cost is the suggestion's round trip less the direct edit's. Memory: the server's resident
size after a warm-up against after the 1,000, and the forks and suggestions still kept.

    .venv/bin/python bench/suggestions.py [--rounds 1000] [--cells 200]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
from common import make_notebook, notebook_bytes, start_ganymede

NOTEBOOK = "suggested.ipynb"


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise SystemExit("no VmRSS")


def document_copy(document: bytes) -> float:
    """What a fork pays for the document's size: a room document copied as a fork copies it."""
    import json

    from ganymede.serve.rooms.document import DocumentKind, RoomDocument

    source = RoomDocument(DocumentKind.NOTEBOOK)
    source.shared.set(json.loads(document))
    timings = []
    for _ in range(50):
        started = time.perf_counter()
        source.copy()
        timings.append(time.perf_counter() - started)
    return statistics.median(timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--cells", type=int, default=200)
    parser.add_argument(
        "--reject-only",
        action="store_true",
        help="Reject every suggestion and time the direct edit apart, so the notebook's history "
        "does not grow: what is left after the rounds is then only what suggestions leave.",
    )
    parser.add_argument(
        "--rss-every",
        type=int,
        default=0,
        help="Also print the server's RSS every N rounds: growth that levels off is the "
        "allocator's and caches' warming, growth that goes on is something kept.",
    )
    args = parser.parse_args()
    document = notebook_bytes(make_notebook(args.cells))
    with tempfile.TemporaryDirectory() as scratch:
        root, home = Path(scratch) / "root", Path(scratch) / "home"
        root.mkdir()
        (root / NOTEBOOK).write_bytes(document)
        server = start_ganymede(root, home)
        try:
            with httpx.Client(base_url=server.base, headers=server.headers, timeout=60) as api:
                session = api.post("api/agent/sessions", json={"agent": "bench"}).json()["session"]
                cells = api.post("api/agent/read", json={"session": session, "path": NOTEBOOK})
                first = cells.json()["notebook"]["cells"][0]["id"]

                def edit(source: str, suggest: bool) -> tuple[float, dict[str, object]]:
                    body = {"session": session, "path": NOTEBOOK, "op": "edit", "id": first}
                    started = time.perf_counter()
                    answer = api.post(
                        "api/agent/cells", json={**body, "source": source, "suggest": suggest}
                    )
                    elapsed = time.perf_counter() - started
                    answer.raise_for_status()
                    return elapsed, answer.json()

                def decide(suggestion: dict[str, object], action: str) -> None:
                    api.post(
                        f"api/agent/suggestions/{suggestion['id']}",
                        json={"action": action, "by": "Thomas"},
                    ).raise_for_status()

                def round_of(number: int) -> tuple[float, float]:
                    if args.reject_only:  # the same text again: the history stays as it is
                        direct, _ = edit(str(cells.json()["notebook"]["cells"][0]["source"]), False)
                    else:
                        direct, _ = edit(f"x = {number}", suggest=False)
                    suggested, answer = edit(f"x = {number} + 1", suggest=True)
                    accept = number % 2 and not args.reject_only
                    decide(answer["suggestion"], "accept" if accept else "reject")  # type: ignore[arg-type]
                    api.get("api/agent/changed", params={"agent": "bench"})  # as every reply
                    if not args.reject_only:  # a new mark each round, kept as marks are
                        api.post("api/agent/read", json={"session": session, "path": NOTEBOOK})
                    return direct, suggested

                for number in range(50):  # warm-up: caches, allocator, the first fork
                    round_of(number)
                before = rss_mb(server.process.pid)
                timings = []
                for number in range(50, 50 + args.rounds):
                    timings.append(round_of(number))
                    done = number - 49
                    if args.rss_every and done % args.rss_every == 0 and done < args.rounds:
                        print(
                            f"server RSS after {done} rounds: {rss_mb(server.process.pid):.1f} MB"
                        )
                after = rss_mb(server.process.pid)
                left = api.get("api/agent/suggestions").json()["suggestions"]
                api.delete(f"api/agent/sessions/{session}")
        finally:
            server.stop()
    copy = document_copy(document)
    direct = statistics.median(t[0] for t in timings)
    suggested = statistics.median(t[1] for t in timings)
    print(f"notebook: {args.cells} cells, {len(document) / 1e6:.2f} MB")
    print(f"direct edit p50 of {args.rounds}: {direct * 1e3:.2f} ms")
    print(f"suggested edit (fork) p50 of {args.rounds}: {suggested * 1e3:.2f} ms")
    print(f"the fork's cost: {(suggested - direct) * 1e3:.2f} ms")
    print(f"copying the document (its size's share), p50: {copy * 1e3:.2f} ms")
    print(f"the fork's cost less the copy: {(suggested - direct - copy) * 1e3:.2f} ms (<= 2)")
    print(f"server RSS after warm-up {before:.1f} MB, after {args.rounds} rounds {after:.1f} MB")
    print(f"suggestions still kept: {len(left)}")


if __name__ == "__main__":
    sys.exit(main())
