"""The lines ``mcp watch`` and ``mcp changes`` print, from the server's entries."""

from __future__ import annotations

import json

from ganymede.mcp.lines import HOOK_CONTEXT_LIMIT, changes_text, hook_output, watch_line

REQUEST = {
    "path": "journal.ipynb",
    "id": "3f2a",
    "index": 3,
    "cell_type": "markdown",
    "change": ["added", "request"],
    "by": "Thomas",
    "source": "@agent check the 2019 rows\nand the trend",
}


def test_a_request_names_the_notebook_the_cell_who_and_the_call() -> None:
    assert watch_line(REQUEST) == (
        'journal.ipynb: Thomas asked in cell 3f2a (request): "check the 2019 rows"'
        ' → notebook_read(path: "journal.ipynb")'
    )


def test_an_edit_says_what_was_done_and_quotes_the_first_line_cut_short() -> None:
    edit = {**REQUEST, "cell_type": "code", "change": ["edited", "ran"], "source": "x = 1" * 40}
    line = watch_line(edit)
    assert line.startswith('journal.ipynb: Thomas edited and ran cell 3f2a (code): "x = 1')
    assert "…" in line and "\n" not in line


def test_changes_list_each_cell_then_the_changed_line() -> None:
    notebooks = [
        {
            "path": "a.ipynb",
            "mark": "0123456789abcdef",
            "changes": [
                {"id": "c1", "cell_type": "code", "index": 0, "change": ["edited"], "by": "Maya"}
            ],
            "line": "@@changed 1 cell by Maya since your last read: "
            'call notebook_read(since: "0123456789abcdef")',
        }
    ]
    assert changes_text(notebooks).splitlines() == [
        "Changes by others in a.ipynb since your last read:",
        "- cell c1 (code, index 0): edited by Maya",
        notebooks[0]["line"],
    ]


def test_a_hook_answer_names_its_event_and_stays_under_the_limit() -> None:
    answer = json.loads(hook_output("post-tool", "x" * (HOOK_CONTEXT_LIMIT * 2)))
    output = answer["hookSpecificOutput"]
    assert output["hookEventName"] == "PostToolUse"
    assert len(output["additionalContext"]) == HOOK_CONTEXT_LIMIT
    prompt = json.loads(hook_output("user-prompt", "short"))["hookSpecificOutput"]
    assert prompt == {"hookEventName": "UserPromptSubmit", "additionalContext": "short"}
