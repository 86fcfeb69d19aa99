"""ganymede.toml: defaults, typed sections, and a clear error for every unknown or mistyped key."""

from __future__ import annotations

from pathlib import Path

import pytest

from ganymede.config import Config, load_config
from ganymede.errors import ConfigError


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_no_file_gives_the_defaults(tmp_path: Path) -> None:
    config = load_config(None, tmp_path)
    assert config == Config()
    assert config.host.read == [""]
    assert config.serve.save_delay == 1.0
    assert config.agent.wake == "requests"
    assert (config.agent.mode, config.agent.presence_idle) == ("edit", 300.0)
    assert (config.history.max_age_days, config.history.max_mb_per_document) == (30.0, 50.0)


def test_history_bounds_are_read_as_numbers(tmp_path: Path) -> None:
    text = "[history]\nenabled = false\nmax_age_days = 7\nmax_mb_per_document = 0.5\n"
    config = load_config(write(tmp_path / "g.toml", text))
    assert (config.history.max_age_days, config.history.max_mb_per_document) == (7.0, 0.5)
    assert config.history.enabled is False


def test_the_root_file_wins_over_the_jupyter_config_dir(
    tmp_path: Path, isolated_jupyter: Path
) -> None:
    write(isolated_jupyter / "config" / "ganymede.toml", "[execute]\ntimeout = 5\n")
    assert load_config(None, tmp_path).execute.timeout == 5.0
    write(tmp_path / "ganymede.toml", "[execute]\ntimeout = 9\n")
    config = load_config(None, tmp_path)
    assert config.execute.timeout == 9.0
    assert config.source == tmp_path / "ganymede.toml"


def test_values_are_read_and_typed(tmp_path: Path) -> None:
    path = write(
        tmp_path / "g.toml",
        '[serve]\nport = 9999\nsettle = 1\n[host]\nrun = ["jobs"]\nedit_self = false\n'
        '[agent]\nwake = "any"\n[execute]\nkernel = "python3"\n',
    )
    config = load_config(path)
    assert (config.serve.port, config.serve.settle) == (9999, 1.0)
    assert (config.host.run, config.host.edit_self) == (["jobs"], False)
    assert (config.agent.wake, config.execute.kernel) == ("any", "python3")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[serve]\nprot = 1\n", "[serve]: unknown key 'prot'"),
        ("[sever]\nport = 1\n", "unknown section [sever]"),
        ("[serve]\nport = '80'\n", "port must be an integer"),
        ("[serve]\nport = true\n", "port must be an integer"),
        ("[host]\nread = 'x'\n", "read must be a list of strings"),
        ("[agent]\nwake = 'never'\n", "wake must be one of requests, any"),
        ("[agent]\nmode = 'propose'\n", "mode must be one of edit, suggest"),
        ("[execute]\ntimeout = 'soon'\n", "timeout must be a number"),
        ("[history]\nmax_age = 3\n", "[history]: unknown key 'max_age'"),
        ("serve = 1\n", "[serve] must be a table"),
        ("[serve\n", "cannot read config"),
    ],
)
def test_bad_config_names_the_file_and_the_key(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path / "ganymede.toml", text)
    with pytest.raises(ConfigError) as raised:
        load_config(None, tmp_path)
    assert str(path) in str(raised.value)
    assert message in str(raised.value)


def test_an_explicit_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "none.toml")
