"""A jupyter_server extension the classroom bench loads into both servers: their live heap,
counted the same way inside each.

A server's resident set says little about what N clients cost it: memory its allocator held
free when they joined serves them without growing it, and how much was free depends on what the
server did before (reading the notebook, say). So the bench asks each server itself. ``POST
/bench/heap`` starts tracemalloc; ``GET /bench/heap`` answers the bytes Python allocations hold
that were made since (after a full collection) and the resident set after ``malloc_trim``. Both
servers keep their Y documents' Rust heap per room, not per client, so what a client costs is
what tracemalloc counts. ``DELETE /bench/heap`` stops tracing, giving its own memory back.

    PYTHONPATH=bench/probe jupyter server --ServerApp.jpserver_extensions='{"heap_probe": true}'
"""

from __future__ import annotations

import ctypes
import gc
import json
import tracemalloc
from pathlib import Path
from typing import Any

from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web


def resident_bytes() -> int:
    status = Path("/proc/self/status").read_text()
    (line,) = [line for line in status.splitlines() if line.startswith("VmRSS:")]
    return int(line.split()[1]) * 1024


class HeapHandler(APIHandler):
    @web.authenticated
    def post(self) -> None:
        gc.collect()
        tracemalloc.start()
        self.set_status(204)

    @web.authenticated
    def get(self) -> None:
        gc.collect()
        traced = tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else 0
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        self.finish(json.dumps({"traced": traced, "resident": resident_bytes()}))

    @web.authenticated
    def delete(self) -> None:
        tracemalloc.stop()
        self.set_status(204)


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "heap_probe"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    route = url_path_join(serverapp.web_app.settings["base_url"], "bench", "heap")
    serverapp.web_app.add_handlers(".*$", [(route, HeapHandler)])
