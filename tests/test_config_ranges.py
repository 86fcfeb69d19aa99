"""ganymede.toml: numbers out of their range are refused, naming the file, section and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from ganymede.config import load_config
from ganymede.errors import ConfigError


def config_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ganymede.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[serve]\nsave_delay = 0\n", "[serve] save_delay must be more than 0, not 0.0"),
        ("[serve]\nsave_delay = -1.5\n", "[serve] save_delay must be more than 0, not -1.5"),
        ("[serve]\nsettle = 0\n", "[serve] settle must be more than 0"),
        ("[serve]\nsettle_max = -1\n", "[serve] settle_max must be more than 0"),
        (
            "[serve]\nsettle = 3\nsettle_max = 2\n",
            "[serve] settle (3.0) must not exceed settle_max",
        ),
        ("[serve]\nsettle = 6\n", "settle (6.0) must not exceed settle_max (5.0)"),
        ("[serve]\nport = -1\n", "[serve] port must be at least 0, not -1"),
        ("[serve]\nport = 65536\n", "[serve] port must be at most 65535, not 65536"),
        (
            "[serve]\nclient_queue_messages = 0\n",
            "[serve] client_queue_messages must be at least 1",
        ),
        ("[serve]\nmax_body_size = 0\n", "[serve] max_body_size must be at least 1, not 0"),
        ("[serve]\nping_interval = -1\n", "[serve] ping_interval must be at least 0"),
        ("[agent]\npresence_idle = 0\n", "[agent] presence_idle must be more than 0, not 0"),
        ("[serve]\nping_timeout = 0\n", "[serve] ping_timeout must be more than 0"),
        ("[serve]\nmax_rooms_mb = -1\n", "[serve] max_rooms_mb must be at least 0, not -1.0"),
        ("[serve]\npack_idle_after = -1\n", "[serve] pack_idle_after must be at least 0"),
        (
            "[serve]\nping_interval = 30\nping_timeout = 10\n",
            "ping_timeout (10.0) must not be shorter than ping_interval (30.0)",
        ),
        ("[execute]\ntimeout = 0\n", "[execute] timeout must be more than 0, not 0.0"),
        ("[execute]\nstartup_timeout = -5\n", "[execute] startup_timeout must be more than 0"),
        ("[agent]\nsettle = -0.1\n", "[agent] settle must be at least 0, not -0.1"),
        ("[history]\nmax_age_days = 0\n", "[history] max_age_days must be more than 0"),
        ("[history]\nmax_mb_per_document = -1\n", "[history] max_mb_per_document must be more"),
    ],
)
def test_a_value_out_of_range_names_the_file_and_the_key(
    tmp_path: Path, text: str, message: str
) -> None:
    path = config_file(tmp_path, text)
    with pytest.raises(ConfigError) as raised:
        load_config(path, tmp_path)
    assert str(raised.value).startswith(f"{path}: ")
    assert message in str(raised.value)


@pytest.mark.parametrize(
    "text",
    [
        "[serve]\nport = 0\n",  # the OS picks the port
        "[serve]\nport = 65535\n",
        "[serve]\nsettle = 5\nsettle_max = 5\n",
        "[serve]\nping_interval = 0\nping_timeout = 0.5\n",  # no pings: the timeout is free
        "[serve]\nclient_queue_messages = 1\nmax_body_size = 1\n",
        "[serve]\nsave_delay = 0.01\n",
        "[execute]\ntimeout = 0.5\n",
        "[agent]\nsettle = 0\n",
    ],
)
def test_values_at_the_edge_of_their_range_are_accepted(tmp_path: Path, text: str) -> None:
    path = config_file(tmp_path, text)
    assert load_config(path, tmp_path).source == path


def test_a_timeout_left_unset_is_not_range_checked(tmp_path: Path) -> None:
    path = config_file(tmp_path, "[execute]\nkernel = 'python3'\n")
    assert load_config(path, tmp_path).execute.timeout is None
