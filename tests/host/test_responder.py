"""The responder in process over a real root: real core, real grants, real file ids and store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ganymede.core import Notebooks
from ganymede.errors import HostCallError
from ganymede.fileid import FileIdStore
from ganymede.grant import NO_GRANT, Grant, Grants, GrantStore, NotebookGrant
from ganymede.host.api import PROTOCOL, Caller
from ganymede.host.responder import HostResponder
from ganymede.notebook.hashing import source_hash
from tests.core.disk import code, display, markdown, write_notebook

RESULT_MIME = "application/vnd.ganymede.result+json"
READS = ["notebooks.list", "notebooks.read", "notebooks.search", "notebooks.results"]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    served = tmp_path / "root"
    write_notebook(
        served / "journal" / "2026-11-09-fremont.ipynb",
        markdown("# Fremont bridge", cell_id="title"),
        code(
            "drop = -0.19",
            display({RESULT_MIME: {"name": "weekday_drop", "value": -0.19}}),
            cell_id="calc",
        ),
    )
    write_notebook(served / "journal" / "2026-11-11-quakes.ipynb", code("quakes = 3"))
    write_notebook(served / "journal-private" / "diary.ipynb", code("weekday drop, privately"))
    write_notebook(served / "index.ipynb", code("# journal index", cell_id="toc"))
    (served / "journal" / "to-private").symlink_to(served / "journal-private")
    return served


@pytest.fixture
def responder(root: Path, grants: Grants) -> HostResponder:
    return HostResponder(Notebooks(root), grants)


def caller(notebook: str | None = "index.ipynb") -> Caller:
    """A served notebook's kernel: the responder reads its grant from the store at each call."""
    return Caller("k1", notebook, Grant())


@pytest.fixture
def narrowed(grant_store: GrantStore, file_ids: FileIdStore) -> Caller:
    """index.ipynb's kernel once its own grant reads only journal/."""
    grant_store.set(file_ids.index("index.ipynb"), NotebookGrant(read=("journal",)), "index.ipynb")
    return caller()


@pytest.fixture
def unreading(grant_store: GrantStore, file_ids: FileIdStore) -> Caller:
    """index.ipynb's kernel once its own grant reads nothing, runs nothing, edits nothing."""
    nothing = NotebookGrant(read=(), run=(), edit_self=False)
    grant_store.set(file_ids.index("index.ipynb"), nothing, "index.ipynb")
    return caller()


async def refusal(responder: HostResponder, who: Caller, method: str, **params: Any) -> str:
    with pytest.raises(HostCallError) as failed:
        await responder.call(who, method, params)
    return str(failed.value)


async def test_hello_names_the_notebook_and_what_it_may_call(responder: HostResponder) -> None:
    hello = await responder.call(caller(), "hello", {})
    assert hello["protocol"] == PROTOCOL == 1
    assert hello["notebook"] == "index.ipynb"
    assert hello["server"]
    # no runner and no rooms handed in: no notebooks.run, no self.*
    assert hello["methods"] == ["hello", *READS]


async def test_hello_without_reads_keeps_reading_itself(
    responder: HostResponder, unreading: Caller
) -> None:
    own = await responder.call(unreading, "hello", {})
    assert own["methods"] == ["hello", "notebooks.read", "notebooks.results"]
    # a run whose notebook was deleted: no grant at all, and no notebook to read
    orphan = await responder.call(Caller("k2", None, NO_GRANT, depth=1), "hello", {})
    assert orphan == {**orphan, "notebook": None, "methods": ["hello"]}


async def test_list_reads_a_directory(responder: HostResponder) -> None:
    listed = await responder.call(caller(), "notebooks.list", {"dir": "journal"})
    assert [entry["path"] for entry in listed] == [
        "journal/to-private",
        "journal/2026-11-09-fremont.ipynb",
        "journal/2026-11-11-quakes.ipynb",
    ]
    assert listed[1]["title"] == "Fremont bridge"


async def test_a_narrow_grant_hides_what_a_symlink_leads_to(
    responder: HostResponder, narrowed: Caller
) -> None:
    listed = await responder.call(narrowed, "notebooks.list", {"dir": "journal"})
    assert "journal/to-private" not in [entry["path"] for entry in listed]
    found = await responder.call(
        narrowed, "notebooks.search", {"query": "weekday drop", "dir": "journal"}
    )
    assert found == {"hits": [], "total": 0, "truncated": False}
    other = caller("journal/2026-11-11-quakes.ipynb")  # the defaults: the whole root
    everywhere = await responder.call(other, "notebooks.search", {"query": "weekday drop"})
    # the root's grant reaches the diary (the walk visits the linked folder once)
    assert [hit["path"].endswith("/diary.ipynb") for hit in everywhere["hits"]] == [True]


async def test_read_returns_the_notebook_and_its_hashes(responder: HostResponder) -> None:
    read = await responder.call(
        caller(), "notebooks.read", {"path": "journal/2026-11-09-fremont.ipynb"}
    )
    assert read["notebook"]["cells"][1]["source"] == "drop = -0.19"
    assert read["hashes"] == {
        "title": source_hash("# Fremont bridge"),
        "calc": source_hash("drop = -0.19"),
    }


async def test_results_are_the_named_results(responder: HostResponder) -> None:
    results = await responder.call(
        caller(), "notebooks.results", {"path": "/journal/2026-11-09-fremont.ipynb"}
    )
    assert results == {"weekday_drop": -0.19}


