"""Provenance stamps: new dicts, other keys kept, history capped."""

from __future__ import annotations

import copy

from ganymede.notebook.provenance import (
    HISTORY_LIMIT,
    KERNEL_AUTHOR,
    agent_stamp,
    request_done_stamp,
    run_stamp,
)

T1 = "2026-01-02T03:04:05Z"
T2 = "2026-01-02T03:04:06Z"


def test_run_stamp_records_the_run_and_keeps_other_metadata() -> None:
    metadata = {"kernelspec": {"name": "python3"}, "ganymede": {"host": {"wants": ["read"]}}}
    before = copy.deepcopy(metadata)
    stamped = run_stamp(
        metadata,
        params={"n": 3},
        started=T1,
        ended=T2,
        duration=1.25,
        status="ok",
        kernel="python3",
        error=None,
    )
    assert metadata == before
    assert stamped == {
        "kernelspec": {"name": "python3"},
        "ganymede": {
            "host": {"wants": ["read"]},
            "run": {
                "params": {"n": 3},
                "started": T1,
                "ended": T2,
                "duration": 1.25,
                "status": "ok",
                "kernel": "python3",
            },
        },
    }


def test_run_stamp_with_an_error_replaces_the_previous_run() -> None:
    first = run_stamp(
        {}, params={}, started=T1, ended=T1, duration=0.0, status="ok", kernel="k", error=None
    )
    error = {"ename": "ValueError", "evalue": "bad", "cell": 2}
    second = run_stamp(
        first,
        params={},
        started=T2,
        ended=T2,
        duration=0.5,
        status="error",
        kernel="k",
        error=error,
    )
    assert second["ganymede"]["run"]["status"] == "error"
    assert second["ganymede"]["run"]["error"] == error
    assert second["ganymede"]["run"]["error"] is not error
    assert "error" not in first["ganymede"]["run"]


def test_agent_stamp_add_sets_the_author_without_history() -> None:
    metadata = {"tags": ["x"]}
    stamped = agent_stamp(metadata, by="claude-code", mode="add", at=T1)
    assert metadata == {"tags": ["x"]}
    assert stamped == {
        "tags": ["x"],
        "ganymede": {"agent": {"by": "claude-code", "mode": "add", "at": T1}},
    }


def test_agent_stamp_edit_appends_the_replaced_source_and_keeps_other_sections() -> None:
    added = agent_stamp({"ganymede": {"request": {"done": T1}}}, by="a", mode="add", at=T1)
    edited = agent_stamp(added, by=KERNEL_AUTHOR, mode="edit", at=T2, replaced_source="x = 1")
    assert edited["ganymede"] == {
        "request": {"done": T1},
        "agent": {
            "by": "kernel",
            "mode": "edit",
            "at": T2,
            "history": [{"at": T2, "by": "kernel", "source": "x = 1"}],
        },
    }
    assert "history" not in added["ganymede"]["agent"]
    again = agent_stamp(edited, by="a", mode="edit", at=T2)
    assert again["ganymede"]["agent"]["history"] == edited["ganymede"]["agent"]["history"]


def test_agent_history_keeps_the_newest_entries() -> None:
    metadata: dict = {}
    for n in range(HISTORY_LIMIT + 5):
        metadata = agent_stamp(metadata, by="a", mode="edit", at=T1, replaced_source=f"v{n}")
    history = metadata["ganymede"]["agent"]["history"]
    assert len(history) == HISTORY_LIMIT
    assert history[0]["source"] == "v5"
    assert history[-1]["source"] == f"v{HISTORY_LIMIT + 4}"


def test_a_malformed_ganymede_section_is_replaced() -> None:
    stamped = request_done_stamp({"ganymede": "junk"}, T1)
    assert stamped == {"ganymede": {"request": {"done": T1}}}


def test_request_done_stamp_does_not_mutate() -> None:
    metadata = {"ganymede": {"agent": {"by": "a", "mode": "add", "at": T1}}}
    stamped = request_done_stamp(metadata, T2)
    assert "request" not in metadata["ganymede"]
    assert stamped["ganymede"]["request"] == {"done": T2}
    assert stamped["ganymede"]["agent"] == metadata["ganymede"]["agent"]
