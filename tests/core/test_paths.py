"""API paths: normalisation, and resolution that never leaves the root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ganymede.core.paths import join_api_path, normalize_api_path, resolve, to_api_path
from ganymede.errors import PathError


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("", ""),
        ("/", ""),
        ("a.ipynb", "a.ipynb"),
        ("/a/b.ipynb", "a/b.ipynb"),
        ("a/b/", "a/b"),
        ("a//b", "a/b"),
        ("./a/./b.ipynb", "a/b.ipynb"),
        ("/etc/passwd", "etc/passwd"),
        ("journal/été.ipynb", "journal/été.ipynb"),
        ("a..b/c..", "a..b/c.."),
    ],
)
def test_normalize_gives_the_canonical_api_path(given: str, expected: str) -> None:
    assert normalize_api_path(given) == expected


@pytest.mark.parametrize(
    ("given", "reason"),
    [
        ("..", "'..' not allowed"),
        ("../x.ipynb", "'..' not allowed"),
        ("a/../../x", "'..' not allowed"),
        ("a/../b", "'..' not allowed"),
        ("/../x", "'..' not allowed"),
        ("C:/Windows/x.ipynb", "absolute path not allowed"),
        ("c:x", "absolute path not allowed"),
        ("~/x.ipynb", "absolute path not allowed"),
        ("a\\b.ipynb", "backslash not allowed"),
        ("..\\x", "backslash not allowed"),
        ("a\x00b", "NUL character not allowed"),
        ("x" * 256, "a name longer than 255 bytes"),
        ("journal/\udcff.ipynb", "lone surrogate not allowed"),
        ("a/" + "é" * 128 + "/b.ipynb", "a name longer than 255 bytes"),
    ],
)
def test_normalize_refuses_with_a_reason(given: str, reason: str) -> None:
    with pytest.raises(PathError) as caught:
        normalize_api_path(given)
    assert caught.value.reason.startswith(reason)
    assert reason in str(caught.value)


def test_normalize_takes_a_name_of_255_bytes() -> None:
    name = "x" * 249 + ".ipynb"
    assert normalize_api_path(f"a/{name}") == f"a/{name}"


def test_normalize_refuses_what_is_not_a_string() -> None:
    with pytest.raises(PathError, match="must be a string"):
        normalize_api_path(None)  # type: ignore[arg-type]


def test_join_api_path() -> None:
    assert join_api_path("", "a.ipynb") == "a.ipynb"
    assert join_api_path("d/e", "a.ipynb") == "d/e/a.ipynb"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "n.ipynb").write_text("{}")
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.ipynb").write_text("{}")
    return outside


def test_resolve_inside_the_root(root: Path) -> None:
    assert resolve(root, "/sub/n.ipynb/") == (root / "sub" / "n.ipynb").resolve()
    assert resolve(root, "") == root.resolve()
    assert resolve(root, "sub/missing.ipynb") == (root / "sub" / "missing.ipynb").resolve()


def test_resolve_keeps_a_leading_slash_inside_the_root(root: Path) -> None:
    resolved = resolve(root, "/etc/passwd")
    assert resolved == root.resolve() / "etc" / "passwd"


def test_resolve_refuses_a_climb(root: Path) -> None:
    with pytest.raises(PathError, match=r"'\.\.' not allowed"):
        resolve(root, "sub/../../outside/secret.ipynb")


def test_resolve_refuses_a_symlink_to_a_file_outside(root: Path, outside: Path) -> None:
    (root / "link.ipynb").symlink_to(outside / "secret.ipynb")
    with pytest.raises(PathError) as caught:
        resolve(root, "link.ipynb")
    assert caught.value.reason == "leaves the root"
    assert caught.value.path == "link.ipynb"


def test_resolve_refuses_a_path_through_a_symlinked_dir_outside(root: Path, outside: Path) -> None:
    (root / "elsewhere").symlink_to(outside, target_is_directory=True)
    for path in ("elsewhere", "elsewhere/secret.ipynb", "elsewhere/missing.ipynb"):
        with pytest.raises(PathError, match="leaves the root"):
            resolve(root, path)


def test_resolve_follows_a_symlink_that_stays_inside(root: Path) -> None:
    (root / "alias").symlink_to(root / "sub", target_is_directory=True)
    assert resolve(root, "alias/n.ipynb") == (root / "sub" / "n.ipynb").resolve()


def test_resolve_refuses_a_symlink_loop(root: Path) -> None:
    (root / "loop").symlink_to(root / "loop")
    with pytest.raises(PathError, match="cannot be resolved"):
        resolve(root, "loop/x.ipynb")


def test_resolve_under_a_root_reached_through_a_symlink(root: Path, tmp_path: Path) -> None:
    linked_root = tmp_path / "linked-root"
    linked_root.symlink_to(root, target_is_directory=True)
    assert resolve(linked_root, "sub/n.ipynb") == (root / "sub" / "n.ipynb").resolve()


def test_to_api_path(root: Path, outside: Path) -> None:
    assert to_api_path(root, root / "sub" / "n.ipynb") == "sub/n.ipynb"
    assert to_api_path(root, root) == ""
    with pytest.raises(PathError, match="leaves the root"):
        to_api_path(root, outside / "secret.ipynb")


def test_to_api_path_uses_the_real_location(root: Path, outside: Path) -> None:
    (root / "link.ipynb").symlink_to(outside / "secret.ipynb")
    with pytest.raises(PathError, match="leaves the root"):
        to_api_path(root, root / "link.ipynb")
    assert to_api_path(root, Path(os.path.join(root, "sub", "..", "sub", "n.ipynb"))) == (
        "sub/n.ipynb"
    )
