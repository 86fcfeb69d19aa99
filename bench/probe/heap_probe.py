"""A jupyter_server extension the classroom bench loads into both servers: their live heap,
counted the same way inside each.

A server's resident set says little about what N clients cost it: memory its allocator held
free when they joined serves them without growing it, and how much was free depends on what the
server did before (reading the notebook, say). So the bench asks each server itself. ``POST
/bench/heap`` starts tracemalloc; ``GET /bench/heap`` answers the bytes that Python allocations
made since still hold, after a full collection. Both servers keep their Y documents' Rust heap
per room, not per client, so what a client costs is what tracemalloc counts. ``DELETE
/bench/heap`` stops tracing, giving its own memory back.

The bench puts this directory on both servers' ``PYTHONPATH`` and enables the extension as any
is enabled, by a ``jupyter_server_config.d/heap_probe.json`` in their config dir.
"""

from __future__ import annotations

import gc
import json
import tracemalloc
from typing import Any

from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web


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
        self.finish(json.dumps({"traced": traced}))

    @web.authenticated
    def delete(self) -> None:
        tracemalloc.stop()
        self.set_status(204)


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "heap_probe"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    route = url_path_join(serverapp.web_app.settings["base_url"], "bench", "heap")
    serverapp.web_app.add_handlers(".*$", [(route, HeapHandler)])
