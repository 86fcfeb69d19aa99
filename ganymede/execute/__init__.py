"""The headless runner: notebooks in, executed notebooks and named results out.

``run_notebooks`` is what ``ganymede execute`` and the host API's ``notebooks.run`` call; each
notebook runs on a fresh kernel, with its parameters in ``GANYMEDE_PARAMS``.

The runner (and with it jupyter_client and zmq) is imported on first use, not with the
package, so what runs no kernel (a cached rerun, the run model) never pays for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ganymede.execute.model import RunEvent, RunOutcome, RunRequest, RunStatus

if TYPE_CHECKING:
    from ganymede.execute.runner import (
        NotebookQueue,
        prepare_notebooks,
        run_notebook,
        run_notebooks,
    )

__all__ = [
    "NotebookQueue",
    "RunEvent",
    "RunOutcome",
    "RunRequest",
    "RunStatus",
    "prepare_notebooks",
    "run_notebook",
    "run_notebooks",
]
RUNNER_NAMES = frozenset({"NotebookQueue", "prepare_notebooks", "run_notebook", "run_notebooks"})


def __getattr__(name: str) -> Any:
    if name in RUNNER_NAMES:
        from ganymede.execute import runner

        return getattr(runner, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
