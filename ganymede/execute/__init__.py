"""The headless runner: notebooks in, executed notebooks and named results out.

``run_notebooks`` is what ``ganymede execute`` and the host API's ``notebooks.run`` call; each
notebook runs on a fresh kernel, with its parameters in ``GANYMEDE_PARAMS``.
"""

from ganymede.execute.model import RunEvent, RunOutcome, RunRequest, RunStatus
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
