"""Grants against a real root with real symlinks, a real file id database and a real store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ganymede.config import load_config
from ganymede.errors import ConfigError, GrantDenied, PathError
from ganymede.fileid import FileIdStore
from ganymede.grant import NO_GRANT, Grant, Grants, GrantStore, NotebookGrant, wants_of


@pytest.fixture
def root(tmp_path: Path) -> Path:
    served = tmp_path / "root"
    for folder in ("journal/2026", "journal-private", "reports", "secret"):
        (served / folder).mkdir(parents=True)
    for name in ("journal/x.ipynb", "journal/2026/y.ipynb", "journal-private/p.ipynb"):
        (served / name).write_text("{}")
    for name in ("reports/r.ipynb", "secret/s.ipynb", "self.ipynb"):
        (served / name).write_text("{}")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "o.ipynb").write_text("{}")
    (served / "journal" / "to-secret").symlink_to(served / "secret")
    (served / "journal" / "to-outside").symlink_to(outside)
    (served / "journal" / "to-2026").symlink_to(served / "journal" / "2026")
    (served / "link-to-journal").symlink_to(served / "journal")
    (served / "link-to-outside").symlink_to(outside)
    return served


JOURNAL = Grant(read=("journal",), run=("journal",), edit_self=True)


def test_whole_segments_decide(grants: Grants) -> None:
    assert grants.check_read(JOURNAL, None, "/journal/x.ipynb") == "journal/x.ipynb"
    assert grants.check_read(JOURNAL, None, "journal/2026/y.ipynb") == "journal/2026/y.ipynb"
    assert grants.check_read(JOURNAL, None, "journal") == "journal"
    with pytest.raises(GrantDenied) as denied:
        grants.check_read(JOURNAL, None, "journal-private/p.ipynb")
    assert str(denied.value) == "needs a read grant covering journal-private/p.ipynb"
    assert (denied.value.grant, denied.value.path) == ("read", "journal-private/p.ipynb")
    with pytest.raises(GrantDenied, match="needs a read grant covering the root"):
        grants.check_read(JOURNAL, None, "")


def test_run_needs_a_run_grant(grants: Grants) -> None:
    assert grants.check_run(JOURNAL, "journal/x.ipynb") == "journal/x.ipynb"
    with pytest.raises(GrantDenied) as denied:
        grants.check_run(Grant(), "journal/x.ipynb")
    assert str(denied.value) == "needs a run grant covering journal/x.ipynb"


@pytest.mark.parametrize(
    "target", ["journal/../secret/s.ipynb", "C:/x.ipynb", "~/x", "journal%2Fx.ipynb", "a\\b"]
)
def test_malformed_paths_are_refused_whatever_the_grant(grants: Grants, target: str) -> None:
    with pytest.raises(PathError):
        grants.check_read(Grant(read=("",)), None, target)
    with pytest.raises(PathError):
        grants.check_run(Grant(run=("",)), target)
    assert not grants.may_read(Grant(read=("",)), None, target)


def test_a_leading_slash_names_a_path_under_the_root_not_the_machine(grants: Grants) -> None:
    with pytest.raises(GrantDenied):
        grants.check_read(JOURNAL, None, "/etc/passwd")


def test_a_symlink_in_a_granted_folder_reaches_only_what_its_target_is_granted(
    grants: Grants,
) -> None:
    with pytest.raises(GrantDenied) as denied:
        grants.check_read(JOURNAL, None, "journal/to-secret/s.ipynb")
    assert denied.value.path == "journal/to-secret/s.ipynb"
    with pytest.raises(PathError, match="leaves the root"):
        grants.check_read(Grant(read=("",)), None, "journal/to-outside/o.ipynb")
    assert grants.check_read(JOURNAL, None, "journal/to-2026/y.ipynb") == "journal/to-2026/y.ipynb"
    assert grants.may_read(Grant(read=("secret",)), None, "journal/to-secret/s.ipynb")


def test_a_grant_naming_a_symlink_covers_where_it_leads(grants: Grants) -> None:
    through_link = Grant(read=("link-to-journal",))
    assert grants.may_read(through_link, None, "journal/x.ipynb")
    assert not grants.may_read(through_link, None, "secret/s.ipynb")
    assert grants.resolved(("link-to-outside", "link-to-journal")) == ("journal",)


def test_a_notebook_always_reads_itself(grants: Grants) -> None:
    nothing = NO_GRANT  # what a run gets once its notebook is deleted
    assert grants.check_read(nothing, "self.ipynb", "/self.ipynb") == "self.ipynb"
    assert grants.check_read(nothing, "link-to-journal/x.ipynb", "journal/x.ipynb")
    with pytest.raises(GrantDenied):
        grants.check_read(nothing, "self.ipynb", "reports/r.ipynb")


def test_edit_self_needs_the_grant_and_a_notebook(grants: Grants) -> None:
    assert grants.check_edit_self(Grant(), "/self.ipynb") == "self.ipynb"
    with pytest.raises(GrantDenied, match=r"needs edit_self granted for self\.ipynb"):
        grants.check_edit_self(Grant(edit_self=False), "self.ipynb")
    with pytest.raises(GrantDenied):
        grants.check_edit_self(Grant(), None)


def test_a_run_never_widens_its_callers_grant_even_through_symlinks(grants: Grants) -> None:
    caller = Grant(read=("journal",), run=("journal", "reports"))
    called = Grant(read=("journal/to-secret", "journal/2026"), run=("",))
    narrowed = grants.narrow(caller, called)
    assert narrowed == Grant(read=("journal/2026",), run=("journal", "reports"))
    assert not grants.may_read(narrowed, None, "secret/s.ipynb")
    assert not grants.may_read(narrowed, None, "journal/to-secret/s.ipynb")
    # Taken lexically the link would have survived, and led to secret/.
    assert "journal/to-secret" in caller.intersect(called).read


def test_each_notebook_gets_its_own_grant_over_the_defaults(
    root: Path, tmp_path: Path, file_ids: FileIdStore
) -> None:
    store = GrantStore(tmp_path / "grants.toml")
    defaults = Grant(read=("",), run=(), edit_self=True)
    grants = Grants(root, defaults, store, file_ids)
    file_id = file_ids.index("journal/x.ipynb")
    store.set(file_id, NotebookGrant(run=("reports",)), "journal/x.ipynb")
    assert grants.for_notebook("journal/x.ipynb") == Grant(read=("",), run=("reports",))
    assert grants.for_notebook("reports/r.ipynb") == defaults
    assert grants.for_notebook(None) == defaults
    assert grants.for_notebook("no/such.ipynb") == defaults
    assert grants.for_notebook("../escape.ipynb") == defaults
    (root / "journal" / "x.ipynb").rename(root / "moved.ipynb")
    file_ids.move("journal/x.ipynb", "moved.ipynb")
    assert grants.for_notebook("moved.ipynb").run == ("reports",), "the grant follows a rename"


def test_host_defaults_come_from_the_config_and_bad_paths_there_name_the_file(
    root: Path, file_ids: FileIdStore
) -> None:
    config = load_config(None, root)
    assert Grants.from_config(root, config, file_ids).defaults == Grant()
    (root / "ganymede.toml").write_text('[host]\nread = ["journal/", "journal/x"]\nrun = ["a"]\n')
    config = load_config(None, root)
    defaults = Grants.from_config(root, config, file_ids).defaults
    assert defaults == Grant(read=("journal",), run=("a",))
    (root / "ganymede.toml").write_text('[host]\nrun = ["../elsewhere"]\n')
    with pytest.raises(ConfigError, match=r"ganymede\.toml: \[host\]: '\.\./elsewhere'"):
        Grants.from_config(root, load_config(None, root), file_ids)


def test_wants_are_read_but_grant_nothing(root: Path, grants: Grants) -> None:
    asking = {"metadata": {"ganymede": {"host": {"wants": ["notebooks.run", 3, "read=/"]}}}}
    (root / "asks.ipynb").write_text(json.dumps(asking | {"cells": [], "nbformat": 4}))
    assert wants_of(asking) == ["notebooks.run", "read=/"]
    for odd in ({}, {"metadata": []}, {"metadata": {"ganymede": {"host": {"wants": "all"}}}}, []):
        assert wants_of(odd) == []
    grants.file_ids.index("asks.ipynb")
    assert grants.for_notebook("asks.ipynb") == grants.defaults
    with pytest.raises(GrantDenied):
        grants.check_run(grants.for_notebook("asks.ipynb"), "journal/x.ipynb")