async def test_search_finds_cells_as_data(responder: HostResponder) -> None:
    found = await responder.call(
        caller(), "notebooks.search", {"query": "quakes", "dir": "journal", "limit": 5}
    )
    assert found["total"] == 1
    [hit] = found["hits"]
    assert (hit["path"], hit["index"]) == ("journal/2026-11-11-quakes.ipynb", 0)
    assert hit["in"] == "source"


async def test_denials_name_the_grant_that_would_allow_the_call(
    responder: HostResponder, narrowed: Caller
) -> None:
    who = narrowed
    assert await refusal(responder, who, "notebooks.read", path="journal-private/diary.ipynb") == (
        "denied: notebooks.read needs a read grant covering journal-private/diary.ipynb"
    )
    assert await refusal(responder, who, "notebooks.list") == (
        "denied: notebooks.list needs a read grant covering the root"
    )
    assert await refusal(responder, who, "notebooks.results", path="journal/to-private") == (
        "denied: notebooks.results needs a read grant covering journal/to-private"
    )


async def test_a_notebook_always_reads_itself(responder: HostResponder, unreading: Caller) -> None:
    read = await responder.call(unreading, "notebooks.read", {"path": "index.ipynb"})
    assert list(read["hashes"]) == ["toc"]


async def test_a_stored_grant_replaces_the_defaults(
    responder: HostResponder, grants: Grants, grant_store: GrantStore, file_ids: FileIdStore
) -> None:
    who = caller()
    fremont = {"path": "journal/2026-11-09-fremont.ipynb"}
    assert (
        await responder.call(who, "notebooks.results", {"path": "journal-private/diary.ipynb"})
        == {}
    )
    # set while the kernel runs: its next call has it
    grant_store.set(file_ids.index("index.ipynb"), NotebookGrant(read=("journal",)), "index.ipynb")
    assert await refusal(responder, who, "notebooks.read", path="journal-private/diary.ipynb") == (
        "denied: notebooks.read needs a read grant covering journal-private/diary.ipynb"
    )
    assert await responder.call(who, "notebooks.results", fremont) == {"weekday_drop": -0.19}


async def test_paths_out_of_the_root_are_denied(responder: HostResponder) -> None:
    message = await refusal(responder, caller(), "notebooks.read", path="../secret.ipynb")
    assert message.startswith("denied: notebooks.read: '../secret.ipynb': '..' not allowed")


async def test_unknown_methods_are_unavailable(responder: HostResponder) -> None:
    assert await refusal(responder, caller(), "secrets.get", name="x") == (
        "unavailable: secrets.get: no such method on this server"
    )
    assert await refusal(responder, caller(), "self.add", source="x") == (
        "unavailable: self.add: no such method on this server"
    )
    assert await refusal(responder, caller(), "notebooks.run", path="index.ipynb") == (
        "unavailable: notebooks.run: no such method on this server"
    )


@pytest.mark.parametrize(
    ("method", "params", "message"),
    [
        ("notebooks.read", {}, "path is required"),
        ("notebooks.read", {"path": 3}, "path must be a string, not a number"),
        ("notebooks.read", {"path": "x.ipynb", "mode": 1}, "unknown param 'mode' (takes path)"),
        ("notebooks.list", {"dir": "nowhere"}, "nowhere: no such file or directory"),
        ("notebooks.read", {"path": "missing.ipynb"}, "missing.ipynb: no such file or directory"),
        ("notebooks.search", dict(query="x", limit="9"), "limit must be an integer, not a string"),
        ("notebooks.search", {"query": "x", "limit": 0}, "limit must be between 1 and 500, not 0"),
        ("notebooks.list", {"dir": False}, "dir must be a string, not a boolean"),
        ("hello", {"x": 1}, "unknown param 'x' (takes no params)"),
    ],
)  # fmt: skip
async def test_bad_params_fail_clearly(
    responder: HostResponder, method: str, params: dict[str, Any], message: str
) -> None:
    assert await refusal(responder, caller(), method, **params) == f"failed: {method}: {message}"


async def test_params_that_are_not_an_object_fail(responder: HostResponder) -> None:
    with pytest.raises(HostCallError) as failed:
        await responder.call(caller(), "notebooks.list", ["journal"])  # type: ignore[arg-type]
    assert (failed.value.code, failed.value.message) == (
        "failed",
        "notebooks.list: params must be an object, not list",
    )


async def test_null_optional_params_count_as_absent(responder: HostResponder) -> None:
    listed = await responder.call(caller(), "notebooks.list", {"dir": None})
    assert [entry["path"] for entry in listed][:2] == ["journal", "journal-private"]


async def test_every_answer_is_told_with_its_method_and_outcome(
    root: Path, grants: Grants, unreading: Caller
) -> None:
    """A method the server lacks is told as ``other``: a kernel cannot make up new names."""
    heard: list[tuple[str, str]] = []
    responder = HostResponder(Notebooks(root), grants, on_answer=lambda *told: heard.append(told))
    await responder.call(caller(None), "notebooks.list", {})
    await refusal(responder, unreading, "notebooks.read", path="journal/2026-11-11-quakes.ipynb")
    await refusal(responder, caller(None), "notebooks.made_up")
    await refusal(responder, caller(None), "notebooks.read", path="nowhere.ipynb")
    assert heard == [
        ("notebooks.list", "ok"),
        ("notebooks.read", "denied"),
        ("other", "unavailable"),
        ("notebooks.read", "failed"),
    ]
