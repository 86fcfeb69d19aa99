"""Golden files: compare a whole text with its stored expectation, or rewrite it on request.

Run with ``GANYMEDE_REGEN_GOLDEN=1`` to rewrite the expectations from the code, then read the
diff by eye before committing: a regenerated golden only proves what the code does now.
"""

from __future__ import annotations

import os
from pathlib import Path

GOLDEN_NOTEBOOK = Path(__file__).parent.parent / "golden" / "notebook"
REGEN_VARIABLE = "GANYMEDE_REGEN_GOLDEN"


def assert_golden(actual: str, expected_path: Path) -> None:
    """``actual`` must equal the file's whole text (rewritten instead when regenerating)."""
    if os.environ.get(REGEN_VARIABLE) == "1":
        expected_path.write_text(actual, encoding="utf-8")
        return
    expected = expected_path.read_text(encoding="utf-8")
    assert actual == expected, f"{expected_path.name} differs; regenerate with {REGEN_VARIABLE}=1"
