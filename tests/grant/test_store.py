"""The grants file: real TOML on disk, atomic replacement, and refusal to touch a broken file."""

from __future__ import annotations

import os
import resource
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from ganymede.errors import ConfigError, UsageError
from ganymede.grant import STORE_NAME, GrantStore, NotebookGrant, StoredGrant, default_store_path

ID = "6f1c0e4e-0000-4000-8000-000000000001"
OTHER = "6f1c0e4e-0000-4000-8000-000000000002"


def test_lives_beside_the_file_id_database() -> None:
    assert default_store_path() == Path(os.environ["JUPYTER_DATA_DIR"]) / STORE_NAME


def test_a_grant_round_trips_through_the_file(tmp_path: Path) -> None:
    path = tmp_path / "data" / STORE_NAME
    store = GrantStore(path)
    assert store.all() == {}
    grant = NotebookGrant(read=("journal",), run=(), edit_self=False)
    store.set(ID, grant, "journal/index.ipynb")
    store.set(OTHER, NotebookGrant(run=("reports",)), "b.ipynb")
    assert GrantStore(path).all() == {
        ID: StoredGrant(grant, "journal/index.ipynb"),
        OTHER: StoredGrant(NotebookGrant(run=("reports",)), "b.ipynb"),
    }
    text = path.read_text()
    assert f'[notebooks.{ID}]\npath = "journal/index.ipynb"\nread = [\n    "journal",\n]' in text
    assert "edit_self = false" in text


def test_an_edit_by_another_process_is_seen(tmp_path: Path) -> None:
    path = tmp_path / STORE_NAME
    server_side = GrantStore(path)
    assert server_side.get(ID) is None
    GrantStore(path).set(ID, NotebookGrant(run=("a",)), "x.ipynb")
    assert server_side.get(ID) == NotebookGrant(run=("a",))
    GrantStore(path).delete(ID)
    assert server_side.get(ID) is None


def test_setting_no_key_or_deleting_forgets_the_notebook(tmp_path: Path) -> None:
    store = GrantStore(tmp_path / STORE_NAME)
    store.set(ID, NotebookGrant(edit_self=True), "x.ipynb")
    store.set(ID, NotebookGrant(), "x.ipynb")
    assert store.get(ID) is None
    store.set(ID, NotebookGrant(edit_self=True), "x.ipynb")
    assert store.delete(ID)
    assert not store.delete(ID)


@pytest.mark.parametrize(
    "text",
    [
        "not = [toml",
        "[elsewhere]\n",
        "notebooks = 3\n",
        '[notebooks.x]\nread = "journal"\n',
        "[notebooks.x]\nwrite = []\n",
        "[notebooks.x]\nedit_self = 1\n",
        '[notebooks.x]\nread = ["../up"]\n',
        "[notebooks.x]\npath = 3\n",
    ],
)
def test_a_broken_file_is_a_clear_error_and_is_never_overwritten(tmp_path: Path, text: str) -> None:
    path = tmp_path / STORE_NAME
    path.write_text(text)
    store = GrantStore(path)
    with pytest.raises(ConfigError, match=STORE_NAME):
        store.all()
    with pytest.raises(ConfigError, match=STORE_NAME):
        store.set(ID, NotebookGrant(run=("a",)), "x.ipynb")
    assert path.read_text() == text


def test_a_failed_write_keeps_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / STORE_NAME
    store = GrantStore(path)
    store.set(ID, NotebookGrant(run=("a",)), "x.ipynb")
    before = path.read_bytes()
    with _file_size_limit(len(before)), pytest.raises(ConfigError, match="cannot write grants"):
        store.set(OTHER, NotebookGrant(run=("b" * 100,)), "y.ipynb")
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == [STORE_NAME]
    assert store.get(OTHER) is None


@contextmanager
def _file_size_limit(size: int) -> Iterator[None]:
    """Writes past ``size`` bytes fail with EFBIG, as a full disk fails them with ENOSPC."""
    previous_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    previous_limit = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, previous_limit[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, previous_limit)
        signal.signal(signal.SIGXFSZ, previous_handler)


def test_bodies_are_checked_key_by_key() -> None:
    assert NotebookGrant.from_json({}, "body") == NotebookGrant()
    parsed = NotebookGrant.from_json({"read": ["/"[1:] + "journal/", "journal/x"]}, "body")
    assert parsed.read == ("journal",)
    for bad, message in [
        ([], "must be an object"),
        ({"write": []}, "unknown key 'write'"),
        ({"run": "a"}, "run must be a list of paths"),
        ({"run": [1]}, "run must be a list of paths"),
        ({"edit_self": "yes"}, "edit_self must be true or false"),
    ]:
        with pytest.raises(UsageError, match=message):
            NotebookGrant.from_json(bad, "body")
    with pytest.raises(UsageError, match="body: read: '/etc': absolute path not allowed"):
        NotebookGrant.from_json({"read": ["/etc"]}, "body")
