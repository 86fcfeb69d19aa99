"""What a cell's ``execute_reply`` says beyond ok or error: whether the cell ended the run.

papermill treats ``sys.exit(0)``, ``sys.exit()`` and ``raise SystemExit`` in a cell as a clean
stop: the run ends there, later cells unrun, and succeeds. IPython reports them as an error
reply whose ``ename`` is ``SystemExit`` and ``evalue`` ``'0'`` or ``''`` (a non-zero code stays an
error). IPython's ``exit()``/``quit()`` instead reply ok with an ``ask_exit`` payload, asking the
front end to close the kernel: a stop too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def clean_stop(reply: Mapping[str, Any]) -> str | None:
    """How the cell asked to end the run cleanly (``SystemExit(0)``, ``exit()``), else None."""
    if reply.get("status") == "error":
        if reply.get("ename") == "SystemExit" and reply.get("evalue") in ("", "0"):
            return f"SystemExit({reply.get('evalue') or ''})"
        return None
    for payload in reply.get("payload") or []:
        if isinstance(payload, Mapping) and payload.get("source") == "ask_exit":
            return "exit()"
    return None
